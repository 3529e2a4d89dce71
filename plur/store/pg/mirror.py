"""The in-memory mirror of ``plur_engrams``, kept current from the change feed (a cursor over ``plur_changes``).

:class:`PgMirror` holds the engrams by id and by (scope, content hash), the changes not yet reported by
``refresh`` and the engrams erased by another machine; :class:`plur.store.pg.store.PgStore` adds the
connection, reads and writes on top.
"""

from __future__ import annotations

from typing import Any

from ..active_texts import ActiveTexts
from ..changes import _merge_op
from ..engram import Engram
from .rows import from_row


class PgMirror:
    """State and feed application only; no connection of its own (every method takes ``conn``)."""

    _by_id: dict[str, Engram]
    _by_key: ActiveTexts
    _sorted: list[Engram] | None
    _pending: dict[str, str]
    _forgotten: dict[str, list[bytes]]
    _resume_from: int | None
    _cursor: int
    _loaded: bool
    _resync: bool

    def _index_add(self, e: Engram) -> None:
        self._index_remove(e.id)
        self._by_id[e.id] = e
        self._by_key.add(e)
        self._sorted = None

    def _index_remove(self, engram_id: str) -> Engram | None:
        old = self._by_id.pop(engram_id, None)
        if old is not None:
            self._by_key.discard(old)
            self._sorted = None
        return old

    def _note(self, engram_id: str, op: str) -> None:
        merged = _merge_op(self._pending.get(engram_id), op)
        if merged is None:
            self._pending.pop(engram_id, None)
        else:
            self._pending[engram_id] = merged

    def _duplicate_of(self, scope: str, chash: str) -> Engram | None:
        ids = self._by_key.ids(scope, chash, self._by_id)
        return min((self._by_id[i] for i in ids), key=lambda e: (e.created, e.id)) if ids else None

    def _load(self, conn: Any) -> None:
        outer = conn.info.transaction_status != 0  # inside a write (under the lock): its view is consistent
        with conn.transaction():
            if not outer:  # one snapshot for the cursor and the rows
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor = conn.execute("SELECT coalesce(max(seq), 0) FROM plur_changes").fetchone()[0]
            rows = conn.execute("SELECT doc, yaml FROM plur_engrams").fetchall()
            from .prune import pruned_through

            pruned = pruned_through(conn)
        before = set(self._by_id)
        self._by_id, self._by_key, self._sorted = {}, ActiveTexts(), None
        for doc, yaml_text in rows:
            e = from_row(doc, yaml_text)
            self._index_add(e)
            self._note(e.id, "updated" if e.id in before else "added")
        for gone in before - set(self._by_id):
            self._note(gone, "removed")
        if self._resume_from is not None and self._resume_from < pruned:
            # the feed rows after this home's cursor were pruned: which engrams went is unknown here, so every
            # derived copy is checked against the database (plur.memory.shared.resync_derived)
            self._resync = True
        elif self._resume_from is not None and self._resume_from < cursor:
            # this home read the feed up to _resume_from before: engrams erased since must go from its copies
            for engram_id, keys in conn.execute("SELECT id, keys FROM plur_changes WHERE seq > %s AND seq <= %s "
                                                "AND op = 'removed'", (self._resume_from, cursor)).fetchall():
                if engram_id not in self._by_id:
                    self._forgotten.setdefault(engram_id, []).extend(bytes(k) for k in keys or ())
        self._cursor, self._loaded = int(cursor), True
        if getattr(self, "home_id", None):  # known at once, so a pruning elsewhere does not force a resync here
            from .prune import register

            register(conn, self.home_id, self._cursor)

    def _catch_up(self, conn: Any) -> None:
        """Apply the feed since the cursor (or load everything on first use)."""
        if not self._loaded:
            self._load(conn)
            return
        changes = conn.execute("SELECT seq, id, keys, (SELECT value::bigint FROM plur_meta WHERE key = "
                               "'pruned_through') FROM plur_changes WHERE seq > %s ORDER BY seq",
                               (self._cursor,)).fetchall()
        if not changes:
            return
        if (changes[0][3] or 0) > self._cursor:  # rows this process had not applied were pruned: reload all
            self._resume_from, self._loaded = self._cursor, False
            self._load(conn)
            return
        ids = list(dict.fromkeys(i for _, i, _, _ in changes))
        keys_of: dict[str, list[bytes]] = {}
        for _, engram_id, keys, _ in changes:
            keys_of.setdefault(engram_id, []).extend(bytes(k) for k in keys or ())
        rows = {r[0]: r for r in conn.execute("SELECT id, doc, yaml FROM plur_engrams WHERE id = ANY(%s)",
                                               (ids,)).fetchall()}
        for engram_id in ids:
            row = rows.get(engram_id)
            if row is None:
                old = self._index_remove(engram_id)
                if old is not None:
                    self._forgotten.setdefault(engram_id, []).extend(keys_of.get(engram_id, ()))
                    self._note(engram_id, "removed")
            else:
                new = from_row(row[1], row[2])
                self._note(engram_id, "updated" if engram_id in self._by_id else "added")
                self._index_add(new)
        self._cursor = int(changes[-1][0])

