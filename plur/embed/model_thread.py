"""One thread runs every forward pass of the embedding models in a process.

Why: torch's CPU kernels parallelise with OpenMP, and OpenMP keeps one pool of worker threads per
*calling* thread. A service calls the model from many threads (the API's thread pool, the recall
worker, the dense catch-up); each caller then brings its own pool, and the idle pools' spinning
threads compete for the cores with the busy one. Measured on 2 cores (MiniLM, the 10k store of
``bench/bench_service.py``, p50 of 100 hybrid recalls with new queries): embedded on the thread
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
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
THREAD_NAME = "plur-model"

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_pid = 0
_thread: threading.Thread | None = None


def _get() -> ThreadPoolExecutor:
    global _executor, _pid
    with _lock:
        if _executor is None or _pid != os.getpid():
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME,
                                           initializer=_note_thread)
            _pid = os.getpid()
        return _executor


def _note_thread() -> None:
    global _thread
    _thread = threading.current_thread()


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
    return _get().submit(fn, *args, **kwargs)


def run(fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` on the model thread; its result, or its exception re-raised here."""
    if threading.current_thread() is _thread and _pid == os.getpid():
        return fn(*args, **kwargs)
    return _get().submit(fn, *args, **kwargs).result()
