"""A whole build of an index set (``plur reindex``): the dense leg filled while the lexical leg is built beside it.

A sync (:meth:`~plur.index.indexes.IndexSet.sync`) builds the lexical leg (the conversation context, every BM25
document's signature and terms) and then queues the dense leg, which is filled after it. At 100k engrams the
lexical leg is ~10 s of Python on one core, the other core idle, before the HNSW inserts (~36 s of CPU over both
cores) begin (issue 49). Here the dense leg is queued first and filled on the calling thread, as
:meth:`~plur.index.indexes.IndexSet.flush_dense` does, while the lexical leg is built on a thread of its own.

The two legs share nothing a build writes: the lexical thread touches the BM25 index, its hashes and the context;
the fill the dense index, its hashes and the queue. A save (a checkpoint of a long first-time embedding, or the
one an interrupt makes) waits for the lexical thread (:attr:`~plur.index.indexes.IndexSet.lexical_build`).
While the lexical thread runs, the HNSW inserts use one thread: with two busy Python threads on a two-core
machine a second usearch thread only waits (usearch splits each batch evenly between its threads, so the one that
shares a core with Python holds up the batch); once the lexical leg is done the inserts use every core again.
The index is the one a sync and then a flush build: the same engrams queued in the same order (oldest first).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import dense_fill
from .chunking import dense_key

__all__ = ["rebuild"]


def rebuild(idx: Any, engrams: Mapping[str, Any], fill: Callable[[], int], *, progress: bool = False) -> tuple[int, int]:
    """Bring ``idx`` in line with ``engrams`` and fill its dense leg, the lexical leg built on another thread.

    Args:
        idx: the :class:`~plur.index.indexes.IndexSet` (its owner holds the lock that guards it).
        engrams: id -> engram, all statuses (the store now).
        fill: embeds the dense queue now and returns how many engrams it embedded
            (:meth:`plur.index.catchup.DenseCatchUp.now`); runs on this thread, so an interrupt reaches it.
        progress: progress bars (the fill's; the lexical leg's only when there is no dense leg to fill).

    Returns:
        ``(indexed, embedded)``: engrams (re)indexed or removed in the lexical leg (as ``sync`` returns) and
        engrams embedded into the dense leg.
    """
    kept = idx._kept(engrams) if idx.dense is not None and not idx.dense_deferred else {}
    if len(kept) < dense_fill.PIPELINE_MIN:  # no dense leg, or too few engrams for a thread to pay
        indexed = idx.sync(engrams, progress=progress)
        return indexed, fill()
    ordered = {e.id: e for e in sorted(kept.values(), key=lambda e: (e.created, e.id))}  # as sync's add queues them
    idx._sync_dense(ordered, {eid: dense_key(e, idx.settings) for eid, e in ordered.items()})
    del ordered
    dense, threads = idx.dense, idx.dense.num_threads
    with ThreadPoolExecutor(1, thread_name_prefix="plur-lexical") as pool:
        dense.num_threads = 1
        build = pool.submit(idx.sync, engrams, progress=False, dense=False)
        build.add_done_callback(lambda _: setattr(dense, "num_threads", threads))
        idx.lexical_build = build
        try:
            embedded = fill()
        finally:
            try:
                indexed = build.result()
            finally:
                idx.lexical_build = None
                dense.num_threads = threads
    return indexed, embedded
