"""Give the C heap's free pages back to the system after a bulk index operation (glibc ``malloc_trim``).

A bulk build frees large transients (a batch's documents and token lists, the CSR parts of a save, a batch
of vectors read from the embedding cache); glibc keeps freed memory in the process's heap, where it still
counts in RSS, unless it sits at the very top of the heap. ``malloc_trim(0)`` returns every free page.
Measured at 100k engrams (``bench/speed/memory.py`` with a trim after each phase): RSS -20 MiB after the
BM25 leg, -11 after the dense leg, -25 after the save; the peak of the whole build 593 -> 576 MiB.
A no-op where there is no glibc (macOS, musl); costs a few ms, so it runs only after bulk work.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

__all__ = ["release_free_heap"]

_TRIM: Any = None


def release_free_heap() -> bool:
    """Call glibc's ``malloc_trim(0)``; True when it ran (Linux with glibc), False elsewhere."""
    global _TRIM
    if _TRIM is None:
        _TRIM = False
        if sys.platform.startswith("linux"):
            try:
                _TRIM = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
                _TRIM.argtypes, _TRIM.restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError):  # musl and others have no malloc_trim
                _TRIM = False
    if _TRIM is False:
        return False
    _TRIM(0)
    return True
