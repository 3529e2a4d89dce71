"""Usage counts for the web page, read from ``<home>/stats.db`` and cached until the database changes.

The engrams table needs every engram's recall count (above the relevance floor), below-floor count,
injection count, feedback counts and last recall time on every page load. :meth:`plur.stats.db.StatsDB.engram_counts` computes them with three aggregate
queries; at 10,000 engrams and 20,000 recorded hits that is tens of ms, paid again on every
click although the numbers rarely change between clicks. :class:`UsageCounts` keeps the result
and re-reads it only when SQLite's ``PRAGMA data_version`` says another connection committed
(the ``Memory`` facade writes through its own connection, so every recall, injection or
forget invalidates the cache). It reads the schema documented in :mod:`plur.stats.db`.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

_COUNTS_RECALLS = ("SELECT h.engram_id, SUM(COALESCE(h.above_floor, 0)), COUNT(*), "
                   "MAX(CASE WHEN h.above_floor = 1 THEN r.ts END) FROM recall_hits h "
                   "JOIN recalls r ON r.id = h.recall_id GROUP BY h.engram_id")
_COUNTS_INJECTIONS = "SELECT engram_id, COUNT(*) FROM injection_engrams GROUP BY engram_id"
_COUNTS_FEEDBACK = "SELECT engram_id, SUM(useful), COUNT(*) FROM feedback GROUP BY engram_id"
_ONE_RECALLS = ("SELECT SUM(COALESCE(h.above_floor, 0)), COUNT(*), MAX(CASE WHEN h.above_floor = 1 THEN r.ts END) "
                "FROM recall_hits h JOIN recalls r ON r.id = h.recall_id WHERE h.engram_id = ?")
_ONE_INJECTIONS = "SELECT COUNT(*) FROM injection_engrams WHERE engram_id = ?"
_ONE_FEEDBACK = "SELECT SUM(useful), COUNT(*) FROM feedback WHERE engram_id = ?"


def _empty() -> dict[str, Any]:
    return {"recalls": 0, "below_floor": 0, "injections": 0, "useful": 0, "not_useful": 0, "last_recalled": None}


class UsageCounts:
    """Per-engram usage counts from stats.db, cached per database version.

    The counts are those of :meth:`plur.stats.db.StatsDB.engram_counts`: ``recalls`` = returned above the
    relevance floor, ``below_floor`` = returned below it, ``injections``, ``useful`` / ``not_useful``
    (feedback) and ``last_recalled`` (above the floor).

    Args:
        path: the stats database (``<home>/stats.db``); it must already exist (open
            ``Memory.stats`` first, which creates the schema).

    Thread-safe (one connection behind a lock).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=5.0, isolation_level=None)
        self._lock = threading.Lock()
        self._version: int | None = None
        self._counts: dict[str, dict[str, Any]] = {}

    def all(self) -> dict[str, dict[str, Any]]:
        """``engram id -> {recalls, below_floor, injections, useful, not_useful, last_recalled}`` for every engram used.

        Engrams never returned, injected nor given feedback are absent. The returned dict is shared: do not mutate it.
        """
        with self._lock:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            if version != self._version:
                out: dict[str, dict[str, Any]] = {}
                for eid, n, total, last in self._db.execute(_COUNTS_RECALLS):
                    out[eid] = {**_empty(), "recalls": int(n or 0), "below_floor": int(total - (n or 0)),
                                "last_recalled": last}
                for eid, n in self._db.execute(_COUNTS_INJECTIONS):
                    out.setdefault(eid, _empty())["injections"] = n
                for eid, u, n in self._db.execute(_COUNTS_FEEDBACK):
                    e = out.setdefault(eid, _empty())
                    e["useful"], e["not_useful"] = int(u or 0), int(n - (u or 0))
                self._counts, self._version = out, version
            return self._counts

    def one(self, engram_id: str) -> dict[str, Any]:
        """The counts of one engram (three indexed queries, no cache); see :meth:`all`."""
        with self._lock:
            n, total, last = self._db.execute(_ONE_RECALLS, (engram_id,)).fetchone()
            (injections,) = self._db.execute(_ONE_INJECTIONS, (engram_id,)).fetchone()
            u, nf = self._db.execute(_ONE_FEEDBACK, (engram_id,)).fetchone()
        return {"recalls": int(n or 0), "below_floor": int((total or 0) - (n or 0)), "injections": int(injections or 0),
                "useful": int(u or 0), "not_useful": int((nf or 0) - (u or 0)), "last_recalled": last}

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._db.close()
