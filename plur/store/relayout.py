"""Moving a folder store's files between its two layouts: ``plur migrate --layout month|flat`` (issue 49).

``month`` moves every flat ``<home>/engrams/<id>.yaml`` (an older plur's) to ``<home>/engrams/YYYY-MM/<id>.yaml``;
``flat`` moves them all back, for an older plur, which reads only the flat layout (:mod:`plur.store.layout`).
Nothing needs moving for this plur, which reads both; the move is never automatic, so a store that a
person keeps in git, or an older plur still running beside this one, is not rearranged unasked.

Crash-safe: each file is moved by one ``rename`` (atomic within a file system) under the store's write lock,
after its old and new names are appended to the writer journal (so other processes follow it without a
full scan), and the folders are fsync'd once at the end. A move killed half-way leaves some files in each
layout, which reads the same; running it again moves the rest. A file is never moved over another one:
when the target name is taken (a person's copy), the file stays where it is and is counted as ``kept``.
Bytes, mtimes and inodes do not change, so no engram is re-read, re-indexed or re-embedded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..errors import StoreError, ValidationError
from .atomic import fsync_dir, private_dirs
from .folder_scan import month_folders
from .layout import flat_name, id_of, month_name

LAYOUTS = ("month", "flat")


@dataclass(frozen=True)
class RelayoutResult:
    """What :func:`relayout` did: ``moved`` files, ``already`` in the layout asked, ``kept`` where they were
    because the name they would take is taken (each listed by ``plur doctor`` as a duplicate or left alone)."""

    layout: str
    moved: int
    already: int
    kept: int


def relayout(store: Any, layout: str) -> RelayoutResult:
    """Move every engram file of the folder store ``store`` into ``layout`` (``month`` or ``flat``).

    Raises:
        ValidationError: ``layout`` is neither (the message names both).
        StoreError: the lock could not be taken or a file could not be moved (the files moved so far stay
            moved; running it again goes on).
    """
    if layout not in LAYOUTS:
        raise ValidationError(f"unknown layout {layout!r}; use month (YYYY-MM folders, what plur writes) or "
                              "flat (one folder, for an older plur)")
    moved = already = kept = 0
    folders: set[Any] = set()
    with store._write_lock():
        store._full_refresh(locked=True)
        for name in sorted(store._entries):
            eid = id_of(name)
            target = month_name(eid) if layout == "month" else flat_name(eid)
            if target == name:
                already += 1
                continue
            src, dst = store.root / name, store.root / target
            if os.path.lexists(dst):
                kept += 1
                continue
            store._writes.append(name)
            store._writes.append(target)
            try:
                private_dirs(dst.parent)
                os.rename(src, dst)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StoreError(f"cannot move {src} to {dst} ({exc}); check free space and permissions, "
                                 "then run it again (the files moved so far stay moved)") from None
            store._entries[target] = store._entries.pop(name)
            store._dirty = True
            folders.update((src.parent, dst.parent))
            moved += 1
        for folder in sorted(folders, key=str) if store.fsync else ():
            fsync_dir(folder)
        if layout == "flat":
            _remove_empty_months(store)
    store.save_manifest()
    return RelayoutResult(layout, moved, already, kept)


def _remove_empty_months(store: Any) -> None:
    """After ``flat``: the month folders left empty are removed (an older plur ignores them anyway)."""
    for m in month_folders(store.root):
        try:
            os.rmdir(store.root / m)
        except OSError:
            continue  # not empty (a person's file, a kept twin): left alone
    if store.fsync:
        fsync_dir(store.root)


__all__ = ["LAYOUTS", "RelayoutResult", "relayout"]
