"""Give the C heap's free pages back to the system after a bulk index operation (glibc ``malloc_trim``).

A bulk build frees large transients (a batch's documents and token lists, the CSR parts of a save, a batch
of vectors read from the embedding cache); glibc keeps freed memory in the process's heap, where it still
counts in RSS, unless it sits at the very top of the heap. ``malloc_trim(0)`` returns every free page.
Measured at 100k engrams (``bench/speed/memory.py`` with a trim after each phase): RSS -20 MiB after the
BM25 leg, -11 after the dense leg, -25 after the save; the peak of the whole build 593 -> 576 MiB.
A no-op where there is no glibc (macOS, musl); costs a few ms, so it runs only after bulk work.

:func:`limit_arenas` caps glibc's malloc arenas for a long-lived process with threads (the service): glibc gives
each thread that meets a locked arena one of its own, up to 8 per core, and memory freed in one arena serves
only that arena's later requests. A 100k-engram service (HTTP, recall, capture threads) after the scale bench's
recalls and captures: peak 639 -> 622 MiB, RSS 639 -> 611 MiB with 2 arenas (one run each, load ~9).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

__all__ = ["limit_arenas", "release_free_heap"]

_TRIM: Any = None
#: glibc's ``mallopt`` parameter number of ``M_ARENA_MAX`` (malloc.h).
_M_ARENA_MAX = -8
#: Arenas a serving process keeps (:func:`limit_arenas`): the main one and one its threads share.
SERVICE_ARENAS = 2


def _libc() -> Any:
    """glibc's ``libc`` (Linux), or None where it cannot be loaded."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def limit_arenas(count: int = SERVICE_ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``count`` (``mallopt(M_ARENA_MAX)``), before the process starts threads.

    Returns:
        True when set (Linux with glibc); False elsewhere (musl and macOS have no such arenas) or when refused.
    """
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, max(1, int(count))))


def release_free_heap() -> bool:
    """Call glibc's ``malloc_trim(0)``; True when it ran (Linux with glibc), False elsewhere."""
    global _TRIM
    if _TRIM is None:
        _TRIM = getattr(_libc(), "malloc_trim", None) or False  # musl and others have no malloc_trim
        if _TRIM is not False:
            _TRIM.argtypes, _TRIM.restype = [ctypes.c_size_t], ctypes.c_int
    if _TRIM is False:
        return False
    _TRIM(0)
    return True
