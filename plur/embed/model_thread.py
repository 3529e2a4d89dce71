"""One thread runs every forward pass of the embedding models in a process.

Why: torch's CPU kernels parallelise with OpenMP, and OpenMP keeps one pool of worker threads per
*calling* thread. A service calls the model from many threads (the API's thread pool, the recall
worker, the dense catch-up); each caller then brings its own pool, and the idle pools' spinning
threads compete for the cores with the busy one. Measured on 2 cores (MiniLM, the 10k store of
``bench/doors/service.py``, p50 of 100 hybrid recalls with new queries): embedded on the thread
that first used torch 14.7 ms, on any other thread 21-24 ms, and the first thread drops to
32.6 ms once another has used torch; funnelled through this one thread, 16.6-18.3 ms from any
caller (the service's API recall went from 22 ms to the figure in ``bench/results/service.json``).

    >>> run(lambda x: x + 1, 1)          # runs on the model thread, returns 2
    2

A call made on the model thread itself runs inline (no deadlock on re-entry). A forked child gets
a thread of its own (the parent's does not exist there).

A second thread, the query thread (:func:`submit_query`), embeds a recall's query when the embedder serves
queries from ONNX Runtime (``queries_beside_model``): on the model thread the query waited for the document
batch in flight there (the dense catch-up of other processes' writes, 4 engrams, ~40 ms of CPU at load 5),
which made every recall of a new query among writers one of the slowest (issue 49). ONNX Runtime keeps its
thread pool in the session, not per calling thread, so the reason above does not apply to it.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
THREAD_NAME = "plur-model"
#: The thread of :func:`submit_query`.
QUERY_THREAD_NAME = "plur-query"


class _Lane:
    """One worker thread and its queue (started on first use; a daemon; a forked child starts its own)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.queue: "queue.SimpleQueue[Any] | None" = None
        self.pid = 0
        self.thread: threading.Thread | None = None

    def get(self) -> "queue.SimpleQueue[Any]":
        with self.lock:
            if self.queue is None or self.pid != os.getpid():
                self.queue = queue.SimpleQueue()
                self.thread = threading.Thread(target=_serve, args=(self.queue,), name=self.name, daemon=True)
                self.thread.start()
                self.pid = os.getpid()
            return self.queue

    def here(self) -> bool:
        return threading.current_thread() is self.thread and self.pid == os.getpid()

    def submit(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> "Future[T]":
        fut: Future[T] = Future()
        if self.here():  # on the lane itself: inline (no deadlock on re-entry)
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                fut.set_exception(exc)
            return fut
        self.get().put((fut, fn, args, kwargs))
        return fut


_model = _Lane(THREAD_NAME)
_query = _Lane(QUERY_THREAD_NAME)


def _serve(q: "queue.SimpleQueue[Any]") -> None:
    while True:
        item = q.get()
        if item is None:  # pragma: no cover - never sent; the thread is a daemon
            return
        fut, fn, args, kwargs = item
        if not fut.set_running_or_notify_cancel():
            continue
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            fut.set_exception(exc)


def submit(fn: Callable[..., T], *args: object, **kwargs: object) -> "Future[T]":
    """Start ``fn(*args, **kwargs)`` on the model thread; a :class:`~concurrent.futures.Future` of its result.

    Lets a caller do other work (the BM25 leg) while the query is embedded. On the model thread
    itself it runs inline and returns a finished future.
    """
    return _model.submit(fn, args, kwargs)


def submit_query(fn: Callable[..., T], *args: object, **kwargs: object) -> "Future[T]":
    """Start ``fn`` on the query thread, beside the model thread: for an embedder whose queries need no model
    thread (``queries_beside_model``: ONNX Runtime's session runs from any thread and has its own pool, and the
    query has a tokenizer of its own), so a recall's query is not queued behind a document batch (issue 49)."""
    return _query.submit(fn, args, kwargs)


def run(fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` on the model thread; its result, or its exception re-raised here."""
    return submit(fn, *args, **kwargs).result()


def drain(timeout_s: float | None = None) -> bool:
    """Wait until the work queued on the model and query threads so far has run (``True``), at most ``timeout_s``
    each.

    Interpreter exit calls it (:mod:`plur.prompt.exit`): a forward pass still running in native code
    when finalization starts aborts the process. ``True`` at once when neither thread runs here.
    """
    ok = True
    for lane in (_model, _query):
        with lane.lock:
            q = lane.queue if lane.pid == os.getpid() and lane.thread is not None and lane.thread.is_alive() else None
        if q is None or lane.here():
            continue
        fut: Future[None] = Future()
        q.put((fut, lambda: None, (), {}))
        try:
            fut.result(timeout_s)
        except Exception:  # noqa: BLE001 - a timeout: exit goes on
            ok = False
    return ok
