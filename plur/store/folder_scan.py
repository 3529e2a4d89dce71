"""One stat pass over ``<home>/engrams/``: the engram files with their ``stat`` results, and plur's temp files.

:class:`plur.store.mirror.FolderMirror` compares these ``(mtime_ns, size, inode)`` keys with what it
knows to re-read only changed files.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .atomic import TMP_PREFIX


def scan_folder(root: Path) -> tuple[dict[str, os.stat_result], list[str]]:
    """``({file name: stat}, [temp file names])`` of the engram folder ``root`` (empty when it is missing).

    Only regular ``*.yaml`` files not starting with ``.`` count; a file that vanishes mid-scan is skipped.

    Raises:
        StoreError: the folder exists but cannot be read (naming it and the fix).
    """
    files: dict[str, os.stat_result] = {}
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
                files[n] = st
    return files, temps


def scan_folder_while(root: Path, work: Callable[[], Any]) -> tuple[dict[str, os.stat_result], list[str]]:
    """:func:`scan_folder` on a thread while this thread runs ``work()`` (e.g. parsing the store manifest).

    The stat calls release the GIL, so the two overlap: ~30 ms of a cold 10k-engram ``plur recall --mode
    bm25`` (``bench/bench_service.py``). Either one's error is raised here (``work``'s first).
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


__all__ = ["scan_folder", "scan_folder_while"]
