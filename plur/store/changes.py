"""What a store refresh reports (:class:`Changes`), how two successive changes combine, and the home check."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreError


@dataclass(frozen=True)
class Changes:
    """Ids of engrams that changed since the previous :meth:`EngramStore.refresh`.

    Includes every change, whoever made it: writes through this instance, other
    processes, hand edits. ``bool(changes)`` is False when nothing changed.
    """

    added: frozenset[str] = frozenset()
    updated: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def _check_home(home: Path) -> None:
    """Refuse a home that is (or lies under) a file: every read and write would fail there.

    Raises:
        StoreError: naming the file and the fix.
    """
    p = home
    while True:
        try:
            st = p.stat()
        except FileNotFoundError:
            if p.parent == p:
                return
            p = p.parent
            continue
        except OSError as exc:
            raise StoreError(f"cannot use plur home {home} ({exc}); point PLUR_HOME or --home at a folder") from None
        if not stat.S_ISDIR(st.st_mode):
            what = "is a file" if p == home else f"lies under the file {p}"
            raise StoreError(f"plur home {home} {what}, not a folder; point PLUR_HOME or --home at a folder "
                             "(it is created when missing)")
        return


def _merge_op(prev: str | None, new: str) -> str | None:
    """Combine two successive change kinds for one id (None = net no change)."""
    if prev is None:
        return new
    if prev == "added":
        return None if new == "removed" else "added"
    if prev == "removed":
        return "updated" if new == "added" else "removed"
    return "removed" if new == "removed" else "updated"  # prev == "updated"
