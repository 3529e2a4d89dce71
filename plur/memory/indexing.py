"""The indexes of a :class:`~plur.memory.Memory`: opened lazily and synced with the store on first
use, caught up now (with progress) before a CLI recall, rebuilt by ``reindex``, saved at close.

The dense leg's catch-up itself (bounded in a recall, the rest in the background, or everything
now) is one mechanism: :class:`plur.index.catchup.DenseCatchUp`.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("plur")


def open_index(mem: Any, need_dense: bool = True) -> Any:
    """The :class:`~plur.index.indexes.IndexSet`, opened and synced with the store on first use.

    Args:
        need_dense: resolve the embedding model and open the dense leg. ``False`` (a BM25-only
            recall) opens the lexical leg alone and defers the model, so no torch is imported;
            a later call with ``True`` attaches it.
    """
    if mem._indexes is None:
        from ..index.indexes import IndexSet

        defer = not need_dense and mem._resolution is None and mem._explicit_embedder is None
        embedder = None if defer else mem.model_resolution().embedder
        idx = IndexSet(mem.home / "index", mem.settings, embedder, defer_dense=defer)
        mem._scan(force=True)
        mem._synced_at_open = idx.sync(mem._by_id(), progress=True)
        mem._indexes = idx
    elif need_dense and mem._indexes.dense_deferred:
        embedder = mem.model_resolution().embedder
        mem._scan()
        mem._indexes.attach_embedder(embedder, mem._by_id())
    return mem._indexes


def index_state(mem: Any) -> dict[str, Any]:
    """Where the dense leg's catch-up stands, for status pages and hosts that wait for a steady index.

    Returns:
        ``{"open": bool, "pending_dense": n engrams queued for embedding, "catching_up": bool}``:
        ``catching_up`` while a background thread embeds the queue (recalls meanwhile answer from
        the last consistent index; see :mod:`plur.index.catchup`).
    """
    from ..index.catchup import queued

    idx = mem._indexes
    return {"open": idx is not None, "pending_dense": queued(idx) if idx is not None else 0,
            "catching_up": bool(mem.catchup.running)}


def catch_up(mem: Any, *, progress: bool = True, need_dense: bool = True) -> dict[str, int]:
    """Bring the indexes up to date with the store now (what the first recall after an ingest does).

    Shows tqdm bars on stderr (BM25 indexing, embedding) when ``progress``, so a first recall after
    a big ingest does not look hung; the CLI calls it before recalling.

    Args:
        progress: show progress bars on stderr.
        need_dense: also the dense leg (``False`` for a BM25-only recall: no model is loaded).

    Returns:
        ``{"indexed": n engrams (re)indexed in BM25 at open, "embedded": n engrams embedded}``.
    """
    with mem._lock:
        opening = mem._indexes is None
        idx = mem._index(need_dense)
        indexed = mem._synced_at_open if opening else 0
        if not opening:
            mem._scan()
        embedded = 0
        if not idx.dense_deferred:
            pending = idx.pending_dense
            embedded = mem.catchup.now(idx, progress=progress and pending > 100)
    return {"indexed": indexed, "embedded": embedded}


def embed_queued(mem: Any) -> int:
    """Embed what the last writes queued for the dense leg, bounded as a recall does it, so the next recall
    does not: a short queue (``recall_embed_batch``) now, a longer one on the background thread.

    For a writer that runs between turns (capture after a turn's block is published): the next turn's
    recall then finds nothing to embed first. A no-op while the indexes are not open or have no dense leg.

    Returns:
        Engrams still queued (0 when all were embedded now).
    """
    with mem._lock:
        idx = mem._indexes
        if idx is None or idx.dense is None or idx.dense_deferred:
            return 0
        mem._scan()
        mem.catchup.before_search(idx)
        return int(idx.pending_dense)


#: Seconds between the saves of a running ``reindex``: each save at 100k engrams takes a few seconds, so a build
#: from cached embeddings (~1-2 min) saves only at its end, a first-time embedding (~10 min at 100k) every 5 min.
REINDEX_CHECKPOINT_S = 300.0


def reindex(mem: Any, *, progress: bool = True) -> dict[str, int]:
    """Rebuild both indexes from the store (embeddings come from the cache when present).

    The build saves itself every :data:`REINDEX_CHECKPOINT_S` seconds (5 min) and when interrupted (Ctrl-C),
    and leaves ``index/reindexing.json`` until it is done: a reindex that finds that file resumes
    the saved partial build instead of starting over (engrams it already embedded are not chunked,
    hashed or looked up in the cache again).

    Returns:
        ``{"engrams": n indexed, "embedded": n sent to the dense leg}``.
    """
    import shutil

    from ..index.indexes import IndexSet, _atomic_write_json

    mem.catchup.stop()
    with mem._lock:
        mem._indexes = None
        folder = mem.home / "index"
        marker = folder / "reindexing.json"
        res = mem.model_resolution()
        if not marker.is_file():  # else: an interrupted reindex, resumed from its last save
            shutil.rmtree(folder, ignore_errors=True)
            _atomic_write_json(marker, {"model": getattr(res.embedder, "identity", None)})
        mem._scan(force=True)
        idx = IndexSet(folder, mem.settings, res.embedder)
        n = idx.sync(mem._by_id(), progress=progress)
        mem._indexes = idx
        embedded = mem.catchup.now(idx, progress=progress, checkpoint_s=REINDEX_CHECKPOINT_S)
        idx.dirty = True
        idx.save()
        marker.unlink(missing_ok=True)
    return {"engrams": n, "embedded": embedded}


def save(mem: Any) -> None:
    """Persist the indexes if they changed (also done by :meth:`close` and at exit).

    The indexes are a cache of the engram files: when they cannot be written (read-only home,
    full disk) a warning is logged, the temp folders of the failed save are removed, and the
    next process rebuilds what is missing.
    """
    with mem._lock:
        if mem._indexes is not None:
            folder = mem.home / "index"
            before = set(folder.glob(".*")) if folder.is_dir() else set()
            try:
                mem._indexes.save()
            except OSError as exc:
                log.warning("indexes not saved in %s (%s); they are rebuilt from the engram files "
                            "when needed", folder, exc)
                import shutil

                for p in set(folder.glob(".*")) - before if folder.is_dir() else ():
                    if p.is_dir():
                        shutil.rmtree(p, ignore_errors=True)
                    else:
                        p.unlink(missing_ok=True)
