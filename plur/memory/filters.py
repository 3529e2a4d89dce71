"""Recall's candidate filters: the ids a scope/type/tag filter admits and the ids not current now,
each cached until the store changes (keyed by the Memory's generation).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any


def not_current(mem: Any) -> set[str]:
    """Ids of engrams that are not current now (retired, expired, not yet valid); see :meth:`Engram.is_current`.

    The engrams that can be non-current (retired, or with a validity bound) are listed once per
    store change; each call only checks those against the clock.
    """
    if mem._bounded_cache is None or mem._bounded_cache[0] != mem._generation:
        bounded = [e for e in mem.store.by_id().values()
                   if e.status != "active" or e.valid_until is not None or e.valid_from is not None]
        mem._bounded_cache = (mem._generation, bounded)
    now = datetime.now(timezone.utc)
    return {e.id for e in mem._bounded_cache[1] if not e.is_current(now)}


def allowed(mem: Any, scope: str | None, types: Sequence[str] | None,
             tags: Sequence[str] | None) -> set[str] | None:
    """The filter's admitted ids, cached until the store changes (an O(n) pass per store change)."""
    if scope is None and not types and not tags:
        return None
    key = (mem._generation, scope, tuple(sorted(types or ())), tuple(sorted(tags or ())))
    got = mem._allowed_cache.get(key)
    if got is None:
        if len(mem._allowed_cache) > 64 or any(k[0] != mem._generation for k in mem._allowed_cache):
            mem._allowed_cache.clear()
        from ..index.recall import allowed_ids

        got = allowed_ids(mem._by_id(), scope=scope, types=types, tags=tags)
        mem._allowed_cache[key] = got
    return got
