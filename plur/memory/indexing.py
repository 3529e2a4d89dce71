"""The indexes of a :class:`~plur.memory.Memory`: opened lazily and synced with the store on first
use, caught up now (with progress) before a CLI recall, rebuilt by ``reindex``, saved at close.

The dense leg's catch-up itself (bounded in a recall, the rest in the background, or everything
now) is one mechanism: :class:`plur.index.catchup.DenseCatchUp`.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
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
        idx = IndexSet(mem.home / "index", mem.settings, embedder, defer_dense=defer, skip=never_indexed(mem))
        # A full stat scan unless this Memory already ran one (the usual rules then say whether one is due): a
        # service start listed the store (a full scan) and then stat'ed every file again here (issue 49).
        mem._scan(force=mem._last_scan == 0.0)
        mem._synced_at_open = idx.sync(mem._by_id(), progress=True)
        mem._indexes = idx
    elif need_dense and mem._indexes.dense_deferred:
        embedder = mem.model_resolution().embedder
        mem._scan()
        mem._indexes.attach_embedder(embedder, mem._by_id())
    return mem._indexes


def never_indexed(mem: Any) -> Any:
    """What the indexes leave out (:class:`~plur.index.indexes.IndexSet`'s ``skip``): the turns an earlier version
    captured that only ask (:func:`plur.memory.filters.asks`; capture stores none now), unless the setting
    ``capture_rules`` is off."""
    from .filters import asks

    return asks if mem.settings.capture_rules else None


def index_state(mem: Any) -> dict[str, Any]:
    """Where the dense leg's catch-up stands: :meth:`plur.memory.Memory.index_state`, which documents it."""
    from ..index.catchup import queued

    idx = mem._indexes
    return {"open": idx is not None, "pending_dense": queued(idx) if idx is not None else 0,
            "catching_up": bool(mem.catchup.running)}


def catch_up(mem: Any, *, progress: bool = True, need_dense: bool = True) -> dict[str, int]:
    """Bring the indexes up to date with the store now: :meth:`plur.memory.Memory.catch_up`, which documents it."""
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
    """Embed what the last writes queued, bounded: :meth:`plur.memory.Memory.embed_queued`, which documents it."""
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


#: What the indexes keep under ``<home>/index/`` (a reindex removes these, and the temp folders of their saves);
#: the store's own files there (``manifest-store.json``, ``store-journal``, ``store-journal.prev``,
#: ``pg-feed.json``) are left alone.
INDEX_FILES = ("lexical", "dense", "manifest.json")


def drop_index_files(folder: Path) -> None:
    """Remove the saved indexes from ``folder`` (``<home>/index``), keeping the store's files there.

    Before, a reindex removed the whole folder: the store's manifest with it, so the next process to open the
    store read and parsed every engram file again (34 s of CPU at 100k engrams; the service start after a
    ``plur reindex`` waited for it), and the writer journal, so the next refresh was a full scan (issue 49).
    """
    if not folder.is_dir():
        return
    for p in folder.iterdir():
        if p.name in INDEX_FILES or p.name.startswith((".tmp-lexical-", ".tmp-dense-", ".old-")):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def reindex(mem: Any, *, progress: bool = True) -> dict[str, int]:
    """Rebuild both indexes from the store: :meth:`plur.memory.Memory.reindex`, which documents it."""
    from ..index.indexes import IndexSet, _atomic_write_json
    from ..index.rebuild import rebuild

    mem.catchup.stop()
    with mem._lock:
        mem._indexes = None
        folder = mem.home / "index"
        marker = folder / "reindexing.json"
        res = mem.model_resolution()
        if not marker.is_file():  # else: an interrupted reindex, resumed from its last save
            drop_index_files(folder)
            _atomic_write_json(marker, {"model": getattr(res.embedder, "identity", None)})
        mem._scan(force=True)
        idx = IndexSet(folder, mem.settings, res.embedder, skip=never_indexed(mem))
        mem._indexes = idx
        n, embedded = rebuild(idx, mem._by_id(), lambda: mem.catchup.now(idx, progress=progress,
                                                                          checkpoint_s=REINDEX_CHECKPOINT_S),
                              progress=progress)
        idx.dirty = True
        idx.save()
        marker.unlink(missing_ok=True)
    return {"engrams": n, "embedded": embedded}


def save(mem: Any) -> None:
    """Persist the indexes if they changed: :meth:`plur.memory.Memory.save`, which documents it."""
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
