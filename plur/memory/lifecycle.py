"""Closing a :class:`~plur.memory.Memory`: stop the background catch-up, save the indexes, close
stats.db and the store; every Memory still open is closed (indexes saved) at interpreter exit.
"""

from __future__ import annotations

import atexit
import logging
import weakref
from typing import Any

log = logging.getLogger("plur")

#: Memories not yet closed (closed at interpreter exit).
_OPEN: "weakref.WeakSet[Any]" = weakref.WeakSet()


def register(mem: Any) -> None:
    """Close ``mem`` (saving its indexes) at interpreter exit unless it is closed before."""
    _OPEN.add(mem)


def on_close(mem: Any, callback: Any) -> None:
    """Run ``callback()`` first thing in :func:`close`: :meth:`plur.memory.Memory.on_close`, which documents it."""
    mem.__dict__.setdefault("_on_close", []).append(callback)


def close(mem: Any) -> None:
    """Save indexes and close stats.db and the store: :meth:`plur.memory.Memory.close`, which documents it."""
    if mem._closed:
        return
    for callback in mem.__dict__.pop("_on_close", []):
        callback()
    mem.catchup.stop()
    try:
        if not mem.__dict__.get("_home_gone"):
            mem.save()
    finally:
        mem._closed = True
        if mem._stats is not None:
            mem._stats.close()
        mem.store.close()
        _OPEN.discard(mem)


def keep_home_unwritten(mem: Any) -> None:
    """Save no index into a deleted home: :meth:`plur.memory.Memory.keep_home_unwritten`, which documents it."""
    mem.__dict__["_home_gone"] = True


@atexit.register
def _save_open_memories() -> None:  # pragma: no cover - runs at interpreter exit
    for mem in list(_OPEN):
        try:
            mem.close()
        except Exception as exc:  # noqa: BLE001
            log.warning("could not save indexes of %s at exit: %s", mem.home, exc)
