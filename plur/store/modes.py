"""Owner-only file modes: every file plur creates is 0600 and every folder 0700, whatever the umask.

plur's home holds statements, recall queries (``stats.db``), embeddings, index vocabularies, tokens
and logs. The home folder's 0700 alone protected them; a home copied elsewhere (``cp -r``, a backup
restored, a sync tool), or made by an older plur with the usual umask 022, left them 0644. So each
writer creates its file with mode 0600 from the first byte (:func:`open_private`,
:func:`touch_private`, ``tempfile.mkstemp``), files written by a library (usearch, numpy) are
narrowed before they are renamed into place (:func:`private_file`), and :func:`repair` fixes a
whole home (``plur doctor --fix``).

SQLite gives a database's ``-wal``, ``-shm`` and ``-journal`` files the permissions of the database
file itself (``findCreateFileMode`` in ``os_unix.c``), so creating the database 0600 before
``sqlite3.connect`` covers them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

#: Mode of every file plur creates.
FILE_MODE = 0o600
#: Mode of every folder plur creates.
DIR_MODE = 0o700


def private_file(path: str | os.PathLike[str]) -> None:
    """Narrow ``path`` to 0600 if group or others have any bit (a missing file is ignored).

    Raises:
        OSError: ``chmod`` failed for another reason than a missing file (e.g. not the owner).
    """
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        return
    if stat.S_IMODE(mode) & 0o077:
        os.chmod(path, stat.S_IMODE(mode) & 0o700 | (0o600 if stat.S_ISREG(mode) else 0))


def private_dir(path: str | os.PathLike[str]) -> None:
    """Narrow the folder ``path`` to 0700 if group or others have any bit (a missing one is ignored)."""
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode) and stat.S_IMODE(mode) != DIR_MODE:
        os.chmod(path, DIR_MODE)


def open_private(path: str | os.PathLike[str], mode: str = "ab", **kwargs: Any) -> IO[Any]:
    """``open(path, mode)`` where a file created is 0600 from the first byte (an existing one is narrowed).

    Args:
        path: the file.
        mode: ``"ab"``, ``"wb"``, ``"a"``, ``"w"`` (with ``encoding`` in ``kwargs`` for text),
            ``"r+b"`` ...: as :func:`open`.

    Raises:
        OSError: as :func:`open`.
    """
    flags = os.O_CREAT | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    if "a" in mode:
        flags |= os.O_APPEND
    elif "w" in mode:
        flags |= os.O_TRUNC
    if "x" in mode:
        flags |= os.O_EXCL
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        private_file(path)
        return os.fdopen(fd, mode.replace("x", "w"), **kwargs)
    except BaseException:
        os.close(fd)
        raise


def touch_private(path: str | os.PathLike[str]) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (then only narrow it); e.g. before SQLite opens it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    except OSError:
        return  # read-only home: the caller's own open reports it
    os.close(fd)
    try:
        private_file(path)
    except OSError:
        pass


def _walk(home: Path) -> Iterator[tuple[Path, os.stat_result]]:
    for root, dirs, names in os.walk(home, followlinks=False):
        for name in dirs + names:
            p = Path(root) / name
            try:
                yield p, os.stat(p, follow_symlinks=False)
            except FileNotFoundError:
                continue


def too_open(home: str | os.PathLike[str]) -> list[tuple[Path, int]]:
    """Everything under (and including) ``home`` that group or others can reach: ``[(path, mode)]``.

    Symbolic links are not followed (nor listed); sockets count as files.
    """
    home = Path(home)
    out: list[tuple[Path, int]] = []
    try:
        st = os.stat(home, follow_symlinks=False)
    except FileNotFoundError:
        return out
    if stat.S_IMODE(st.st_mode) & 0o077:
        out.append((home, stat.S_IMODE(st.st_mode)))
    for p, st in _walk(home):
        if stat.S_ISLNK(st.st_mode):
            continue
        if stat.S_IMODE(st.st_mode) & 0o077:
            out.append((p, stat.S_IMODE(st.st_mode)))
    return out


def repair(home: str | os.PathLike[str]) -> list[tuple[Path, int, int]]:
    """Make ``home`` owner-only: folders 0700, everything else 0600 at most (``plur doctor --fix``).

    Returns:
        ``[(path, old mode, new mode)]`` for each entry changed.

    Raises:
        OSError: a ``chmod`` failed (e.g. an entry owned by another account).
    """
    changed = []
    for path, old in too_open(home):
        if path.is_dir() and not path.is_symlink():
            private_dir(path)
        else:
            private_file(path)
        changed.append((path, old, stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)))
    return changed


__all__ = ["DIR_MODE", "FILE_MODE", "open_private", "private_dir", "private_file", "repair", "too_open",
           "touch_private"]
