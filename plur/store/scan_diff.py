"""What a full scan's stat pass says changed, worked out without any lock (issue 49).

:meth:`plur.store.mirror.FolderMirror.prescan` compares each file's ``(mtime_ns, size, inode)`` from
:func:`plur.store.folder_scan.scan_folder` with the mirror's entry (a snapshot of its dict) and names the files
to check again under the lock. A "racy" entry (read within :data:`~plur.store.manifest.RACY_WINDOW_NS` of its
mtime, as every file a reader among writers reads just after it lands) with the same key is read and hashed
here: the same bytes need nothing under the lock. Under 4 writers at 10k engrams the lock then covers a handful
of files instead of a comparison of every file and a re-hash of every recent one (~12-20 ms of CPU on this
machine at load 3).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .folder_scan import StatKey
from .manifest import RACY_WINDOW_NS, file_sha


@dataclass(frozen=True)
class Settled:
    """A racy entry whose file was read again off the lock and held the same bytes: ``observed_ns`` (wall clock,
    ``time.time_ns``) is when, for the entry ``entry`` of ``name`` if it still has ``key``."""

    name: str
    entry: Any
    key: StatKey
    observed_ns: int


def _same_bytes(path: Path, ent: Any, key: StatKey) -> int | None:
    """When ``path`` still has ``key`` and the bytes ``ent`` was read from: the wall clock of the read, else None."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except OSError:
        return None
    now = time.time_ns()
    if (st.st_mtime_ns, st.st_size, st.st_ino) != key or file_sha(data) != ent.sha:
        return None
    return now


def changed_names(root: Path, entries: dict[str, Any], files: dict[str, StatKey]) -> tuple[tuple[str, ...],
                                                                                               tuple[Settled, ...]]:
    """The files of a stat pass to check under the lock, sorted, and the racy entries settled here.

    Args:
        root: the engram folder. entries: the mirror's entries by file name (a copy). files: the stat pass.

    Returns:
        ``(names, settled)``: names new to ``entries``, with a different key, never parsed, racy and changed
        (or unreadable) when read again, or gone from the pass; :class:`Settled` for racy entries whose bytes
        are unchanged (applied only where the entry is still the same object with the same key).
    """
    out: list[str] = []
    settled: list[Settled] = []
    for name, key in files.items():
        ent = entries.get(name)
        if ent is None or ent.key != key or ent.engram is None:
            out.append(name)
        elif ent.racy():
            seen = _same_bytes(root / name, ent, key)
            if seen is None:
                out.append(name)
            elif key[0] + RACY_WINDOW_NS <= seen:  # read long enough after its mtime: no longer racy
                settled.append(Settled(name, ent, key, seen))
            # else: the same bytes, still racy: the next pass reads it again, as before
    out.extend(entries.keys() - files.keys())
    return tuple(sorted(out)), tuple(settled)


def settle(entries: dict[str, Any], settled: tuple[Settled, ...]) -> bool:
    """Under the lock: mark each :class:`Settled` entry read at its ``observed_ns`` where ``entries`` still holds
    it with its key (else a refresh since read the file: that entry stands). Returns True when one changed."""
    changed = False
    for s in settled:
        if entries.get(s.name) is s.entry and s.entry.key == s.key:
            s.entry.observed_ns, changed = max(s.entry.observed_ns, s.observed_ns), True
    return changed


__all__ = ["Settled", "changed_names", "settle"]
