"""Reading a linked memory folder: which files, when, and how much (:func:`memory_files`).

A memory file is read only

* when it lies inside the folder: a link out of it (``leak.md -> ../secret.txt``, ``-> /etc/hostname``) is
  never followed (:mod:`plur.formats.inside`), and is said once;
* when it is no larger than a memory can be (:func:`file_limit`: ``max_statement_bytes`` of text and 1 MiB of
  frontmatter, within ``max_input_bytes``): the size is checked before a byte is read;
* when it has stopped changing: the same size, mtime and inode at two looks at least :data:`SETTLE_S` apart
  (:class:`Looks`; the file's own mtime counts as the first look, as nothing changed it since), and again after
  the read. So a file still being written -- a 109 MB file copied in, an editor's slow save -- never becomes a
  partial engram: the service's watcher looks at every pass and reads it once it holds still; a one-time sync
  (``plur link``) looks twice, waiting out the rest of the settle time when a file changed just now.

The files are read before the memory is touched (:func:`plur.hosts.claude_link.sync.reconcile`), so no lock of
the memory or the store is held while a file is read. A file not read this time is neither new nor deleted:
its engram is left as it was.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...formats.inside import is_inside, outside_note, real_root

INDEX = "MEMORY.md"
#: Seconds a file must hold still (same size, mtime and inode) before the service's watcher reads it.
SETTLE_S = 1.0
#: The same for a one-time sync (``plur link``), which waits it out itself and checks the look again after its read.
ONCE_SETTLE_S = 0.25
#: The frontmatter a memory file may carry beside its text (:func:`plur.formats.claude_dir.split_frontmatter`).
FRONTMATTER_BYTES = 1 << 20

Look = tuple[int, int, int]


class Looks:
    """What earlier looks saw of each file (size, mtime, inode) and since when: a file is steady once the same
    look has held for ``settle_s`` seconds (its mtime is when it last changed, so an old file is steady at once).

    Args:
        settle_s: seconds a look must hold. clock: wall-clock seconds (the clock mtimes are on).
    """

    def __init__(self, settle_s: float = SETTLE_S, clock: Callable[[], float] = time.time) -> None:
        self.settle_s, self._clock = settle_s, clock
        self._seen: dict[str, tuple[Look, float]] = {}

    def steady(self, name: str, st: os.stat_result) -> bool:
        """Whether file ``name``, looked at now (``st``), has held still for ``settle_s``; records the look."""
        look = (st.st_size, st.st_mtime_ns, st.st_ino)
        now = self._clock()
        was = self._seen.get(name)
        if was is None or was[0] != look:
            was = (look, min(now, st.st_mtime_ns / 1e9))  # unchanged since its mtime, at best
            self._seen[name] = was
        return now - was[1] >= self.settle_s

    def wait_s(self, name: str) -> float:
        """Seconds until ``name``'s last look has held for ``settle_s`` (0 when it has)."""
        was = self._seen.get(name)
        return 0.0 if was is None else max(0.0, was[1] + self.settle_s - self._clock())

    def keep_only(self, names: set[str]) -> None:
        """Forget the looks of files that are gone."""
        for name in set(self._seen) - names:
            del self._seen[name]


@dataclass
class FolderRead:
    """What :func:`memory_files` read: ``texts`` (name -> text), ``unread`` (present, not read this time: changing,
    too large, a link out, unreadable), ``waiting`` (of those, the ones still changing) and ``problems`` (one line
    each, to say once)."""

    texts: dict[str, str] = field(default_factory=dict)
    unread: set[str] = field(default_factory=set)
    waiting: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def file_limit(max_statement_bytes: int, max_input_bytes: int) -> tuple[int, str]:
    """The largest memory file read, in bytes, and the setting that raises it."""
    own = max_statement_bytes + FRONTMATTER_BYTES
    return (own, "max_statement_bytes") if own <= max_input_bytes else (max_input_bytes, "max_input_bytes")


def memory_files(folder: Path, limit: tuple[int, str], looks: Looks | None = None) -> FolderRead:
    """The memory files of ``folder`` (``*.md`` but ``MEMORY.md``; hidden ones skipped) that may be read now.

    Args:
        folder: the linked folder. limit: :func:`file_limit`.
        looks: the looks of earlier passes (the service's watcher); ``None`` = a one-time sync, which looks twice
            itself, waiting at most :data:`ONCE_SETTLE_S` for files that changed just now.
    """
    out = FolderRead()
    root = real_root(folder)
    candidates: list[tuple[str, Path, os.stat_result]] = []
    for p in sorted(folder.glob("*.md")):
        if p.name == INDEX or p.name.startswith("."):
            continue
        if not is_inside(root, p):
            out.unread.add(p.name)
            out.problems.append(outside_note(p, folder))
            continue
        try:
            st = p.stat()
        except OSError:
            out.unread.add(p.name)  # gone or unreadable between two calls: the next pass sees which
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if st.st_size > limit[0]:
            out.unread.add(p.name)
            out.problems.append(f"{p}: not read: larger than the {limit[0]:,} bytes a memory file may hold (setting "
                                f"{limit[1]}, and 1 MiB of frontmatter); it is left as it is until it is smaller")
            continue
        candidates.append((p.name, p, st))
    mine = looks if looks is not None else Looks(ONCE_SETTLE_S)
    if looks is not None:
        looks.keep_only({name for name, _, _ in candidates})
    moving = [c for c in candidates if not mine.steady(c[0], c[2])]
    if looks is None and moving:  # a one-time sync: the second look, once the files that just changed settle
        time.sleep(max(mine.wait_s(name) for name, _, _ in moving))
        again = []
        for name, p, st in moving:
            try:
                now = p.stat()
            except OSError:
                now = None
            if now is not None and mine.steady(name, now):
                again.append((name, p, now))
        moving = [c for c in moving if c[0] not in {a[0] for a in again}]
        candidates = sorted([c for c in candidates if c[0] not in {m[0] for m in moving}] + again,
                            key=lambda c: c[0])
    for name, _, _ in moving:
        out.unread.add(name)
        out.waiting.append(name)
    for name, p, st in candidates:
        if name in out.unread:
            continue
        text = _read(p, st)
        if isinstance(text, str):
            out.texts[name] = text
        else:
            out.unread.add(name)
            if text is _CHANGED:
                out.waiting.append(name)
    return out


_CHANGED, _UNREADABLE = object(), object()


def _read(p: Path, st: os.stat_result) -> str | object:
    """The text of ``p`` when it is still what look ``st`` saw, before and after the read; else :data:`_CHANGED`
    (the next look decides) or :data:`_UNREADABLE` (not UTF-8 text: left as it is)."""
    try:
        with open(p, "rb") as fh:
            before = os.fstat(fh.fileno())
            data = fh.read(st.st_size + 1)  # the size was checked against the limit: never more than that
            after = os.fstat(fh.fileno())
    except OSError:
        return _UNREADABLE
    looks = {(s.st_size, s.st_mtime_ns, s.st_ino) for s in (st, before, after)}
    if len(looks) != 1 or len(data) != st.st_size:
        return _CHANGED
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _UNREADABLE
