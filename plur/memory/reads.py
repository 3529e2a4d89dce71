"""Reads through a :class:`~plur.memory.Memory`: one engram, its history (the supersede chain), filtered lists,
the pinned engrams (cached until the store changes).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from ..store.engram import Engram, _check_scope


def get(mem: Any, engram_id: str) -> Engram:
    """The engram with this id: :meth:`plur.memory.Memory.get`, which documents it."""
    mem._scan()
    return mem.store.get(engram_id)


def list_(mem: Any, *, scope: str | None = None, type: str | None = None, tag: str | None = None,
          status: str | None = None, text: str | None = None, required: Sequence[str] = ()) -> list[Engram]:
    """Engrams matching every given filter: :meth:`plur.memory.Memory.list`, which documents it."""
    if scope is not None:
        _check_scope(scope)
    mem._scan()
    if mem._newest_cache is None or mem._newest_cache[0] != mem._generation:
        every = mem.store.all()  # oldest first, kept in order across writes (plur.store.order)
        every.reverse()
        mem._newest_cache = (mem._generation, every)
    if scope is None and type is None and tag is None and status is None and not text and not required:
        return list(mem._newest_cache[1])  # a copy of references: the page a large store's service lists most
    needle = text.casefold() if text else None
    return [e for e in mem._newest_cache[1]
            if (scope is None or e.scope == scope) and (type is None or e.type == type)
            and (tag is None or tag in e.tags) and (status is None or e.status == status)
            and (needle is None or needle in e.statement.casefold())
            and (not required or set(required).issubset(e.tags))]


def history(mem: Any, engram_id: str) -> list[Engram]:
    """A note's versions along ``supersedes``, oldest first: :meth:`plur.memory.Memory.history`, which documents it."""
    mem._scan()
    by_id = mem.store.by_id()
    start = mem.store.get(engram_id)  # NotFoundError / InvalidIdError
    older: list[Engram] = []
    e, seen = start, {start.id}
    while e.supersedes and e.supersedes in by_id and e.supersedes not in seen:  # a hand-edited loop ends
        e = by_id[e.supersedes]
        seen.add(e.id)
        older.append(e)
    successors: dict[str, list[Engram]] = {}
    for other in by_id.values():
        if other.supersedes:
            successors.setdefault(other.supersedes, []).append(other)
    newer: list[Engram] = []
    e = start
    while (after := sorted((n for n in successors.get(e.id, ()) if n.id not in seen),
                           key=lambda n: (n.created, n.id))):
        e = after[-1]  # two supersessions of one note (a hand edit): the newest leads
        seen.add(e.id)
        newer.append(e)
    return [*reversed(older), start, *newer]


def pinned(mem: Any, scope: str | None = None) -> list[Engram]:
    """Current pinned engrams visible in a scope: :meth:`plur.memory.Memory.pinned`, which documents it."""
    mem._scan()
    key = ("pinned", mem._generation)
    if mem._pinned_cache is None or mem._pinned_cache[0] != key:
        every = [e for e in mem.store.by_id().values() if e.pinned and e.status == "active"]
        every.sort(key=lambda e: (e.created, e.id), reverse=True)
        mem._pinned_cache = (key, every)
    now = datetime.now(timezone.utc)
    return [e for e in mem._pinned_cache[1]
            if (scope is None or e.scope in (scope, "global")) and e.is_current(now)]
