"""One stat pass over ``<home>/engrams/``: the engram files with their stat keys, and plur's temp files.

:class:`plur.store.mirror.FolderMirror` compares these ``(mtime_ns, size, inode)`` keys with what it
knows to re-read only changed files.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .atomic import TMP_PREFIX


#: ``(st_mtime_ns, st_size, st_ino)`` of a file: what tells the store it changed.
StatKey = tuple[int, int, int]


def scan_folder(root: Path) -> tuple[dict[str, StatKey], list[str]]:
    """``({file name: (mtime_ns, size, inode)}, [temp file names])`` of the engram folder ``root``
    (empty when it is missing).

    Only regular ``*.yaml`` files not starting with ``.`` count; a file that vanishes mid-scan is skipped.
    Only the three numbers are kept, not the ``os.stat_result``: ~160 bytes a file instead of ~430,
    which at 100k files is 27 MiB less at the peak of a full scan (issue 30).

    Raises:
        StoreError: the folder exists but cannot be read (naming it and the fix).
    """
    files: dict[str, StatKey] = {}
    temps: list[str] = []
    try:
        it = os.scandir(root)
    except FileNotFoundError:
        return files, temps
    except OSError as exc:
        raise StoreError(f"cannot read the engram folder {root} ({exc}); check its permissions") from None
    with it:
        for e in it:
            n = e.name
            if n.startswith("."):
                if n.startswith(TMP_PREFIX):
                    temps.append(n)
                continue
            if not n.endswith(".yaml"):
                continue
            try:
                st = e.stat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                files[n] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return files, temps


def scan_folder_while(root: Path, work: Callable[[], Any]) -> tuple[dict[str, StatKey], list[str]]:
    """:func:`scan_folder` on a thread while this thread runs ``work()`` (e.g. parsing the store manifest).

    The stat calls release the GIL, so the two overlap: ~30 ms of a cold 10k-engram ``plur recall --mode
    bm25`` (``bench/doors/service.py``). Either one's error is raised here (``work``'s first).
    """
    out: dict[str, Any] = {}

    def scan() -> None:
        try:
            out["result"] = scan_folder(root)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = exc

    t = threading.Thread(target=scan, name="plur-store-scan", daemon=True)
    t.start()
    try:
        work()
    finally:
        t.join()
    if "error" in out:
        raise out["error"]
    return out["result"]


@dataclass(frozen=True)
class Prescan:
    """The stat pass of a full refresh, taken without any lock (:meth:`plur.store.mirror.FolderMirror.prescan`).

    Attributes:
        tail: the writer journal's position before the pass. files, temps: :func:`scan_folder`'s result.
        started_ns: wall clock (``time.time_ns``) when the pass began: an entry read after it is newer than it.
    """

    tail: Any
    files: dict[str, StatKey]
    temps: list[str]
    started_ns: int


def stat_pass(root: Path, journal: Any) -> Prescan:
    """:func:`scan_folder` of ``root`` with the time it began and ``journal``'s position before it (no lock taken)."""
    started = time.time_ns()
    tail = journal.read_tail(False)
    files, temps = scan_folder(root)
    return Prescan(tail, files, temps, started)


__all__ = ["Prescan", "StatKey", "scan_folder", "scan_folder_while", "stat_pass"]
