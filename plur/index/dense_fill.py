"""The bulk embedding of an index set's dense queue: :meth:`plur.index.indexes.IndexSet.flush_dense`.

Each batch of queued engrams is chunked, looked up in the embedding cache (or embedded) and then added to the
dense leg, whose HNSW insert (usearch, every core, without the GIL) is most of a build from cached embeddings.
The insert of one batch runs on a worker thread while this thread chunks and looks up the next one, so the core
the insert does not use is not idle meanwhile: the serial half of a build (tokenizing to cut chunks, SQLite
reads, the row bookkeeping) overlaps the graph's half instead of following it (issue 49). The result is the same
index as one batch after another: batches are added in order, one at a time, and an engram's hashes are recorded
only once its vectors are in.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .chunking import dense_key
from .heap import release_free_heap

__all__ = ["flush_dense"]

#: Engrams whose queues are long enough for a worker thread (a recall's short queue is added inline).
PIPELINE_MIN = 1000


def _add(idx: Any, chunk: list[Any], vectors: Any, owners: Any) -> None:
    """Add one embedded batch to ``idx``'s dense leg and record its engrams as done (under the caller's lock)."""
    ids = [chunk[int(o)].id for o in owners]
    idx.dense.add(ids, vectors)
    if idx.dense.uses_hnsw:
        # Build the graph as soon as the index is big enough for it, so later batches go straight into the
        # graph instead of a second full copy of the vectors (peak RSS at 100k engrams).
        idx.dense.build()
    for e in chunk:
        idx.dense_hashes[e.id] = dense_key(e, idx.settings)
        idx._pending_dense.pop(e.id, None)
    idx.dirty = True


def flush_dense(idx: Any, embed: Callable[..., tuple[Any, Any]], *, progress: bool | None = None,
                checkpoint_s: float | None = None) -> int:
    """Embed ``idx``'s queued engrams into its dense leg; see :meth:`~plur.index.indexes.IndexSet.flush_dense`.

    Args:
        idx: the :class:`~plur.index.indexes.IndexSet` (its owner holds the lock that guards it).
        embed: :func:`~plur.index.chunking.embed_engrams` (passed in, so a test can interrupt it).
        progress: show a tqdm bar (default: when more than 2,000 are pending).
        checkpoint_s: save after every batch that ends this long after the last save (``None``: never mid-way).

    Returns:
        Engrams embedded.
    """
    pending = list(idx._pending_dense.values())
    show = progress if progress is not None else len(pending) > 2000
    batch = max(256, idx.settings.embed_batch_size * 8)
    starts: Any = range(0, len(pending), batch)
    if show:
        from tqdm import tqdm

        starts = tqdm(starts, desc=f"embedding ({idx.embedder.name})", unit="batch")
    pool = ThreadPoolExecutor(1, thread_name_prefix="plur-dense-add") if len(pending) >= PIPELINE_MIN else None
    inflight: Future[None] | None = None
    last = time.monotonic()
    bulk_reads = getattr(idx.embedder, "bulk_reads", None) if pool is not None else None
    scan = bulk_reads(len(pending)) if bulk_reads is not None else contextlib.nullcontext()
    try:
        scan.__enter__()  # the cache read in one range scan, not a lookup a chunk (plur.embed.bulk_vectors)
        for start in starts:
            chunk = pending[start:start + batch]
            vectors, owners = embed(idx.embedder, chunk, idx.settings)  # meanwhile the last batch goes in
            if inflight is not None:
                inflight.result()
                inflight = None
            if pool is None:
                _add(idx, chunk, vectors, owners)
            else:
                inflight = pool.submit(_add, idx, chunk, vectors, owners)
            if checkpoint_s is not None and time.monotonic() - last >= checkpoint_s:
                if inflight is not None:
                    inflight.result()
                    inflight = None
                idx.save()
                last = time.monotonic()
        if inflight is not None:
            inflight.result()
            inflight = None
    except KeyboardInterrupt:
        if inflight is not None:
            inflight.result()  # the batch already embedded goes in: the next open resumes after it
        idx.dirty = True
        idx.save()  # what is embedded so far
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
        scan.__exit__(None, None, None)
    if len(pending) >= PIPELINE_MIN:
        release_free_heap()  # the batches' texts, chunks and cached vectors (issue 30)
    return len(pending)
