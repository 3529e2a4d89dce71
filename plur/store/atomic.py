"""Atomic file writes: temp file in the same folder, fsync, ``os.replace``, fsync the folder.

A writer killed at any point leaves either the old file or the new one, never a
partial one; what it may leave is a temp file named ``.tmp-*``, which
:func:`clean_stale_temps` removes. The recipe is the classic POSIX one (see
``rename(2)``: the replacement is atomic; the folder fsync makes it durable).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from ..errors import StoreError

#: Temp files of atomic writes start with this; loaders skip every name starting with ".".
TMP_PREFIX = ".tmp-"
#: A temp file older than this (s) is stale even when seen without the write lock.
STALE_TMP_S = 600.0



def private_dirs(folder: Path) -> None:
    """``mkdir -p folder`` where every folder created is mode 0700 (owner only).

    plur's home holds the statements, recall queries (``stats.db``), embeddings and index
    vocabularies; a home created 0755 (the usual umask) let every local user read them. Folders that
    already exist keep their mode.

    Raises:
        OSError: as :meth:`pathlib.Path.mkdir`.
    """
    missing = []
    p = Path(folder)
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        d.mkdir(mode=0o700, exist_ok=True)

def atomic_write(path: Path, data: bytes, sync: bool = True, sync_folder: bool = True) -> None:
    """Replace ``path`` with ``data``: temp file -> write -> flush -> fsync -> os.replace -> fsync folder.

    The temp file is ``<folder>/.tmp-<random><suffix>``; it is removed when the
    write fails. The folder is created when missing.

    Args:
        path: the file to write.
        data: its new bytes.
        sync: fsync the file and its folder (crash safety); ``False`` for caches.
        sync_folder: with ``sync``, also fsync the folder (the rename's durability). ``False`` when the
            caller writes several files into one folder and fsyncs it once, before it returns
            (:meth:`plur.store.store.EngramStore.add_many`): each file's bytes are still on disk before
            its rename, so a crash leaves every file whole, old or new.

    Raises:
        StoreError: the folder is not writable, or the write or rename failed
            (disk full, permissions); the message names the path.
    """
    folder = path.parent
    try:
        private_dirs(folder)
        fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=path.suffix or ".tmp", dir=folder)
    except OSError as exc:
        raise StoreError(f"cannot write in {folder} ({exc}); check that it exists and is writable") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise StoreError(f"cannot write {path} ({exc}); check free space and permissions") from None
        raise
    if sync and sync_folder:
        fsync_dir(folder)


def fsync_dir(folder: Path) -> None:
    """fsync a folder so a rename or unlink inside it survives a crash; errors are ignored.

    On Windows a folder cannot be opened; the rename is already durable enough there.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def clean_stale_temps(folder: Path, names: Iterable[str], locked: bool, stale_s: float = STALE_TMP_S) -> None:
    """Remove temp files left by killed writers; errors are ignored.

    Args:
        folder: where the temp files are.
        names: their file names (``.tmp-*``).
        locked: the caller holds the write lock, so no write is in flight: remove them all.
            Otherwise only those whose mtime is older than ``stale_s`` seconds.
        stale_s: age in seconds beyond which a temp file is stale (default :data:`STALE_TMP_S`).
    """
    now = time.time()
    for n in names:
        p = folder / n
        with suppress(OSError):
            if locked or now - p.stat().st_mtime > stale_s:
                p.unlink()
