"""Catch-up of the dense leg: the one mechanism that embeds what the indexes queued, in two modes.

* bounded (:meth:`DenseCatchUp.before_search`, every recall): a short queue now, a long one in the
  background, so a recall never waits on other processes' stream of writes;
* now (:meth:`DenseCatchUp.now`: ``Memory.catch_up`` before a CLI recall, ``reindex``, benchmarks):
  the whole queue at once, with a progress bar when asked.

Why the bounded mode exists:

:class:`~plur.index.indexes.IndexSet` queues new and changed engrams for embedding. Under a stream
of writers (other processes learning all the time) that queue never empties, and a recall that
embedded it all first would wait on every writer (issue 14: 70-98 s per recall with 4 writers).

:class:`DenseCatchUp` splits the work: a recall embeds a small queue itself (at most ``sync_limit``
engrams, setting ``recall_embed_batch``: what one process just learned is found by meaning at its
next recall); a longer queue goes to one background thread that embeds it in small batches
*outside* the caller's lock and applies each batch under it, while recalls answer from the last
consistent dense index -- the queued engrams are found by the BM25 leg, indexed at once. No store
lock is held at any point (reads take none). A tokenizer is not safe to share between threads: a
background batch (chunking, tokenizing, the forward pass) runs whole on :mod:`plur.embed.model_thread`
(``run_on_model``),
where a recall's query is embedded too, and :attr:`DenseCatchUp.embed_lock` keeps it apart from
:meth:`DenseCatchUp.now` on another thread. A recall takes no lock for its query: it waits at most for the
one small batch in flight on the model thread. Under a stream of writes (a queue met at recall after
recall) a recall embeds nothing itself, however short the queue (:data:`STREAM_S`).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any


log = logging.getLogger("plur.index.catchup")
#: Engrams per background embedding batch (a recall's query waits at most one batch for the model; with 8 a
#: recall waited 54 ms on average for the model under 4 writers on 2 cores at load 11, issue 49).
BACKGROUND_BATCH = 4
#: Seconds after a recall last found a queue during which the writes count as a stream: a recall then
#: hands even a short queue to the background thread instead of embedding it itself (issue 49: under 4
#: writers x 10 engrams/s nearly every recall found a few new engrams and embedded them first).
STREAM_S = 2.0


def queued(idx: Any) -> int:
    """Engrams waiting to be embedded into the dense leg of ``idx``."""
    return len(getattr(idx, "_pending_dense", None) or {})


class DenseCatchUp:
    """Keeps one :class:`~plur.index.indexes.IndexSet`'s dense leg catching up; see the module docstring.

    Args:
        lock: the lock that guards the index set (the Memory's); held only to take and apply batches.
        sync_limit: a queue this long or shorter is embedded by the recall itself.
    """

    def __init__(self, lock: Any, sync_limit: int, run_on_model: Any = None) -> None:
        self.lock = lock
        #: ``run_on_model(fn, *args)``: where a background batch runs whole (the Memory passes
        #: :func:`plur.embed.model_thread.run`; ``None``: on the catch-up thread itself)
        self.run_on_model = run_on_model if run_on_model is not None else (lambda fn, *args: fn(*args))
        self.sync_limit = int(sync_limit)
        self.embed_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._stream_until = 0.0
        #: queued ids a store refresh brought (other processes' writes), as :meth:`note_outside` said
        self._outside: set[str] = set()
        #: seconds a met queue marks a stream of writes (:data:`STREAM_S`)
        self.stream_s = STREAM_S

    def before_search(self, idx: Any) -> None:
        """Called by a recall (holding :attr:`lock`): embed a short queue now, else hand it to the thread.

        A queue met again within :data:`STREAM_S` of the last one is a stream of writes (other processes
        learning all the time): it goes to the background thread however short, so the recall does not wait
        for embedding; BM25 finds those engrams meanwhile. After a quiet spell the first short queue is
        embedded by the recall itself (what another process just learned ranks by meaning at once).
        """
        n = queued(idx)
        if n == 0 or len(self._outside) > 4 * self.sync_limit + 1024:  # keep the set to what is queued
            self._outside.intersection_update(getattr(idx, "_pending_dense", None) or ())
        if n == 0:
            return
        streaming = False
        if n <= self.sync_limit and self._outside.issuperset(idx._pending_dense):  # only other processes' writes
            now = time.monotonic()
            streaming, self._stream_until = now < self._stream_until, now + self.stream_s
        if n <= self.sync_limit and not self.running and not streaming:
            self.now(idx)
            return
        self._start(idx)

    def note_outside(self, ids: list[str]) -> None:
        """Engrams a store refresh found written by another process, about to be queued (a short list only:
        a long one goes to the background thread anyway). This Memory's own writes are never streamed."""
        if len(ids) <= self.sync_limit:
            self._outside.update(ids)

    def now(self, idx: Any, *, progress: bool = False, checkpoint_s: float | None = None) -> int:
        """Embed the whole queue of ``idx`` now (the caller holds :attr:`lock`); the "now" mode.

        A background batch in flight finishes first (the model is taken through :attr:`embed_lock`);
        its vectors are then dropped by :meth:`_apply`, since the engrams are no longer queued.

        Args:
            progress: show a tqdm bar on stderr while embedding.
            checkpoint_s: save the indexes this often meanwhile (see :meth:`IndexSet.flush_dense`).

        Returns:
            Number of engrams embedded.
        """
        if queued(idx) == 0:
            return 0
        with self.embed_lock:
            return int(idx.flush_dense(progress=progress, checkpoint_s=checkpoint_s))

    @property
    def running(self) -> bool:
        """A background catch-up is in progress."""
        return self._thread is not None and self._thread.is_alive()

    def _start(self, idx: Any) -> None:
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(idx,), name="plur-dense-catchup", daemon=True)
        self._thread.start()

    def _run(self, idx: Any) -> None:
        from .chunking import embed_engrams  # the background path only: a CLI that lists or learns never needs it

        try:
            while not self._stop.is_set():
                with self.lock:
                    batch = list(idx._pending_dense.items())[:BACKGROUND_BATCH]
                if not batch:
                    return
                with self.embed_lock:  # against now() on another thread; the work itself runs on the model thread
                    vectors, owners = self.run_on_model(embed_engrams, idx.embedder, [e for _, e in batch],
                                                        idx.settings)
                with self.lock:
                    self._apply(idx, batch, vectors, owners)
        except Exception as exc:  # noqa: BLE001 - the next recall retries; BM25 still finds the engrams
            log.warning("background embedding stopped (%s); the next recall retries", exc)

    @staticmethod
    def _apply(idx: Any, batch: list[tuple[str, Any]], vectors: Any, owners: Any) -> None:
        """Add the vectors of engrams still queued unchanged (a removal or an edit meanwhile wins)."""
        import numpy as np

        from .chunking import dense_key

        current = [idx._pending_dense.get(i) is e for i, e in batch]
        rows = np.asarray([current[int(o)] for o in owners], dtype=bool)
        if rows.any():
            ids = [batch[int(o)][0] for o in owners[rows]]
            idx.dense.add(ids, vectors[rows])
            if idx.dense.uses_hnsw:
                idx.dense.build()
        for (i, e), ok in zip(batch, current):
            if ok:
                idx.dense_hashes[i] = dense_key(e, idx.settings)
                idx._pending_dense.pop(i, None)
        idx.dirty = True

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the background catch-up to finish; True when nothing is running any more."""
        t = self._thread
        if t is not None:
            t.join(timeout_s)
        return not self.running

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask the background thread to stop after its batch, and wait for it (at close)."""
        self._stop.set()
        self.wait(timeout_s)


__all__ = ["BACKGROUND_BATCH", "DenseCatchUp", "queued"]
