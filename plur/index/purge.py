"""Erase engrams from the saved indexes on disk, without an embedding model (for ``forget``).

``forget`` must leave no trace of a statement under ``<home>``; a process that never opened the
indexes (``plur forget`` in a fresh process) still has the statement's terms in the saved BM25
vocabulary and postings and its vectors in the saved dense rows. :func:`purge_saved` loads each
saved leg, drops the ids (dead BM25 terms are not written back, dead dense rows are written as zeros and
the graph's removed nodes scrubbed: :func:`erase_dense`) and saves
it again, then drops the ids from ``manifest.json``. A leg that cannot be read is deleted instead:
the indexes are a cache of the engram files and are rebuilt from them.
"""

from __future__ import annotations

import json
import logging
import shutil
from contextlib import suppress
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..errors import StoreError

log = logging.getLogger("plur.index.purge")

#: Above this many removed nodes per live node, a forget rebuilds the HNSW graph instead of scrubbing it.
SCRUB_MAX_SHARE = 0.25


def erase_dense(dense: Any) -> None:
    """Make the vectors of rows removed from an in-memory :class:`~plur.index.dense.DenseIndex` unrecoverable from its
    next save: dead rows are saved as zeros, and the HNSW graph's removed nodes are scrubbed
    (:meth:`plur.index.graph.Graph.scrub`). The dead rows are compacted away and the graph rebuilt instead (49 s at
    147k vectors, against a save) when the scrub cannot be verified, or when the graph holds more removed nodes than
    :data:`SCRUB_MAX_SHARE` of its live ones (a bulk delete; an update's new rows reuse the freed slots): inserting that many
    placeholders costs a good part of a rebuild and leaves the graph as many dead nodes to walk through."""
    if dense is None or getattr(dense, "_n", 0) == getattr(dense, "_live_rows", 0):
        return
    with dense._lock:
        graph = dense._graph
        if graph is None:
            return
        if graph.free_slots() > SCRUB_MAX_SHARE * max(len(graph), 1):
            dense._compact()
        elif not graph.scrub():
            log.warning("the HNSW graph did not reuse its freed slots; rebuilding it to erase the removed vectors")
            dense._compact()


def purge_saved(folder: Path, ids: Collection[str]) -> None:
    """Remove ``ids`` from the saved indexes in ``folder`` (``<home>/index``); see the module docstring.

    Args:
        folder: the index folder.
        ids: engram ids to erase.
    """
    folder = Path(folder)
    ids = set(ids)
    manifest_path = folder / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = None
    if not isinstance(manifest, dict):
        manifest = None
    try:
        _purge_lexical(folder / "lexical", ids)
        _purge_dense(folder / "dense", ids)
        if manifest is not None:
            for leg in ("lexical", "dense"):
                if isinstance(manifest.get(leg), dict):
                    for i in ids:
                        manifest[leg].pop(i, None)
            from .indexes import _atomic_write_json

            _atomic_write_json(manifest_path, manifest)
    except (OSError, StoreError) as exc:   # a full disk: rewriting needs space, deleting frees it (issue 38)
        drop_saved(folder, f"could not rewrite them without the forgotten engrams ({exc})")


def drop_saved(folder: Path, why: str) -> None:
    """Delete the saved indexes in ``folder`` (they are caches: rebuilt from the store on the next recall)."""
    log.warning("saved indexes in %s removed: %s; they are rebuilt from the store on the next recall", folder, why)
    for leg in ("lexical", "dense"):
        shutil.rmtree(Path(folder) / leg, ignore_errors=True)
    with suppress(OSError):
        (Path(folder) / "manifest.json").unlink()


def _purge_lexical(path: Path, ids: set[str]) -> None:
    if not path.is_dir():
        return
    from .lexical import BM25Index

    index = BM25Index.load(path)
    if index is None:
        shutil.rmtree(path, ignore_errors=True)
        return
    if not any(i in index for i in ids):
        return
    index.remove([i for i in ids if i in index])
    index.save(path)  # the export drops terms and postings of removed documents


def _purge_dense(path: Path, ids: set[str]) -> None:
    meta_path = path / "meta.json"
    if not path.is_dir():
        return
    try:
        dims = int(json.loads(meta_path.read_text(encoding="utf-8"))["dims"])
        from .dense import DenseIndex

        index = DenseIndex.load(path, dims=dims)
    except Exception as exc:  # noqa: BLE001 - unreadable: delete, it is rebuilt from the store
        log.warning("dense index %s unreadable (%s); removed, it is rebuilt on the next recall", path, exc)
        shutil.rmtree(path, ignore_errors=True)
        return
    if not any(i in index for i in ids):
        return
    identity = getattr(index, "identity", None) or None
    index.remove([i for i in ids if i in index])
    erase_dense(index)
    index.save(path, identity)


__all__ = ["SCRUB_MAX_SHARE", "erase_dense", "purge_saved"]
