"""PgStore: the engram store in a PostgreSQL database, behind the folder store's interface.

Same rules as :class:`plur.store.store.EngramStore`: exact duplicates (same ``content_hash``, same scope,
active) merge, their new tags added; an update carrying the version it started from is refused with
:class:`~plur.errors.ConflictError` when the stored engram changed since; an edit may not duplicate
another active engram of its scope; statements over ``max_statement_bytes`` are refused. Every write is
one transaction under one advisory lock (:data:`~plur.store.pg.schema.WRITE_LOCK`) and first applies the
feed, so the rules hold across machines exactly as across processes on one folder.

Reading is served from an in-memory mirror of the table, kept current from the change feed
(``plur_changes``, read from the cursor: the last seq applied), so :meth:`all`/:meth:`by_id` cost what
they cost on a folder. :meth:`change_token` changes when another machine wrote (LISTEN/NOTIFY,
:mod:`plur.store.pg.feed`); while the listener is down it changes at every call, so callers poll.

Failures to reach the server raise :class:`~plur.errors.DatabaseUnavailableError` (exit 9): reads
reconnect and retry once first; a write whose transaction may have reached the server is not retried.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ...errors import ConflictError, DuplicateError, NotFoundError, StoreError, ValidationError
from ..active_texts import ActiveTexts
from ..changes import Changes
from ..engram import Engram, content_hash, engram_version, new_id, validate_id
from .connect import close_quietly, connect, is_unreachable, redact, unavailable
from .health import PgHealth
from .mirror import PgMirror
from .prune import REGISTER_EVERY_S
from .rows import to_row
from .schema import CHANNEL, WRITE_LOCK, ensure_schema

_UPSERT = ("INSERT INTO plur_engrams (id, scope, status, content_hash, doc, yaml) VALUES (%s, %s, %s, %s, %s, %s) "
           "ON CONFLICT (id) DO UPDATE SET scope = excluded.scope, status = excluded.status, "
           "content_hash = excluded.content_hash, doc = excluded.doc, yaml = excluded.yaml")


class PgStore(PgHealth, PgMirror):
    """Engrams in PostgreSQL (tables of :mod:`plur.store.pg.schema`); see the module docstring.

    Args:
        uri: ``postgresql://user[:password]@host[:port]/dbname[?...]`` (libpq syntax).
        home: this machine's plur home (indexes, caches, stats.db and the feed cursor stay there); None for a
            store opened only to copy engrams (``plur migrate``).
        max_statement_bytes: largest statement accepted, in UTF-8 bytes.
        listen: start the LISTEN thread (``False``: poll the feed at every :meth:`refresh`).
        retention_s: feed rows older than this are pruned whatever the homes say (:mod:`.prune`).

    Raises:
        DatabaseUnavailableError: on first use, when the server cannot be reached.
        MissingDependencyError: psycopg/pgvector missing (extra ``postgres``).
    """

    remote = True

    def __init__(self, uri: str, home: str | Path | None, max_statement_bytes: int = 1 << 20,
                 listen: bool = True, retention_s: float = 30 * 86400.0) -> None:
        self.uri = uri
        self.home = Path(home).expanduser() if home is not None else None
        self.root = self.home  # `plur init` creates the home; engrams are not files here
        self.max_statement_bytes = int(max_statement_bytes)
        self._listen = listen
        self._feed: Any = None
        self._poll = itertools.count()
        self._mutex = threading.RLock()
        self._conn: Any = None
        self._by_id: dict[str, Engram] = {}
        self._by_key = ActiveTexts()  # active ids by (scope, content_hash)
        self._sorted: list[Engram] | None = None
        self._pending: dict[str, str] = {}
        self._forgotten: dict[str, list[bytes]] = {}
        self._cursor = 0
        self._loaded = self._resync = False
        self.retention_s = float(retention_s)
        self._registered_at = self._pruned_at = -1e18
        self.cursor_path = self.home / "index" / "pg-feed.json" if self.home is not None else None
        from .cursor import home_id, load_cursor

        self._resume_from = load_cursor(self.cursor_path, uri) if self.cursor_path is not None else None
        self.home_id = home_id(self.cursor_path) if self.cursor_path is not None else None
        self._erase_keys: list[bytes] = []

    def __repr__(self) -> str:
        return f"PgStore({redact(self.uri)!r})"

    # -- connection -----------------------------------------------------------------------
    def _connection(self) -> Any:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        conn = connect(self.uri)
        try:
            ensure_schema(conn)  # no vector values travel on this connection: pgvector's types are not loaded
        except Exception as exc:
            conn.close()
            if is_unreachable(exc):
                raise unavailable(self.uri, exc, "opening the store") from None
            raise
        self._conn = conn
        if self._listen and self._feed is None:
            from .feed import ChangeListener

            self._feed = ChangeListener(self.uri)
        return conn

    def _drop(self) -> None:
        close_quietly(self._conn)
        self._conn = None

    def _call(self, fn: Callable[[Any, dict[str, bool]], Any], doing: str) -> Any:
        """Run ``fn(conn, state)``; on a lost connection reconnect and retry once unless ``state['sent']``."""
        with self._mutex:
            for attempt in (0, 1):
                conn = self._connection()
                state = {"sent": False}
                try:
                    return fn(conn, state)
                except Exception as exc:
                    if not is_unreachable(exc):
                        raise
                    self._drop()
                    if attempt or state["sent"]:
                        raise unavailable(self.uri, exc, doing) from None
            raise AssertionError("unreachable")  # pragma: no cover

    def _ensure(self) -> None:
        if not self._loaded:
            self._call(lambda conn, _: self._catch_up(conn), "reading the engrams")

    # -- reading --------------------------------------------------------------------------
    def change_token(self) -> Any:
        """A value that changes when the store may have changed (cheap, no query while the listener is up)."""
        feed = self._feed
        if feed is not None and feed.connected:
            return ("feed", feed.token)
        return ("poll", next(self._poll))

    def refresh(self, *, full: bool = True) -> Changes:
        """Apply the change feed since the cursor; :class:`Changes` since the previous call (``full`` is ignored:
        the feed names every change).

        Raises:
            DatabaseUnavailableError: the server cannot be reached.
        """
        with self._mutex:
            self._call(lambda conn, _: self._catch_up(conn), "reading the change feed")
            pending, self._pending = self._pending, {}
            if time.monotonic() - self._registered_at >= REGISTER_EVERY_S:
                self._register()
        return Changes(
            added=frozenset(i for i, op in pending.items() if op == "added"),
            updated=frozenset(i for i, op in pending.items() if op == "updated"),
            removed=frozenset(i for i, op in pending.items() if op == "removed"),
        )

    def take_forgotten(self) -> list[tuple[str, list[bytes]]]:
        """``(id, text keys)`` of engrams another machine erased since the previous call (or, on first use,
        since this home's saved cursor): erase their derived copies here, then call :meth:`save_cursor`.
        The keys are the sha256 of the texts whose vectors may be cached (statement, chunks)."""
        with self._mutex:
            out, self._forgotten = list(self._forgotten.items()), {}
        return out

    def take_resync(self) -> bool:
        """True (once) when this home's cursor fell behind the pruned part of the feed (:mod:`.prune`): which
        engrams were forgotten meanwhile is unknown, so the caller checks every derived copy against the
        database, then calls :meth:`save_cursor`."""
        with self._mutex:
            got, self._resync = self._resync, False
        return got

    def save_cursor(self) -> None:
        """Record in the home how far the feed was applied (after the derived copies of :meth:`take_forgotten`
        were erased), so a restart learns only of later forgets; also in ``plur_homes`` (:meth:`_register`)."""
        with self._mutex:
            if self._loaded and not self._forgotten and not self._resync and self.cursor_path is not None:
                from .cursor import save_cursor

                save_cursor(self.cursor_path, self.uri, self._cursor, self.home_id)
                self._resume_from = self._cursor
                self._register()

    def _register(self) -> None:
        """Record this home's cursor in ``plur_homes`` and prune the feed when due (best effort: a failure only
        means the feed is pruned later)."""
        from .prune import PRUNE_EVERY_S, prune, register

        if not self._loaded or self.home_id is None:
            return
        self._registered_at = now = time.monotonic()
        try:
            conn = self._connection()
            register(conn, self.home_id, self._cursor)
            if now - self._pruned_at >= PRUNE_EVERY_S:
                self._pruned_at = now
                prune(conn, self.retention_s)
        except Exception as exc:  # noqa: BLE001 - the server went away: the next call reconnects
            import logging

            logging.getLogger("plur.store.pg").info("feed bookkeeping skipped: %s", " ".join(str(exc).split()))

    def prune_changes(self, retention_s: float | None = None) -> int:
        """Record this home's cursor and prune the feed now (:func:`plur.store.pg.prune.prune`); rows deleted."""
        from .prune import prune, register

        with self._mutex:
            self._ensure()
            conn = self._connection()
            if self.home_id is not None:
                register(conn, self.home_id, self._cursor)
            return prune(conn, self.retention_s if retention_s is None else retention_s)

    def all(self) -> list[Engram]:
        """Every engram, oldest first (by ``created``, then id), from the mirror."""
        with self._mutex:
            self._ensure()
            if self._sorted is None:
                self._sorted = sorted(self._by_id.values(), key=lambda e: (e.created, e.id))
            return list(self._sorted)

    def by_id(self) -> dict[str, Engram]:
        """Every engram by id (a copy), from the mirror."""
        with self._mutex:
            self._ensure()
            return dict(self._by_id)

    def count(self) -> int:
        """Number of engrams in the mirror."""
        with self._mutex:
            self._ensure()
            return len(self._by_id)

    def get(self, engram_id: str) -> Engram:
        """The engram with this id (from the mirror; :meth:`refresh` first for the latest).

        Raises:
            InvalidIdError: malformed id. NotFoundError: no such engram.
        """
        validate_id(engram_id)
        with self._mutex:
            self._ensure()
            found = self._by_id.get(engram_id)
        if found is None:
            raise NotFoundError(f"no engram {engram_id} in {redact(self.uri)}; `plur list` shows the ids")
        return found

    def find_duplicate(self, statement: str, scope: str = "global") -> Engram | None:
        """The active engram in ``scope`` whose normalised statement equals ``statement``, if any."""
        with self._mutex:
            self._ensure()
            return self._duplicate_of(scope, content_hash(statement))

    def path_for(self, engram_id: str) -> str:
        """Where the engram lives, for display: ``<uri without password>#<id>``."""
        return f"{redact(self.uri)}#{validate_id(engram_id)}"

    file_of = path_for  # the folder store's name for where an engram is now

    # -- writing --------------------------------------------------------------------------
    def _check(self, engram: Engram) -> None:
        if not isinstance(engram, Engram):
            raise ValidationError(f"expected an Engram, got {type(engram).__name__} {engram!r:.60}")
        size = len(engram.statement.encode("utf-8"))
        if size > self.max_statement_bytes:
            raise ValidationError(f"statement is {size} bytes, over the limit of {self.max_statement_bytes} "
                                  "(setting max_statement_bytes); split it or raise the limit")

    def _write(self, plan: Callable[[], list[tuple[Engram, str]]], doing: str) -> None:
        """One write transaction: lock, catch up, ``plan()`` (checks and edits the mirror, returns
        ``(engram, op)`` to write), write rows + feed + NOTIFY, commit. The mirror is reloaded if it fails."""
        def fn(conn: Any, state: dict[str, bool]) -> None:
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                    self._catch_up(conn)
                    ops = plan()
                    if not ops:
                        return
                    state["sent"] = True
                    with conn.cursor() as cur:
                        new = [to_row(e) for e, op in ops if op == "added"]
                        if len(new) > 50:  # ids checked free under the lock: COPY, ~3x faster than INSERTs
                            with cur.copy("COPY plur_engrams (id, scope, status, content_hash, doc, yaml) "
                                          "FROM STDIN") as copy:
                                for row in new:
                                    copy.write_row(row)
                            new = []
                        up = new + [to_row(e) for e, op in ops if op == "updated"]
                        if up:
                            cur.executemany(_UPSERT, up)
                        gone = [e.id for e, op in ops if op == "removed"]
                        keys = self._erase_keys if gone else []
                        if gone:  # and every chunk text any machine embedded for the statement (plur_chunk_keys)
                            cur.execute("DELETE FROM plur_chunk_keys WHERE owner = ANY(%s) RETURNING text_sha256",
                                        (keys,))
                            keys = list(dict.fromkeys([*keys, *(bytes(r[0]) for r in cur.fetchall())]))
                            cur.execute("DELETE FROM plur_engrams WHERE id = ANY(%s)", (gone,))
                            cur.execute("DELETE FROM plur_vectors WHERE text_sha256 = ANY(%s)", (keys,))
                        live = [(e.id, op) for e, op in ops if op != "removed"]
                        if live:
                            cur.execute("INSERT INTO plur_changes (id, op) SELECT * FROM unnest(%s::text[], "
                                        "%s::text[])", ([i for i, _ in live], [op for _, op in live]))
                        for engram_id in gone:  # a forget: its row carries the keys of the texts to erase
                            cur.execute("INSERT INTO plur_changes (id, op, keys) VALUES (%s, 'removed', %s)",
                                        (engram_id, keys))
                        cur.execute("SELECT max(seq) FROM plur_changes")
                        last = cur.fetchone()[0]
                        cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(last)))
                self._cursor = int(last)
            except BaseException:
                self._loaded = False  # the mirror may hold a write that did not commit: reload it
                raise

        self._call(fn, doing)

    def add(self, engram: Engram) -> tuple[Engram, bool]:
        """Store a new engram; see :meth:`add_many`."""
        return self.add_many([engram])[0]

    def add_many(self, engrams: Iterable[Engram], *, dedupe: bool = True) -> list[tuple[Engram, bool]]:
        """Store engrams in one transaction; exact duplicates merge (their new tags added), as on a folder.

        Returns:
            One ``(stored engram, created)`` per input, in order.

        Raises:
            ValidationError: a statement over ``max_statement_bytes`` (nothing written).
            DatabaseUnavailableError: the server cannot be reached.
        """
        batch = list(engrams)
        for e in batch:
            self._check(e)
        out: list[tuple[Engram, bool]] = []

        def plan() -> list[tuple[Engram, str]]:
            out.clear()
            ops: dict[str, tuple[Engram, str]] = {}
            for e in batch:
                dup = self._duplicate_of(e.scope, e.content_hash) if dedupe and e.status == "active" else None
                if dup is not None:
                    new_tags = tuple(t for t in e.tags if t not in dup.tags)
                    if new_tags:
                        dup = dup.replace(tags=dup.tags + new_tags)
                        self._index_add(dup)
                        self._note(dup.id, "updated")
                        ops[dup.id] = (dup, ops.get(dup.id, (dup, "updated"))[1])
                    out.append((dup, False))
                    continue
                for _ in range(100):
                    if e.id not in self._by_id:
                        break
                    e = dataclasses.replace(e, id=new_id(e.created))
                else:
                    raise StoreError(f"could not find a free id for an engram created {e.created} after 100 tries")
                self._index_add(e)
                self._note(e.id, "added")
                ops[e.id] = (e, "added")
                out.append((e, True))
            return list(ops.values())

        with self._mutex:
            self._write(plan, "saving engrams")
        return list(out)

    def put(self, engram: Engram, *, expected: str | None = None) -> Engram:
        """Overwrite the stored engram with the same id; the same rules and errors as
        :meth:`plur.store.store.EngramStore.put` (NotFoundError, ConflictError, DuplicateError, ValidationError),
        plus DatabaseUnavailableError."""
        self._check(engram)
        result: list[Engram] = []

        def plan() -> list[tuple[Engram, str]]:
            current = self._by_id.get(engram.id)
            if current is None:
                raise NotFoundError(f"no engram {engram.id} in {redact(self.uri)}; use add() for a new engram")
            if expected is not None and engram_version(current) != expected:
                raise ConflictError(
                    f"engram {engram.id} changed since you opened it (version {expected}, now "
                    f"{engram_version(current)}); nothing was saved: reload it and make your change again")
            others = sorted(i for i in self._by_key.ids(engram.scope, engram.content_hash, self._by_id)
                            if i != engram.id)
            same = current.status == "active" and (current.scope, current.content_hash) == (
                engram.scope, engram.content_hash)
            if engram.status == "active" and others and not same:
                raise DuplicateError(
                    f"engram {others[0]} in scope {engram.scope} already says exactly this; nothing was "
                    f"saved: forget {engram.id} instead (or edit {others[0]})", others[0])
            if current.to_yaml() == engram.to_yaml():
                result.append(current)
                return []
            self._index_add(engram)
            self._note(engram.id, "updated")
            result.append(engram)
            return [(engram, "updated")]

        with self._mutex:
            self._write(plan, "saving the engram")
        return result[-1]

    def delete(self, engram_id: str, *, erase_keys: Iterable[bytes] = ()) -> Engram:
        """Delete the engram's row and the stored vectors of its texts, in one transaction.

        Args:
            erase_keys: sha256 keys of the engram's texts whose vectors may be cached (its chunks); the
                statement's own key is always included. They go into the feed row, so every machine,
                also one that is off now, erases its cached vectors of them.

        Raises:
            InvalidIdError, NotFoundError, DatabaseUnavailableError.
        """
        from .vectors import text_key

        extra = [bytes(k) for k in erase_keys]
        validate_id(engram_id)
        result: list[Engram] = []

        def plan() -> list[tuple[Engram, str]]:
            gone = self._index_remove(engram_id)
            if gone is None:
                raise NotFoundError(f"no engram {engram_id} in {redact(self.uri)}; `plur list` shows the ids")
            self._note(engram_id, "removed")
            result.append(gone)
            self._erase_keys = list(dict.fromkeys([text_key(gone.statement), *extra]))
            return [(gone, "removed")]

        with self._mutex:
            self._write(plan, "forgetting the engram")
            self._vacuum()
        return result[-1]

    def close(self) -> None:
        """Save the feed cursor (when no erasure is pending), stop the listener, close the connection (idempotent)."""
        with self._mutex:
            self.save_cursor()
            if self._feed is not None:
                self._feed.close()
                self._feed = None
            self._drop()

    def __enter__(self) -> "PgStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
