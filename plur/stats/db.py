"""Recall and injection events in SQLite (``<home>/stats.db``, WAL mode).

Usage statistics never touch engram YAML files: recall stays read-only on the
store, so a person's git history of their memory shows only their own edits.

The schema and its migrations: :mod:`plur.stats.schema`; what a forget erases: :mod:`plur.stats.erase`.

"Recalled" means returned above the relevance floor (:mod:`plur.index.floor`): only those hits can
enter a memory block. Hits returned below it, and recalls recorded before the floor was (schema 1,
``above_floor`` NULL), count as "returned below the floor".

Queries pass the secret screen (:mod:`plur.screen`) before they are written: a key typed in a prompt is stored
as ``[redacted <kind>]`` and counted in ``screened``. An injection's message is the query of the recall that built
its block (:mod:`plur.stats.injections`): never written twice.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from contextlib import suppress
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..errors import StoreError
from ..store.sqlite_files import CheckpointBehind, transaction
from ..screen.pieces import join
from ..screen.text import screen
from . import erase, injections
from .schema import SCHEMA, SCHEMA_VERSION, migrate

log = logging.getLogger("plur.stats.db")

def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class _HitLike(Protocol):
    rank: int
    score: float
    bm25_rank: int | None
    dense_rank: int | None
    below_floor: str

    @property
    def engram(self) -> Any: ...


def _percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in [0, 100]) of an ascending list; ``None`` when empty."""
    if not sorted_values:
        return None
    idx = max(0, min(len(sorted_values) - 1, int(round(q / 100.0 * (len(sorted_values) - 1)))))
    return float(sorted_values[idx])


class StatsDB:
    """Append-only event log of recalls and prompt injections.

    Thread-safe: one connection guarded by a lock (SQLite serialises writers
    anyway); several processes may share the file (WAL, 5 s busy timeout).

    Args:
        path: the SQLite file, created with its parent folder if missing.
        read_only: only read, neither creating the file nor changing its mode (``plur doctor``).

    Raises:
        StoreError: the file exists but is not a SQLite database.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        from ..store.sqlite_files import connect

        self.path = Path(path)
        self._lock = threading.Lock()
        #: agent -> (row id, query as kept) of its latest recall, in this process only (a key split over two queries)
        self._last_query: dict[str, tuple[int, str]] = {}
        #: (agent, sha256 of the query as asked) -> row id of its latest recall, in this process only: the recall an
        #: injection of that message names (:meth:`record_injection`); a digest, never the text
        self._recalled: dict[tuple[str, bytes], int] = {}
        try:
            self._db, self.writable = connect(self.path, timeout_s=5.0, read_only=read_only)
            if self.writable:
                try:
                    self._db.execute("PRAGMA foreign_keys=ON")
                    self._db.executescript(SCHEMA)
                    migrate(self._db)
                    self._db.execute("INSERT OR IGNORE INTO meta VALUES('schema_version', ?)",
                                     (str(SCHEMA_VERSION),))
                except sqlite3.OperationalError as exc:  # full disk, I/O error: keep reading
                    log.warning("%s cannot be written (%s); opened read-only", self.path, exc)
                    self._db.close()
                    self._db, self.writable = connect(self.path, read_only=True)
            if not self.writable:  # an empty in-memory stand-in needs the tables; a read-only file has them
                with suppress(sqlite3.Error):
                    self._db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a usable stats database ({exc}); "
                             "move it aside and plur will start a fresh one") from None
        self._db.row_factory = sqlite3.Row
        self._checkpoints = CheckpointBehind(self.path)  # not in a recall's commit (issue 49)
        if self.writable:
            with suppress(sqlite3.Error):
                self._checkpoints.attach(self._db)
            self._apply_pending_forgets()

    # -- forgets that could not be written (a full disk) ------------------------------------
    @property
    def pending_path(self) -> Path:
        """``stats.db.forget-pending``: ids whose rows are to be erased once stats.db can be written."""
        return self.path.with_name(self.path.name + ".forget-pending")

    def note_pending_forget(self, engram_id: str) -> bool:
        """Remember to erase ``engram_id``'s rows at the next writable open (a few bytes: it fits where
        stats.db's journal does not). Returns whether the note was written."""
        import os

        try:
            fd = os.open(self.pending_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, engram_id.encode("ascii") + b"\n")
            finally:
                os.close(fd)
            return True
        except (OSError, UnicodeEncodeError):
            return False

    def _apply_pending_forgets(self) -> None:
        try:
            ids = sorted(set(self.pending_path.read_text(encoding="ascii").split()))
        except (OSError, UnicodeDecodeError):
            return
        try:
            for engram_id in ids:
                self.forget_engram(engram_id)
        except StoreError as exc:
            log.warning("pending forgets in %s not applied yet: %s", self.pending_path, exc)
            return
        with suppress(OSError):
            self.pending_path.unlink()

    # -- writes ---------------------------------------------------------------------------
    def record_recall(self, *, agent: str | None, scope: str | None, query: str, mode: str,
                      latency_ms: float, hits: Sequence[_HitLike], ts: float | None = None) -> int:
        """Log one recall and its ranked hits (each with whether it cleared the relevance floor); returns the recall id."""
        if not self.writable:
            return 0
        asked = _digest(query)
        earlier = self._last_query.get(agent or "")   # a key pasted in two pieces over two queries: both are cut
        joined = join(earlier[1], query) if earlier else None
        shown = screen(joined.text if joined else query)
        kinds, query = ((joined.kind,) if joined and joined.new else ()) + shown.kinds, shown.text
        rewrite = joined is not None and earlier is not None and joined.before != earlier[1]
        try:
            with self._lock, transaction(self._db):
                self._insert_screened(kinds, "recall", ts)
                if rewrite:
                    self._db.execute("UPDATE recalls SET query=? WHERE id=?", (joined.before, earlier[0]))
                cur = self._db.execute(
                    "INSERT INTO recalls(ts, agent, scope, query, mode, latency_ms, n_hits) VALUES(?,?,?,?,?,?,?)",
                    (ts or time.time(), agent, scope, query, mode, float(latency_ms), len(hits)))
                rid = int(cur.lastrowid or 0)
                self._db.executemany(
                    "INSERT INTO recall_hits VALUES(?,?,?,?,?,?,?)",
                    [(rid, h.engram.id, h.rank, h.score, h.bm25_rank, h.dense_rank,
                      0 if getattr(h, "below_floor", "") else 1) for h in hits])
            with self._lock:
                self._checkpoints.wrote()
        except sqlite3.Error as exc:  # a full disk must not fail the recall itself
            log.warning("recall not recorded in %s (%s)", self.path, exc)
            return 0
        self._last_query[agent or ""] = (rid, query)
        self._recalled.pop((agent or "", asked), None)
        self._recalled[(agent or "", asked)] = rid
        for kept in (self._last_query, self._recalled):
            while len(kept) > 256:
                kept.pop(next(iter(kept)))
        if rewrite:   # secure_delete zeroed the old text in its page; the WAL's copy of that page goes too
            self._checkpoints.wait()
            with self._lock, suppress(sqlite3.Error):
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return rid

    def _insert_screened(self, kinds: Sequence[str], door: str, ts: float | None) -> None:
        if kinds:
            self._db.executemany("INSERT INTO screened(ts, kind, door) VALUES(?,?,?)",
                                 [(ts or time.time(), k, door) for k in kinds])

    def record_screened(self, kinds: Sequence[str], door: str, ts: float | None = None) -> None:
        """Count secrets the screen redacted (one row per kind found; the text itself is never passed).

        Args:
            kinds: :attr:`plur.screen.text.Screened.kinds`. door: where they were met (``capture``, ``recall``, ...).
        """
        if not self.writable or not kinds:
            return
        try:
            with self._lock, self._db:
                self._insert_screened(kinds, door, ts)
        except sqlite3.Error as exc:
            log.warning("screened secrets not counted in %s (%s)", self.path, exc)

    def screened_counts(self) -> dict[str, int]:
        """Secrets redacted so far, by kind (``{}`` when none)."""
        return {r["kind"]: r["n"] for r in self._rows(
            "SELECT kind, COUNT(*) AS n FROM screened GROUP BY kind ORDER BY n DESC, kind")}

    def screened_by_door(self) -> dict[str, int]:
        """Secrets redacted so far, by door (``capture``, ``recall``, ``import``...; ``{}`` when none)."""
        return {r["door"]: r["n"] for r in self._rows(
            "SELECT COALESCE(door, '') AS door, COUNT(*) AS n FROM screened GROUP BY door ORDER BY n DESC, door")}

    def record_injection(self, *, agent: str, engram_ids: Sequence[str], block_hash: str = "",
                         tokens: int = 0, message: str | None = None, ts: float | None = None) -> int:
        """Log that a memory block with ``engram_ids`` (in block order) reached ``agent``'s prompt.

        Args:
            message: the message the block was recalled for (what the user typed), as the door passed it to
                the recall: the row names ``agent``'s latest recall of exactly that text in this process, whose
                query (screened, kept in the recall log) is the injection's message; no text is written here.
        """
        if not self.writable:
            return 0
        recall_id = self._recalled.get((agent, _digest(message))) if message else None
        try:
            with self._lock, transaction(self._db):
                cur = self._db.execute(
                    "INSERT INTO injections(ts, agent, block_hash, tokens, recall_id) VALUES(?,?,?,?,?)",
                    (ts or time.time(), agent, block_hash, int(tokens), recall_id))
                iid = int(cur.lastrowid or 0)
                self._db.executemany("INSERT INTO injection_engrams VALUES(?,?,?)",
                                     [(iid, e, i + 1) for i, e in enumerate(engram_ids)])
            with self._lock:
                self._checkpoints.wrote()
        except sqlite3.Error as exc:
            log.warning("injection not recorded in %s (%s)", self.path, exc)
            return 0
        return iid

    def record_feedback(self, *, engram_id: str, useful: bool, agent: str | None = None,
                        query: str | None = None, ts: float | None = None) -> int:
        """Log that ``engram_id`` was (``useful=True``) or was not useful to ``agent`` for ``query``."""
        if not self.writable:
            return 0
        shown = screen(query) if query else None
        query = shown.text if shown else query
        with self._lock, self._db:
            if shown:
                self._insert_screened(shown.kinds, "feedback", ts)
            cur = self._db.execute("INSERT INTO feedback(ts, engram_id, useful, agent, query) VALUES(?,?,?,?,?)",
                                   (ts or time.time(), engram_id, 1 if useful else 0, agent, query))
        return int(cur.lastrowid or 0)

    def feedback_counts(self, engram_id: str) -> dict[str, int]:
        """``{"useful": n, "not_useful": m}`` feedback events recorded for ``engram_id``."""
        with self._lock:
            row = self._db.execute("SELECT COALESCE(SUM(useful), 0), COUNT(*) FROM feedback WHERE engram_id=?",
                                   (engram_id,)).fetchone()
        return {"useful": int(row[0]), "not_useful": int(row[1]) - int(row[0])}

    def uses(self, engram_ids: Sequence[str]) -> dict[str, int]:
        """``engram id -> recalls that returned it above the relevance floor + useful feedback``, for the
        given ids that have any (what "most used" means in a block's overview, :mod:`plur.prompt.overview`).
        Reads only those ids' rows (indexed by engram id), in chunks of 500."""
        ids = list(dict.fromkeys(engram_ids))
        out: dict[str, int] = {}
        with self._lock:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for sql in (f"SELECT engram_id, SUM(COALESCE(above_floor, 0)) FROM recall_hits "
                            f"WHERE engram_id IN ({marks}) GROUP BY engram_id",
                            f"SELECT engram_id, SUM(useful) FROM feedback WHERE engram_id IN ({marks}) GROUP BY engram_id"):
                    for eid, n in self._db.execute(sql, chunk):
                        if n:
                            out[eid] = out.get(eid, 0) + int(n)
        return out

    def engram_ids(self) -> set[str]:
        """Every engram id some event row names (feedback, recall hits, injections)."""
        with self._lock:
            return {r[0] for r in self._db.execute(
                "SELECT engram_id FROM feedback UNION SELECT engram_id FROM recall_hits "
                "UNION SELECT engram_id FROM injection_engrams")}

    def forget_engram(self, engram_id: str, text: str | None = None) -> None:
        """:meth:`forget_engrams` of one engram (``text``: its statement)."""
        self.forget_engrams([engram_id], [text] if text else ())

    def forget_engrams(self, engram_ids: list[str], texts: Sequence[str] = ()) -> None:
        """Drop every event row naming one of ``engram_ids`` (a person forgets engrams), in one transaction.

        What goes and what stays: :func:`plur.stats.erase.erase` (``texts``, the forgotten statements, also
        blank the recall queries and injection messages that are one of them: a forgotten conversation's
        turns). Deleted and overwritten bytes are zeroed (``secure_delete``) and the WAL is truncated and the
        file VACUUMed, so no copy of the text remains in the file, its journal or free pages.

        Raises:
            StoreError: the home is read-only, or the transaction failed (nothing erased; forget again).
        """
        named = engram_ids[0] if len(engram_ids) == 1 else f"{len(engram_ids)} engrams"
        if not self.writable:
            raise erase.refuse(named, self.path)
        from ..store.sqlite_files import scrub

        self._checkpoints.wait()
        with self._lock:
            try:
                erase.erase(self._db, engram_ids, texts)
            except sqlite3.Error as exc:
                raise erase.refuse(named, self.path, exc) from None
            scrub(self._db)

    # -- reads ----------------------------------------------------------------------------
    def _rows(self, sql: str, args: Iterable[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._db.execute(sql, tuple(args)).fetchall()]

    def engram_counts(self) -> dict[str, dict[str, Any]]:
        """``engram id -> {recalls, below_floor, injections, useful, not_useful, last_recalled}`` in three queries.

        ``recalls``: times returned above the relevance floor (what "recalled" means); ``below_floor``:
        times returned below it (or before the floor was recorded); ``injections``: memory blocks that
        held it; ``useful`` / ``not_useful``: feedback events; ``last_recalled``: epoch s of the last
        recall above the floor, or None.
        """
        out: dict[str, dict[str, Any]] = {}

        def entry(eid: str) -> dict[str, Any]:
            return out.setdefault(eid, {"recalls": 0, "below_floor": 0, "injections": 0, "useful": 0,
                                        "not_useful": 0, "last_recalled": None})

        for r in self._rows("SELECT h.engram_id AS id, SUM(COALESCE(h.above_floor, 0)) AS n, COUNT(*) AS total, "
                            "MAX(CASE WHEN h.above_floor = 1 THEN r.ts END) AS last FROM recall_hits h "
                            "JOIN recalls r ON r.id = h.recall_id GROUP BY h.engram_id"):
            e = entry(r["id"])
            e["recalls"], e["below_floor"], e["last_recalled"] = int(r["n"]), int(r["total"] - r["n"]), r["last"]
        for r in self._rows("SELECT engram_id AS id, COUNT(*) AS n FROM injection_engrams GROUP BY engram_id"):
            entry(r["id"])["injections"] = r["n"]
        for r in self._rows("SELECT engram_id AS id, SUM(useful) AS u, COUNT(*) AS n FROM feedback GROUP BY engram_id"):
            e = entry(r["id"])
            e["useful"], e["not_useful"] = int(r["u"]), int(r["n"] - r["u"])
        return out

    def recall_history(self, engram_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """Recalls that returned ``engram_id``, newest first: time, query, agent, scope, mode, rank, leg ranks,
        ``above_floor`` (1, 0, or None before schema 2)."""
        return self._rows(
            "SELECT r.id AS recall_id, r.ts AS time, r.query, r.agent, r.scope, r.mode, h.rank, h.score, "
            "h.bm25_rank, h.dense_rank, h.above_floor FROM recall_hits h JOIN recalls r ON r.id = h.recall_id "
            "WHERE h.engram_id=? ORDER BY r.ts DESC, r.id DESC LIMIT ?", (engram_id, int(limit)))

    def injection_history(self, engram_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """Injections whose block held ``engram_id``, newest first: time, agent, position, tokens, message."""
        with self._lock:
            return injections.history(self._db, engram_id, limit)

    def injections(self, *, text: str | None = None, agent: str | None = None, engram_id: str | None = None,
                   limit: int = 100, offset: int = 0) -> tuple[int, list[dict[str, Any]]]:
        """The injection log, newest first: which block went to which agent when, for which message.

        Args:
            text: only injections whose message contains it (case-insensitive for ASCII letters).
            agent: only this agent's. engram_id: only blocks that held it.
            limit, offset: the page (rows).

        Returns:
            ``(matched, rows)``: how many injections match, and this page of them, each
            ``{injection_id, time, agent, message, tokens, block_hash, engram_ids}`` (``engram_ids`` in block
            order; ``message`` the query of the recall that built the block as the recall log keeps it
            (:mod:`plur.stats.injections`), ``None`` when unknown, ``''`` when a forget blanked it).
        """
        with self._lock:
            return injections.listing(self._db, text=text, agent=agent, engram_id=engram_id, limit=limit,
                                      offset=offset)

    def injection_agents(self) -> list[str]:
        """The agents the injection log names, sorted."""
        with self._lock:
            return injections.agents(self._db)

    def recalls(self, since: float | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """Recall events, newest first: id, time, agent, scope, query, mode, latency_ms, n_hits."""
        return self._rows(
            "SELECT id, ts AS time, agent, scope, query, mode, latency_ms, n_hits FROM recalls "
            "WHERE ts >= ? ORDER BY ts DESC, id DESC LIMIT ?", (since or 0.0, int(limit)))

    def recall_hits(self, recall_id: int) -> list[dict[str, Any]]:
        """The ranked hits of one recall: engram_id, rank, score, bm25_rank, dense_rank, above_floor."""
        return self._rows("SELECT engram_id, rank, score, bm25_rank, dense_rank, above_floor FROM recall_hits "
                          "WHERE recall_id=? ORDER BY rank", (recall_id,))

    def summary(self) -> dict[str, Any]:
        """Totals and distributions for the statistics page.

        Returns:
            ``{recalls, injections, distinct_recalled (engrams returned above the floor), hits_above_floor,
            hits_below_floor, feedback_useful, feedback_not_useful, latency_ms: {p50, p90, p99} over all recalls,
            per_day: [{day 'YYYY-MM-DD', recalls, p50_ms, p99_ms}], most_recalled: [{engram_id, n}] (above the floor),
            by_agent: [{agent, n}]}``.
        """
        lat = [r["latency_ms"] for r in self._rows("SELECT latency_ms FROM recalls ORDER BY latency_ms")]
        days: dict[str, list[float]] = {}
        for r in self._rows("SELECT date(ts, 'unixepoch') AS day, latency_ms FROM recalls ORDER BY latency_ms"):
            days.setdefault(r["day"], []).append(r["latency_ms"])
        per_day = [{"day": d, "recalls": len(v), "p50_ms": _percentile(v, 50), "p99_ms": _percentile(v, 99)}
                   for d, v in sorted(days.items())]
        n_inj = self._rows("SELECT COUNT(*) AS n FROM injections")[0]["n"]
        distinct = self._rows("SELECT COUNT(DISTINCT engram_id) AS n FROM recall_hits WHERE above_floor = 1")[0]["n"]
        most = self._rows("SELECT engram_id, COUNT(*) AS n FROM recall_hits WHERE above_floor = 1 GROUP BY engram_id "
                          "ORDER BY n DESC, engram_id LIMIT 20")
        floor = self._rows("SELECT SUM(CASE WHEN above_floor = 1 THEN 1 ELSE 0 END) AS above, COUNT(*) AS n "
                           "FROM recall_hits")[0]
        useful = self._rows("SELECT COALESCE(SUM(useful), 0) AS u, COUNT(*) AS n FROM feedback")[0]
        agents = self._rows("SELECT COALESCE(agent, '') AS agent, COUNT(*) AS n FROM recalls GROUP BY agent "
                            "ORDER BY n DESC")
        above = int(floor["above"] or 0)
        return {"recalls": len(lat), "injections": n_inj, "distinct_recalled": distinct,
                "hits_above_floor": above, "hits_below_floor": int(floor["n"] or 0) - above,
                "feedback_useful": int(useful["u"]), "feedback_not_useful": int(useful["n"]) - int(useful["u"]),
                "latency_ms": {"p50": _percentile(lat, 50), "p90": _percentile(lat, 90),
                               "p99": _percentile(lat, 99)},
                "per_day": per_day, "most_recalled": most, "by_agent": agents,
                "secrets_redacted": sum(self.screened_counts().values())}

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._checkpoints.wait()
        with self._lock:
            try:
                self._db.close()
            except sqlite3.Error:  # pragma: no cover
                pass
