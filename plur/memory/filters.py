"""Recall's candidate filters: the ids a scope/type/tag filter admits and the ids not current now,
each cached until the store changes (keyed by the Memory's generation).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any


def _bounded(e: Any) -> bool:
    """Can ``e`` be or become non-current (retired, or with a validity bound)?"""
    return e.status != "active" or e.valid_until is not None or e.valid_from is not None


def asks(e: Any) -> bool:
    """A captured turn that only asks (:func:`plur.memory.rules.only_asks`), stored by an earlier version: capture
    stores none now, and the indexes leave these out (:func:`plur.memory.indexing.never_indexed`), so they are
    never a hit nor change another's score; the overview leaves them out too.

    Cheap for what it is asked most (every captured engram at each index open): a statement without a question
    mark is answered by one ``in`` test; the rest are read once per text (remembered)."""
    if not (isinstance(e.source, dict) and e.source.get("capture") is True):
        return False
    statement = e.statement
    return ("?" in statement or "\uff1f" in statement or "\u061f" in statement) and _only_asks(statement)


@lru_cache(maxsize=1 << 16)
def _only_asks(statement: str) -> bool:
    """:func:`plur.memory.rules.only_asks`, remembered per text."""
    from .rules import only_asks

    return only_asks(statement)


def not_current(mem: Any) -> set[str]:
    """Ids of engrams that are not current now (retired, expired, not yet valid); see :meth:`Engram.is_current`.

    The engrams that can be non-current (retired, or with a validity bound) are listed once (an
    O(n) pass) and then kept up to date from each refresh's changes (:func:`note_changes`); each
    call only checks those against the clock.
    """
    if mem._bounded_cache is None or mem._bounded_cache[0] != mem._generation:
        bounded = {e.id: e for e in mem.store.by_id().values() if _bounded(e)}
        mem._bounded_cache = (mem._generation, bounded)
    now = datetime.now(timezone.utc)
    return {i for i, e in mem._bounded_cache[1].items() if not e.is_current(now)}


def blocked(mem: Any, include_expired: bool = False) -> set[str]:
    """Ids recall never returns: unless ``include_expired``, the engrams not current now (:func:`not_current`)."""
    return set() if include_expired else not_current(mem)


def note_changes(mem: Any, before: int, changed: Iterable[Any], removed: Iterable[str]) -> None:
    """Carry the bounded list of :func:`not_current` from generation ``before`` to the current one.

    Args:
        before: the generation the changes were made on (the list is dropped if it is older).
        changed: the added or updated engrams (as now stored). removed: ids no longer stored.
    """
    cache = mem._bounded_cache
    if cache is None or cache[0] != before:
        mem._bounded_cache = None
        return
    bounded = cache[1]
    for i in removed:
        bounded.pop(i, None)
    for e in changed:
        if _bounded(e):
            bounded[e.id] = e
        else:
            bounded.pop(e.id, None)
    mem._bounded_cache = (mem._generation, bounded)


def allowed(mem: Any, scope: str | None, types: Sequence[str] | None,
            tags: Sequence[str] | None, scopes: frozenset[str] | None = None,
            required: Sequence[str] | None = None) -> set[str] | None:
    """The filter's admitted ids, cached until the store changes (an O(n) pass per store change);
    ``scopes``: only engrams in these scopes (a team member's readable ones), ``None`` = no such limit;
    ``required``: tags every admitted engram carries, all of them (``metadata=``, :mod:`.labels`)."""
    if scope is None and not types and not tags and scopes is None and not required:
        return None
    key = (mem._generation, scope, tuple(sorted(types or ())), tuple(sorted(tags or ())),
           None if scopes is None else tuple(sorted(scopes)), tuple(sorted(required or ())))
    got = mem._allowed_cache.get(key)
    if got is None:
        if len(mem._allowed_cache) > 64 or any(k[0] != mem._generation for k in mem._allowed_cache):
            mem._allowed_cache.clear()
        from ..index.recall import allowed_ids

        got = allowed_ids(mem._by_id(), scope=scope, types=types, tags=tags, scopes=scopes)
        if required:
            need = set(required)
            got = {i for i, e in mem._by_id().items() if (got is None or i in got) and need.issubset(e.tags)}
        mem._allowed_cache[key] = got
    return got
