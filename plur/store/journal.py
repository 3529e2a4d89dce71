"""The writer journal, ``<home>/index/store-journal``: the names of the engram files writers touch.

A header line ``plur-store-journal <epoch>`` then one file name per line (its path under the engram folder,
:mod:`plur.store.layout`), appended under the write lock by every writer before it touches that file. A process
that saw the journal up to byte ``n`` of epoch ``e`` re-checks only the names after ``n``; a missing, torn (no
final newline) or unknown epoch means a full scan (a stat of every file) instead.

Rotation: beyond :data:`JOURNAL_MAX_BYTES` a writer starts a new epoch. It first copies the old epoch whole to
``store-journal.prev`` and starts the new one with a second line ``after <old epoch> <old size>``, so a process
that had seen the old epoch up to byte ``n`` reads the old epoch's names after ``n`` from the copy, then the new
epoch's, and stays on the quick path. Before (issue 49), every reader and writer sharing the store did a full scan
at its next look after each rotation (every ~7,500 writes; at 10k engrams ~80 ms of CPU each, under 4 writers
five scans at once, one of them inside a recall). A process two rotations behind, a copy that could not be
written, or a rotation because the journal could not be trusted (a failed append) still means a full scan. An
older plur reads the second line as no name.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import StoreError
from .atomic import atomic_write
from .layout import is_engram_name
from .modes import open_private

JOURNAL_MAGIC = "plur-store-journal"
#: The journal is started afresh (new epoch) beyond this size, in bytes (~7,500 names of month-folder files).
JOURNAL_MAX_BYTES = 256 * 1024
#: The second line of an epoch started by a rotation: ``after <old epoch> <old size>``.
AFTER = "after"


@dataclass(frozen=True)
class JournalTail:
    """What :meth:`WriterJournal.read_tail` found.

    Attributes:
        epoch: the journal's epoch, None when missing or headerless.
        end: its size in bytes (-1 when unreadable) when ``names`` is None; with ``names`` carried over a
            rotation (``epoch`` is not the caller's), the byte of the new epoch they were read up to.
        names: engram file names appended since the caller last looked, or None
            when the caller must do a full scan instead.
        nbytes: bytes of the tail that ``names`` came from.
    """

    epoch: str | None
    end: int = -1
    names: list[str] | None = None
    nbytes: int = 0


def _names(data: bytes) -> set[str]:
    return {n for n in data.decode("ascii", "replace").split() if is_engram_name(n)}


class WriterJournal:
    """The append-only list of file names writers touch; see the module docstring.

    Use only under the store's write lock.

    Attributes:
        path: the journal file.
        prev_path: the copy of the epoch before the current one (``store-journal.prev``).
        pos: ``(epoch, byte offset)`` seen so far, or None when unknown (next sync scans).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.prev_path = path.with_name(path.name + ".prev")
        self.pos: tuple[str, int] | None = None

    def append(self, name: str) -> None:
        """Before touching ``name``: append it (rotating to a new epoch when large or stale).

        Never raises: on failure ``pos`` becomes None, so this process does a full
        scan at its next write, and others fall back to one too.
        """
        try:
            size = self.path.stat().st_size
        except OSError:
            size = -1
        # stale: others appended since our last sync (e.g. a quarantine during a lock-free refresh)
        stale = self.pos is None or size != self.pos[1]
        try:
            if stale or size < 0 or size > JOURNAL_MAX_BYTES or not self.pos[0]:
                epoch = secrets.token_hex(8)
                header = f"{JOURNAL_MAGIC} {epoch}\n".encode("ascii")
                if not stale and size > 0 and self.pos is not None and self.pos[0]:
                    header += self._hand_on(self.pos[0], size)   # else every other process scans once
                atomic_write(self.path, header, sync=False)
                self.pos = (epoch, len(header))
            with open_private(self.path, "ab") as f:
                f.write(name.encode("ascii") + b"\n")
                self.pos = (self.pos[0], f.tell())
        except (OSError, StoreError, UnicodeEncodeError):  # a name no engram has (not ASCII): others rescan
            self.pos = None  # others fall back to a full scan; the write itself goes on
        if stale:
            self.pos = None  # we skipped others' names: our next write does a full scan

    def _hand_on(self, epoch: str, size: int) -> bytes:
        """Copy the full epoch ``epoch`` (``size`` bytes) to :attr:`prev_path`; the new epoch's second line naming
        it, or ``b""`` when it cannot be copied whole (readers then scan, as before)."""
        try:
            with open(self.path, "rb") as f:
                data = f.read(size + 1)
            head = f"{JOURNAL_MAGIC} {epoch}\n".encode("ascii")
            if len(data) != size or not data.endswith(b"\n") or not data.startswith(head):
                return b""
            atomic_write(self.prev_path, data, sync=False)
        except (OSError, StoreError):
            return b""
        return f"{AFTER} {epoch} {size}\n".encode("ascii")

    def read_tail(self, scanned: bool) -> JournalTail:
        """The engram file names appended since :attr:`pos`, when they can be trusted.

        Args:
            scanned: the caller's cache was filled by a full scan at least once.

        Returns:
            A :class:`JournalTail`; ``names`` is None (full scan needed) when the
            caller never scanned, the journal is missing, headerless, of an epoch neither
            the caller's nor started right after it (see the module docstring), or its tail is torn.
        """
        try:
            with open(self.path, "rb") as f:
                header = f.readline()
                parts = header.decode("ascii", "replace").split()
                epoch = parts[1] if len(parts) == 2 and parts[0] == JOURNAL_MAGIC else None
                if scanned and epoch is not None and self.pos is not None and self.pos[0] == epoch:
                    f.seek(self.pos[1])
                    tail = f.read()
                    if tail.endswith(b"\n") or not tail:
                        return JournalTail(epoch, names=list(_names(tail)), nbytes=len(tail))
                elif scanned and epoch is not None and self.pos is not None and self.pos[0]:
                    carried = self._carried(f, epoch, self.pos)
                    if carried is not None:
                        return carried
                end = f.seek(0, os.SEEK_END)
        except OSError:
            return JournalTail(None, -1)
        return JournalTail(epoch, end)

    def _carried(self, f: BinaryIO, epoch: str, pos: tuple[str, int]) -> JournalTail | None:
        """The names after ``pos`` in the epoch before ``epoch`` (from :attr:`prev_path`) and all of ``epoch``'s
        (``f`` is past its header), or None when ``epoch`` does not follow ``pos``'s epoch or a part is torn."""
        line = f.readline(128)
        parts = line.decode("ascii", "replace").split()
        if len(parts) != 3 or parts[0] != AFTER or parts[1] != pos[0] or not line.endswith(b"\n"):
            return None
        try:
            size = int(parts[2])
            with open(self.prev_path, "rb") as p:
                if p.readline() != f"{JOURNAL_MAGIC} {pos[0]}\n".encode("ascii") or not p.tell() <= pos[1] <= size:
                    return None
                p.seek(pos[1])
                old = p.read(size - pos[1])
        except (OSError, ValueError):
            return None
        new = f.read()
        if len(old) != size - pos[1] or (old and not old.endswith(b"\n")) or (new and not new.endswith(b"\n")):
            return None
        return JournalTail(epoch, end=f.tell(), names=sorted(_names(old) | _names(new)), nbytes=len(new))

    def last_names(self, end: int, nbytes: int = 2048) -> list[str]:
        """Engram file names in the ``nbytes`` before byte ``end`` (the latest appends; ``[]`` on any problem).

        A lock-free full scan uses them: the write of the newest name may have been in flight while
        it scanned (a writer appends the name first), so those files are re-checked for a while.
        """
        if end <= 0:
            return []
        try:
            with open(self.path, "rb") as f:
                start = max(0, end - nbytes)
                f.seek(start)
                chunk = f.read(end - start)
        except OSError:
            return []
        lines = chunk.decode("ascii", "replace").split("\n")
        if start > 0:
            lines = lines[1:]  # the first line may be cut
        return [n for n in lines if is_engram_name(n)]

    def advance(self, tail: JournalTail) -> None:
        """After re-checking ``tail.names``: mark them seen."""
        if self.pos is None:
            # An append() during the re-check (a quarantine) found the journal stale: stay unknown,
            # so the next write does a full scan instead of trusting a position we no longer know.
            return
        if tail.epoch is not None and tail.epoch != self.pos[0]:  # carried over a rotation: read to tail.end
            self.pos = (tail.epoch, tail.end)
            return
        self.pos = (tail.epoch or "", self.pos[1] + tail.nbytes)

    def caught_up(self, tail: JournalTail) -> None:
        """After a full scan: everything up to ``tail.end`` is seen.

        A missing (-1) or headerless journal ("" epoch) is started afresh by the next append.
        """
        self.pos = (tail.epoch, tail.end) if tail.epoch is not None else ("", tail.end if tail.end else -1)


__all__ = ["AFTER", "JOURNAL_MAGIC", "JOURNAL_MAX_BYTES", "JournalTail", "WriterJournal"]
