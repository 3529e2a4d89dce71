"""One stat pass over ``<home>/engrams/``: the engram files with their stat keys, and plur's temp files.

:class:`plur.store.mirror.FolderMirror` compares these ``(mtime_ns, size, inode)`` keys with what it
knows to re-read only changed files. The folder holds month folders (``YYYY-MM/``) and, from older plur,
files of its own (:mod:`plur.store.layout`); a file is named by its path under the folder
(``2026-12/<id>.yaml`` or ``<id>.yaml``).
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
from .layout import MONTH_RE


#: ``(st_mtime_ns, st_size, st_ino)`` of a file: what tells the store it changed.
StatKey = tuple[int, int, int]


def _scandir(folder: Path, what: str) -> Any:
    try:
        return os.scandir(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read the {what} {folder} ({exc}); check its permissions") from None


def scan_folder(root: Path) -> tuple[dict[str, StatKey], list[str]]:
    """``({file name: (mtime_ns, size, inode)}, [temp file names])`` of the engram folder ``root`` and its
    month folders (empty when it is missing); names are relative to ``root`` (``2026-12/<id>.yaml``).

    Only regular ``*.yaml`` files not starting with ``.`` count; a file that vanishes mid-scan is skipped.
    Only the three numbers are kept, not the ``os.stat_result``: ~160 bytes a file instead of ~430,
    which at 100k files is 27 MiB less at the peak of a full scan (issue 30).

    Raises:
        StoreError: the folder exists but cannot be read (naming it and the fix).
    """
    files: dict[str, StatKey] = {}
    temps: list[str] = []
    months: list[str] = []
    it = _scandir(root, "engram folder")
    if it is None:
        return files, temps
    with it:
        _scan_entries(it, "", files, temps, months)
    for m in months:
        sub = _scandir(root / m, "month folder")
        if sub is not None:
            with sub:
                _scan_entries(sub, m + "/", files, temps, None)
    return files, temps


def _scan_entries(it: Any, prefix: str, files: dict[str, StatKey], temps: list[str], months: list[str] | None) -> None:
    for e in it:
        n = e.name
        if n.startswith("."):
            if n.startswith(TMP_PREFIX):
                temps.append(prefix + n)
            continue
        if not n.endswith(".yaml"):
            if months is not None and MONTH_RE.match(n) and e.is_dir(follow_symlinks=False):
                months.append(n)
            continue
        try:
            st = e.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            files[prefix + n] = (st.st_mtime_ns, st.st_size, st.st_ino)


def month_folders(root: Path) -> list[str]:
    """The month folders (``YYYY-MM``) under the engram folder ``root``, sorted (none when it is missing).

    Raises:
        StoreError: the folder exists but cannot be read.
    """
    it = _scandir(root, "engram folder")
    if it is None:
        return []
    with it:
        return sorted(e.name for e in it if MONTH_RE.match(e.name) and e.is_dir(follow_symlinks=False))


def folder_token(root: Path, months: tuple[int, list[str]]) -> tuple[tuple[int, ...] | None, tuple[int, list[str]]]:
    """The mtimes in ns of the engram folder ``root`` and of each of its month folders (None when it is
    missing): one of them changes when a file is added or removed anywhere in the store.

    Args:
        months: ``(root's mtime, the month folders' paths)`` from the previous call (``(-1, [])`` at first):
            the month folders are listed again only when the root's mtime moved (a month folder was made or
            removed), so a call is one ``stat`` a month folder: ~0.3-0.6 ms of CPU for 220 (18 years of
            notes) on this machine, at load 10.

    Returns:
        ``(token, months)``: the token, and ``months`` for the next call.
    """
    try:
        top = os.stat(root).st_mtime_ns
    except FileNotFoundError:
        return None, (-1, [])
    if months[0] != top:
        months = (top, [os.path.join(root, m) for m in month_folders(root)])
    out = [top]
    for path in months[1]:
        try:
            out.append(os.stat(path).st_mtime_ns)
        except OSError:
            out.append(-1)
    return tuple(out), months


def list_names(root: Path) -> set[str]:
    """Every name in the engram folder and its month folders, relative to ``root``, nothing stat'ed (the
    quick refresh's listing: set arithmetic in C; ~0.1 s of CPU at a million files on this machine).

    Raises:
        StoreError: a folder exists but cannot be read.
    """
    try:
        top = os.listdir(root)
    except FileNotFoundError:
        return set()
    except OSError as exc:
        raise StoreError(f"cannot read the engram folder {root} ({exc}); check its permissions") from None
    out = set(top)
    for m in top:
        if MONTH_RE.match(m):
            try:
                out.update(m + "/" + n for n in os.listdir(root / m))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise StoreError(f"cannot read the month folder {root / m} ({exc}); check its permissions") from None
    return out


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
    """The stat pass of a full refresh and what it found changed, worked out without any lock
    (:meth:`plur.store.mirror.FolderMirror.prescan`); applying it re-checks only :attr:`names`.

    Attributes:
        tail: the writer journal's position before the pass. files, temps: :func:`scan_folder`'s result.
        started_ns: wall clock (``time.time_ns``) when the pass began.
        token: :func:`folder_token` before the pass (None: no folder): a caller that keeps the token to skip
            refreshes keeps this one, so a file added or removed while the pass ran moves it again.
        names: the files to re-check under the lock, sorted; settled: racy entries found unchanged
            (:func:`plur.store.scan_diff.changed_names`).
    """

    tail: Any
    files: dict[str, StatKey]
    temps: list[str]
    started_ns: int
    token: tuple[int, ...] | None = None
    names: tuple[str, ...] = ()
    settled: tuple[Any, ...] = ()


def stat_pass(root: Path, journal: Any, diff: Callable[[dict[str, StatKey]], tuple[tuple[str, ...], tuple[Any, ...]]]
              | None = None, months: tuple[int, list[str]] = (-1, [])) -> Prescan:
    """:func:`scan_folder` of ``root`` with the time it began, ``journal``'s position and the folder's token before
    it, and (given ``diff``, :func:`plur.store.scan_diff.changed_names` bound to the mirror's entries) what it
    found changed; takes no lock.

    Args:
        months: :func:`folder_token`'s month folders from the mirror (read, not kept).
    """
    token, _ = folder_token(root, months)
    started = time.time_ns()
    tail = journal.read_tail(False)
    files, temps = scan_folder(root)
    names, settled = diff(files) if diff is not None else ((), ())
    return Prescan(tail, files, temps, started, token, names, settled)


__all__ = ["Prescan", "StatKey", "folder_token", "list_names", "month_folders", "scan_folder", "scan_folder_while", "stat_pass"]
