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


_ARENAS_CHILD = r"""
import ctypes, sys, tempfile, threading
from plur.index.heap import limit_arenas
set_ = limit_arenas(2) if sys.argv[1] == "limit" else None
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
start, held = threading.Barrier(8), threading.Barrier(9)
def work():
    start.wait()  # all eight allocate at once, so each meets the others' arenas locked
    blocks = [libc.malloc(4096) for _ in range(2000)]
    held.wait(); held.wait()
    for b in blocks:
        libc.free(b)
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
held.wait()
with tempfile.TemporaryFile("w+") as fh:
    libc.fdopen.restype, libc.fdopen.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_char_p]
    libc.fflush.argtypes = [ctypes.c_void_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    import os
    stream = libc.fdopen(os.dup(fh.fileno()), b"w")
    libc.malloc_info(0, stream)
    libc.fflush(stream)
    fh.seek(0)
    print(set_, fh.read().count("<heap nr="))
held.wait()
for t in threads:
    t.join()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc arenas")
def test_a_serving_process_keeps_its_threads_heap_in_two_arenas(tmp_path: Path) -> None:
    """Issue 49: glibc gives a thread that meets a locked arena one of its own (up to 8 per core), and memory freed
    in one arena serves only that arena: the service (HTTP, recall, capture threads) kept more RSS than the same
    work in one thread. :func:`plur.index.heap.limit_arenas` caps them; the service calls it before any thread."""
    import subprocess

    import plur.service.runner as runner
    from plur.index import heap

    def arenas(mode: str) -> tuple[str, int]:
        out = subprocess.run([sys.executable, "-c", _ARENAS_CHILD, mode], capture_output=True, text=True,
                             check=True).stdout.split()
        return out[0], int(out[1])

    assert arenas("limit") == ("True", 2)
    assert arenas("free")[1] > 2  # without the cap the eight threads spread over more arenas

    called: list[int] = []

    class Stop(Exception):
        pass

    def held(home: Path) -> None:
        raise Stop  # the lock is the service's first step: nothing else runs before it in this test

    monkeypatch = pytest.MonkeyPatch()
    try:
        monkeypatch.setattr(heap, "limit_arenas", lambda count=2: called.append(count) or True)
        monkeypatch.setattr(runner.files, "hold_service_lock", held)
        with pytest.raises(Stop):
            runner.run(tmp_path / "home")
    finally:
        monkeypatch.undo()
    assert called == [2]
