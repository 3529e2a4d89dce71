"""Bounded catch-up of the dense leg, so a recall never waits on other processes' stream of writes.

:class:`~plur.index.indexes.IndexSet` queues new and changed engrams for embedding and embeds them
on the next dense recall. Under a stream of writers (other processes learning all the time) that
queue never empties, and a recall that embedded it all first would wait on every writer.
:func:`flush_bounded` embeds only the oldest ``limit`` queued engrams and leaves the rest queued:
the recall answers from the last consistent dense index plus those, the queued engrams are found
by the BM25 leg (indexed at once, it costs no model call), and each following recall embeds the
next batch. No store lock is held meanwhile (reads take none).
"""

from __future__ import annotations

from typing import Any


def flush_bounded(idx: Any, limit: int) -> int:
    """Embed at most ``limit`` queued engrams of ``idx`` (oldest first); the rest stay queued.

    Args:
        idx: an :class:`~plur.index.indexes.IndexSet`.
        limit: most engrams embedded in this call (setting ``recall_embed_batch``), >= 1.

    Returns:
        Number of engrams embedded.
    """
    pending: dict[str, Any] = idx._pending_dense
    if len(pending) <= limit:
        return int(idx.flush_dense())
    later = list(pending)[limit:]
    held = {k: pending.pop(k) for k in later}
    try:
        return int(idx.flush_dense(progress=False))
    finally:
        for k, v in held.items():
            pending.setdefault(k, v)


def queued(idx: Any) -> int:
    """Engrams waiting to be embedded into the dense leg of ``idx``."""
    return len(getattr(idx, "_pending_dense", {}) or {})


__all__ = ["flush_bounded", "queued"]
