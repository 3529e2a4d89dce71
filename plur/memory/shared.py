"""A store shared with other machines (PostgreSQL): erase this home's copies of engrams forgotten elsewhere.

Another machine's forget reaches this one through the store's change feed (also when this machine was off:
the feed rows after this home's saved cursor). What this home derived from those engrams goes as it would
for a local forget: saved index rows, cached vectors (by the text keys the feed carries), stats.db rows,
quarantined copies and kept edits. When the feed rows after the home's cursor were pruned (the home was off
for longer than ``feed_retention_days``), :func:`resync_derived` checks every derived copy against the database.
"""

from __future__ import annotations

from typing import Any


def erase_forgotten_elsewhere(mem: Any, forgotten: list[tuple[str, list[bytes]]]) -> None:
    """Erase the derived copies of ``forgotten`` (``(id, text keys)`` from ``PgStore.take_forgotten``), then
    record the feed cursor in the home."""
    if not forgotten:
        return
    from ..index.purge import erase_dense, purge_saved
    from .forget import forget_keys, forget_quarantined

    ids = [i for i, _ in forgotten]
    if mem._indexes is not None:
        mem._indexes.remove(ids)
        erase_dense(mem._indexes.dense)
        mem._indexes.dirty = True
        mem.save()
    else:
        purge_saved(mem.home / "index", ids)
    forget_keys(mem, sorted({k for _, keys in forgotten for k in keys}))
    for engram_id in ids:
        mem.stats.forget_engram(engram_id)
        forget_quarantined(mem, engram_id)
    mem.store.save_cursor()


def resync_derived(mem: Any) -> dict[str, int]:
    """Full resync after the feed was pruned past this home's cursor: erase every derived copy the database no
    longer backs (index rows and stats.db rows of ids not in the store, cached vectors of texts whose vectors
    are not in ``plur_vectors``: a forget deletes them there), then record the cursor.

    Returns:
        ``{"ids": n engram ids erased, "vectors": n cached vectors erased}``.
    """
    import json

    from ..index.purge import erase_dense, purge_saved
    from .forget import forget_quarantined

    live = set(mem.store.by_id())
    if mem._indexes is not None:
        idx = mem._indexes
        gone = sorted((set(idx.lexical_hashes) | set(idx.dense_hashes)) - live)
        if gone:
            idx.remove(gone)
            erase_dense(idx.dense)
            idx.dirty = True
            mem.save()
    else:
        try:
            manifest = json.loads((mem.home / "index" / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = {}
        saved = {i for leg in ("lexical", "dense") if isinstance(manifest.get(leg), dict) for i in manifest[leg]}
        gone = sorted(saved - live)
        if gone:
            purge_saved(mem.home / "index", gone)
    stale_stats = sorted(mem.stats.engram_ids() - live)
    for engram_id in sorted(set(gone) | set(stale_stats)):
        mem.stats.forget_engram(engram_id)
        forget_quarantined(mem, engram_id)
    vectors = _erase_unbacked_vectors(mem)
    mem.store.save_cursor()
    return {"ids": len(set(gone) | set(stale_stats)), "vectors": vectors}


def _erase_unbacked_vectors(mem: Any) -> int:
    """Erase the locally cached vectors whose text has no vector in the database (forgotten meanwhile)."""
    from ..embed.cache import EmbeddingCache

    embedder = mem._resolution.embedder if mem._resolution is not None else None
    cache = getattr(embedder, "cache", None)
    local, shared = getattr(cache, "local", None), getattr(cache, "shared", None)
    own = None
    if local is None or shared is None:
        path = mem.cache_dir / "embeddings.sqlite"
        if not path.exists():
            return 0
        from ..store.pg.vectors import PgVectorCache

        local, shared = own = EmbeddingCache(path), PgVectorCache(mem.store.uri)
    try:
        keys = sorted(local.keys())
        unbacked = sorted(set(keys) - shared.present(keys))
        if unbacked:
            local.forget(unbacked)
        return len(unbacked)
    finally:
        if own is not None:
            own[0].close()
            own[1].close()
