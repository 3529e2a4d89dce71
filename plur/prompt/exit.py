"""Close every live :class:`~plur.prompt.worker.RecallWorker` when the interpreter exits, first.

A recall worker's threads are daemons (a host that forgets ``close()`` must still exit). A daemon
thread that keeps working while the interpreter shuts down fails in odd ways: a lazy import that
registers an exit hook (``concurrent.futures`` does, and torch imports it) raises "can't register
atexit after shutdown", and a stats write after :class:`~plur.memory.Memory`'s :mod:`atexit`
handler closed stats.db fails. So live workers are closed by the earliest hook Python offers,
``threading._register_atexit`` (the one ``concurrent.futures`` itself uses): it runs when
interpreter shutdown starts, before non-daemon threads are joined and before every :mod:`atexit`
handler. A warm worker gets :data:`EXIT_WAIT_S` to write its queued injection rows; a recall still
in flight then finishes or is frozen with its daemon thread; its failure is logged at debug level,
since nobody waits for it any more.

A worker still warming up is waited for until its current model step returns (:data:`EXIT_NATIVE_WAIT_S`
at most; it stops before the next one), and so is the model thread's queued work
(:func:`plur.embed.model_thread.drain`). Why: a daemon thread inside a native call that released the GIL
(ONNX Runtime building its session, a torch forward pass) tries to take the GIL back when that call
returns; during finalization CPython 3.11-3.13 then ends the thread with ``pthread_exit``, whose forced
unwind crosses the extension's ``noexcept`` C++ frame (pybind11's GIL guard) and the C++ runtime aborts
the process: ``terminate called without an active exception``, exit 134, after a script that had
finished its work (the README's pydantic-ai example, every run). CPython 3.14 parks such threads
instead (gh-87135); on earlier versions no native call may be running when finalization starts.
"""

from __future__ import annotations

import logging
import sys
import threading
import weakref
from typing import Any

log = logging.getLogger("plur.prompt.worker")

#: Longest wait for each thread of a warm worker at interpreter exit, seconds.
EXIT_WAIT_S = 2.0
#: Longest wait at interpreter exit for a warm-up's model step and the model thread's queued work, seconds
#: (a cold model load on a loaded machine; ending the process inside one aborts it, see above).
EXIT_NATIVE_WAIT_S = 120.0

_live: "weakref.WeakSet[Any]" = weakref.WeakSet()
_lock = threading.Lock()
_registered = False
_exiting = False


def _close_live_workers() -> None:
    global _exiting
    _exiting = True
    workers = list(_live)
    for worker in workers:
        try:
            worker.close(timeout_s=EXIT_WAIT_S if worker._ready.is_set() else 0.0)
        except Exception as exc:  # noqa: BLE001 - exit must go on
            log.debug("closing a recall worker at exit failed: %s", exc)
    for worker in workers:  # no native model call may still run when finalization starts
        warmer = getattr(worker, "_warmer", None)
        if warmer is not None and warmer.is_alive() and warmer is not threading.current_thread():
            warmer.join(EXIT_NATIVE_WAIT_S)
    drain = getattr(sys.modules.get("plur.embed.model_thread"), "drain", None)
    if drain is not None:
        drain(EXIT_NATIVE_WAIT_S)


def track(worker: Any) -> None:
    """Close ``worker`` at interpreter exit unless it was closed before (registers the hook once)."""
    global _registered
    with _lock:
        if not _registered:
            _registered = True
            try:
                threading._register_atexit(_close_live_workers)  # type: ignore[attr-defined]
            except (AttributeError, RuntimeError):  # pragma: no cover - non-CPython, or already exiting
                import atexit

                atexit.register(_close_live_workers)
        _live.add(worker)


def untrack(worker: Any) -> None:
    """``worker`` was closed: nothing to do for it at exit."""
    _live.discard(worker)


def shutting_down() -> bool:
    """Whether the interpreter is exiting, so a failing daemon recall is expected, not news."""
    return _exiting or bool(getattr(threading, "_SHUTTING_DOWN", False)) or sys.is_finalizing()
