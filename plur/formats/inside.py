"""Which files of a folder a reader may read: only those inside it.

A folder given to plur (``plur import DIR``, ``plur ingest DIR``, a Claude memory folder, a folder linked with
``plur link claude-code``) may hold links (symlinks) that lead out of it: ``leak.md -> ../secret.txt``,
``-> /etc/hostname``, or a line of ``MEMORY.md`` naming ``../secret.md``. No reader follows one: a file is read
only when its real path (every link resolved) lies inside the folder's real path, and each file left out is said
once (:func:`outside_note`). A link that stays inside the folder is read as the file it names.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def real_root(folder: Path) -> str:
    """The real path of ``folder`` with a trailing separator (what a file inside it starts with)."""
    return os.path.join(os.path.realpath(folder), "")


def is_inside(folder: Path | str, path: Path) -> bool:
    """Whether ``path``, every link resolved, lies inside ``folder`` (a :class:`~pathlib.Path`, or :func:`real_root`)."""
    root = folder if isinstance(folder, str) else real_root(folder)
    return os.path.realpath(path).startswith(root)


def outside_note(path: Path, folder: Path) -> str:
    """The one line that says ``path`` was left out: it leads out of ``folder``."""
    try:
        target = os.readlink(path)
    except OSError:  # not a link itself: a folder on its way is, or a MEMORY.md line names it
        target = os.path.realpath(path)
    return f"{path}: not read: it leads out of {folder} (to {target}); plur reads only the files inside a folder it is given"


def keep_inside(folder: Path, files: Iterable[Path], skipped: list[str] | None = None) -> list[Path]:
    """``files`` that lie inside ``folder``; a note for each other one is appended to ``skipped``."""
    root = real_root(folder)
    out = []
    for f in files:
        if is_inside(root, f):
            out.append(f)
        elif skipped is not None:
            skipped.append(outside_note(f, folder))
    return out


__all__ = ["is_inside", "keep_inside", "outside_note", "real_root"]
