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
import threading
import time
from collections.abc import Collection, Iterable, Mapping
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

    def changed(self, known: Collection[str], unmoved: Collection[str]) -> list[str]:
        """:meth:`new` then :meth:`gone`: the names a caller re-checks."""
        return self.new(known, unmoved) + self.gone(known)

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


class ListingBehind:
    """A :class:`FolderListing` taken on a thread of its own, for a caller among a stream of writes (issue 49).

    The quick refresh of a reader that other plur processes keep writing to (:mod:`plur.store.mirror`) listed the
    folders they wrote in once a second, inside the recall that asked for it: ~17 ms of CPU at 10k names in one
    month (load 9), 0.2 s at a million, in ~1 recall in 60 under 4 writers (recall p99). :meth:`start` lists on a
    thread; :meth:`take`, at a later refresh, hands over the names it found new or gone, for the caller to re-check
    (a stat each: a name written or removed since the listing is told apart).
    """

    #: Seconds after the journal last named a write during which the caller counts as among a stream of writes.
    #: Not "named at this call": a refresh often meets a write whose name an earlier one read (plur appends the
    #: name first), and listed on its thread at every such call (~1 refresh in 10 under 4 writers, load 5-7).
    stream_s = 5.0

    def __init__(self) -> None:
        self._listing = FolderListing()  # its own: the caller's thread lists with another while no stream runs
        self._named_at = float("-inf")
        self._thread: threading.Thread | None = None
        self._found: list[str] = []
        self._error: StoreError | None = None

    def streaming(self, named: bool, now: float) -> bool:
        """Whether the caller is among a stream of writes (``named``: the journal named some at this call, at
        ``now``, ``time.monotonic()``): then it leaves its listing to :meth:`start`, else lists on its own thread."""
        if named:
            self._named_at = now
        return now - self._named_at < self.stream_s

    def start(self, root: Path, known: Mapping[str, object], unmoved: Mapping[str, object],
              like: FolderListing | None = None) -> None:
        """List ``root`` on a thread unless one runs; ``known``/``unmoved``: the caller's live name maps; ``like``:
        the caller's own listing, whose folders (listed and applied) the first listing here need not list again."""
        if self._thread is None or not self._thread.is_alive():
            if like is not None and not self._listing._seen:
                self._listing._seen, self._listing._months = dict(like._seen), list(like._months)
            self._thread = threading.Thread(target=self._run, args=(root, known, unmoved), name="plur-listing",
                                            daemon=True)
            self._thread.start()

    def _run(self, root: Path, known: Mapping[str, object], unmoved: Mapping[str, object]) -> None:
        try:
            listed = self._listing.list(root)
            # membership tests read the live maps; gone() iterates, so over a copy of the keys (list() of a dict
            # of str keys runs whole in C, under the GIL: no other thread changes it meanwhile)
            found = listed.new(known, unmoved) + listed.gone(list(known))
        except StoreError as exc:
            self._error = exc
            return
        self._found = found

    def take(self) -> list[str]:
        """The names the last finished listing found new or gone (once), ``[]`` while one runs or none ran.

        Raises:
            StoreError: the listing found a folder it cannot read (as the listing on the caller's thread does).
        """
        if self._thread is None or self._thread.is_alive():
            return []
        found, self._found = self._found, []
        error, self._error = self._error, None
        if error is not None:
            raise error
        return found

    def wait(self, timeout_s: float = 60.0) -> None:
        """Wait for a listing in flight (tests; a caller that wants its names at the next :meth:`take`)."""
        t = self._thread
        if t is not None:
            t.join(timeout_s)


__all__ = ["FolderListing", "Listed", "ListingBehind"]
