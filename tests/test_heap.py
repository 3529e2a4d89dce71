"""plur.index.heap: freed C-heap memory is given back to the system after bulk index work (issue 30)."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest

from plur.index.heap import release_free_heap


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc_trim")
def test_freed_heap_pages_leave_the_process() -> None:
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size = 64 * 1024  # below glibc's mmap threshold: these come from the heap, as most bulk transients do
    blocks = [libc.malloc(size) for _ in range(3200)]  # 200 MiB
    for b in blocks:
        ctypes.memset(b, 1, size)
    keep = blocks.pop()  # pins the top of the heap, so glibc's own trimming at free() cannot help
    for b in blocks:
        libc.free(b)
    before = _rss_mib()
    assert release_free_heap() is True
    after = _rss_mib()
    libc.free(keep)
    assert before - after > 150, (before, after)
