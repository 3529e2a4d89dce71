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

_lock = threading.Lock()
_queue: "queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None] | None" = None
_pid = 0
_thread: threading.Thread | None = None


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


def _get() -> "queue.SimpleQueue[Any]":
    """The model thread's queue (started on first use; a daemon, so it never holds up interpreter exit)."""
    global _queue, _pid, _thread
    with _lock:
        if _queue is None or _pid != os.getpid():
            _queue = queue.SimpleQueue()
            _thread = threading.Thread(target=_serve, args=(_queue,), name=THREAD_NAME, daemon=True)
            _thread.start()
            _pid = os.getpid()
        return _queue


def submit(fn: Callable[..., T], *args: object, **kwargs: object) -> "Future[T]":
    """Start ``fn(*args, **kwargs)`` on the model thread; a :class:`~concurrent.futures.Future` of its result.

    Lets a caller do other work (the BM25 leg) while the query is embedded. On the model thread
    itself it runs inline and returns a finished future.
    """
    if threading.current_thread() is _thread and _pid == os.getpid():
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            done.set_exception(exc)
        return done
    fut: Future[T] = Future()
    _get().put((fut, fn, args, kwargs))
    return fut


def run(fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` on the model thread; its result, or its exception re-raised here."""
    return submit(fn, *args, **kwargs).result()


def drain(timeout_s: float | None = None) -> bool:
    """Wait until the work queued on the model thread so far has run (``True``), at most ``timeout_s``.

    Interpreter exit calls it (:mod:`plur.prompt.exit`): a forward pass still running in native code
    when finalization starts aborts the process. ``True`` at once when no model thread runs here.
    """
    with _lock:
        q = _queue if _pid == os.getpid() and _thread is not None and _thread.is_alive() else None
    if q is None or threading.current_thread() is _thread:
        return True
    fut: Future[None] = Future()
    q.put((fut, lambda: None, (), {}))
    try:
        fut.result(timeout_s)
    except Exception:  # noqa: BLE001 - a timeout: exit goes on
        return False
    return True

