"""A store shared with other machines (PostgreSQL): erase this home's copies of engrams forgotten elsewhere.

Another machine's forget reaches this one through the store's change feed (also when this machine was off:
the feed rows after this home's saved cursor). What this home derived from those engrams goes as it would
for a local forget: saved index rows, cached vectors (by the text keys the feed carries), stats.db rows,
quarantined copies and kept edits.
"""

from __future__ import annotations

from typing import Any


def erase_forgotten_elsewhere(mem: Any, forgotten: list[tuple[str, list[bytes]]]) -> None:
    """Erase the derived copies of ``forgotten`` (``(id, text keys)`` from ``PgStore.take_forgotten``), then
    record the feed cursor in the home."""
    if not forgotten:
        return
    from ..index.purge import compact_dense, purge_saved
    from .forget import forget_keys, forget_quarantined

    ids = [i for i, _ in forgotten]
    if mem._indexes is not None:
        mem._indexes.remove(ids)
        compact_dense(mem._indexes.dense)
        mem._indexes.dirty = True
        mem.save()
    else:
        purge_saved(mem.home / "index", ids)
    forget_keys(mem, sorted({k for _, keys in forgotten for k in keys}))
    for engram_id in ids:
        mem.stats.forget_engram(engram_id)
        forget_quarantined(mem, engram_id)
    mem.store.save_cursor()
