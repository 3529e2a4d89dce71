"""The quick refresh's listing of ``<home>/engrams/``: only the folders whose mtime moved since they were listed.

A file added to or removed from a folder moves that folder's mtime, so with month folders
(:mod:`plur.store.layout`) a listing after another process wrote reads the names of the month or two it wrote
in (~4,500 names), not every name of the store: at a million files a full listing is ~1.1 s of CPU on this
machine (``python -m bench.scale.folders``). Finding names deleted by hand still walks the known names once
(:meth:`Listed.gone`, ~0.2 s of CPU at a million on this machine at load 12). A folder is remembered as listed only once its
mtime is older than :data:`~plur.store.manifest.RACY_WINDOW_NS` (a second change within the same clock tick
would not move it), so a folder still being written to is listed again each time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreError
from .layout import MONTH_RE
from .manifest import RACY_WINDOW_NS


@dataclass(frozen=True)
class Listed:
    """One listing: the ``names`` read (relative to the engram folder) in the folders it covers (``""`` for the
    engram folder itself, else ``YYYY-MM``; ``everything`` when all of them were read)."""

    names: set[str]
    folders: frozenset[str]
    everything: bool

    def covers(self, name: str) -> bool:
        """True when ``name``'s folder was listed (so its absence from :attr:`names` means it is gone)."""
        return self.everything or (name[: name.find("/")] if "/" in name else "") in self.folders

    def new(self, known: Collection[str], unmoved: Collection[str]) -> list[str]:
        """Engram file names listed that ``known`` and ``unmoved`` lack (temp files left out), sorted."""
        return sorted(n for n in self.names if n not in known and n not in unmoved and n.endswith(".yaml")
                      and not n.rpartition("/")[2].startswith("."))

    def gone(self, known: Iterable[str]) -> list[str]:
        """Names of ``known`` in the folders listed that the listing did not find, sorted."""
        if self.everything:
            return sorted(k for k in known if k not in self.names)
        if not self.folders:
            return []
        months, flat = tuple(f + "/" for f in self.folders if f), "" in self.folders  # one pass, no call a name
        return sorted(k for k in known if (k.startswith(months) if "/" in k else flat) and k not in self.names)


class FolderListing:
    """What the quick refresh listed last (one per :class:`~plur.store.mirror.FolderMirror`)."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}  # folder -> its mtime_ns when listed, once settled
        self._months: list[str] = []     # the month folders when the engram folder was last listed

    def list(self, root: Path) -> Listed:
        """The names of the folders under ``root`` (and ``root``) whose mtime moved since they were listed.

        Raises:
            StoreError: a folder exists but cannot be read.
        """
        settled = time.time_ns() - RACY_WINDOW_NS
        try:
            top = os.stat(root).st_mtime_ns
            if self._seen.get("") != top:
                names = set(os.listdir(root))
                self._months = sorted(n for n in names if MONTH_RE.match(n) and os.path.isdir(os.path.join(root, n)))
            else:
                names = set()
            mtimes = {"": top}
            for m in self._months:
                try:
                    mtimes[m] = os.stat(os.path.join(root, m)).st_mtime_ns
                except OSError:
                    continue
            changed = {m for m, t in mtimes.items() if self._seen.get(m) != t}
            folders = changed | {m for m in self._seen if m not in mtimes}
            for m in sorted(changed - {""}):
                try:
                    names.update(m + "/" + n for n in os.listdir(os.path.join(root, m)))
                except (FileNotFoundError, NotADirectoryError):
                    continue
        except FileNotFoundError:
            self._seen, self._months = {}, []
            return Listed(set(), frozenset(), True)
        except OSError as exc:
            raise StoreError(f"cannot read the engram folder {root} ({exc}); check its permissions") from None
        everything = not self._seen
        self._seen = {m: t for m, t in mtimes.items() if t < settled}
        return Listed(names, frozenset(folders), everything)


__all__ = ["FolderListing", "Listed"]
