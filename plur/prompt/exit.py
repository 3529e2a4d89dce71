"""Close every live :class:`~plur.prompt.worker.RecallWorker` when the interpreter exits, first.

A recall worker's threads are daemons (a host that forgets ``close()`` must still exit). A daemon
thread that keeps working while the interpreter shuts down fails in odd ways: a lazy import that
registers an exit hook (``concurrent.futures`` does, and torch imports it) raises "can't register
atexit after shutdown", and a stats write after :class:`~plur.memory.Memory`'s :mod:`atexit`
handler closed stats.db fails. So live workers are closed by the earliest hook Python offers,
``threading._register_atexit`` (the one ``concurrent.futures`` itself uses): it runs when
interpreter shutdown starts, before non-daemon threads are joined and before every :mod:`atexit`
handler. A worker still warming up (opening indexes, loading the model) has nothing to finish and
is not waited for; a warm one gets :data:`EXIT_WAIT_S` to write its queued injection rows. A
recall still in flight then finishes or is frozen with its daemon thread; its failure is logged at
debug level, since nobody waits for it any more.
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

_live: "weakref.WeakSet[Any]" = weakref.WeakSet()
_lock = threading.Lock()
_registered = False
_exiting = False


def _close_live_workers() -> None:
    global _exiting
    _exiting = True
    for worker in list(_live):
        try:
            worker.close(timeout_s=EXIT_WAIT_S if worker._ready.is_set() else 0.0)
        except Exception as exc:  # noqa: BLE001 - exit must go on
            log.debug("closing a recall worker at exit failed: %s", exc)


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
