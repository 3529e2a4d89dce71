"""Term -> posting lists of a BM25 index: a read-only CSR base beside a small growable delta.

The base holds the postings of a loaded (or compacted) index in compressed-sparse-row form: term ``j`` owns
``slots/tfs[offsets[j]:offsets[j + 1]]``. A loaded index reads a term's slice from the saved files with one
positional read each (:class:`FileArray`) when a query needs it, so no posting stays in the process's memory
between queries: the files sit in the kernel's page cache, out of the process's RSS (issue 49: memory-mapped, the
pages 400 queries read stayed resident, +62 MiB at 100k engrams, ~0.6 GB at a million). Postings added since the
base was made go to the delta, one growable ``array`` pair a term (doc slots ``'i'``; term frequencies ``'B'``
while all are at most :data:`SMALL_TF_MAX`, else ``'i'``): a base term is never copied to take a new posting. A
save writes base and delta merged, and the index then reads its new files as its base (an empty delta).

A term's postings are its base slice then its delta run; delta slots are all above base slots (slots are given in
order), so a term's slots are ascending, as a single array's would be.
"""

from __future__ import annotations

import io
import os
import threading
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Union

import numpy as np

__all__ = ["FileArray", "Postings", "READ_EVERY", "SMALL_TF_MAX", "blocks", "tf_array"]

Entry = tuple[array, array]  # (doc slots array('i'), term frequencies array('B') or array('i'))
#: Largest term frequency an ``array('B')`` (and a uint8 postings file) holds; a larger one widens to int32.
SMALL_TF_MAX = 255
#: Postings a full read of the base (a load's checks, a save) reads at once: 4 MiB of an int32 array in memory.
READ_EVERY = 1 << 20


def tf_array(tfs: array) -> np.ndarray:
    """A term's frequencies as numpy without a copy: ``[postings]`` uint8 (typecode ``'B'``) or int32 (``'i'``)."""
    return np.frombuffer(tfs, dtype=np.uint8 if tfs.typecode == "B" else np.int32)


class FileArray:
    """A 1-d ``.npy`` file read a slice at a time with positional reads (nothing mapped, nothing kept).

    Args:
        path: a version 1.0 or 2.0 ``.npy`` file of a 1-d array of integers, C order.

    Raises:
        OSError: unreadable. ValueError: not such an array.
    """

    def __init__(self, path: Path) -> None:
        self.name = str(path)
        # a bare descriptor, kept open (reads go on after a save renames or deletes the file), closed by close()
        # or when the object goes: no file object to warn about at collection
        self._fd: int | None = None
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            with io.FileIO(self._fd, "rb", closefd=False) as fh:
                fmt = np.lib.format
                version = fmt.read_magic(fh)
                if version not in ((1, 0), (2, 0)):
                    raise ValueError(f"{path} is a .npy file of version {version}, this plur reads 1.0 and 2.0")
                read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
                shape, fortran, dtype = read_header(fh)
                self._start = fh.tell()
            if len(shape) != 1 or fortran or dtype.kind not in "iu" or dtype.hasobject:
                raise ValueError(f"{path} holds a {dtype} array of shape {shape}, not a 1-d integer array")
            self.dtype: np.dtype = dtype
            self.size: int = int(shape[0])
            if os.fstat(self._fd).st_size < self._start + self.size * dtype.itemsize:
                raise ValueError(f"{path} is shorter than its header says")
        except BaseException:
            self.close()
            raise
        self._lock = threading.Lock()  # the seek-and-read fallback only

    def __len__(self) -> int:
        return self.size

    def take(self, lo: int, hi: int) -> np.ndarray:
        """``[hi - lo]`` of :attr:`dtype`: elements ``lo`` to ``hi`` (a new array, read from the file).

        Raises:
            OSError: the read failed or came back short; ValueError: the file was closed.
        """
        out = np.empty(hi - lo, dtype=self.dtype)
        if hi <= lo:
            return out
        if self._fd is None:
            raise ValueError(f"{self.name} was closed")
        view, at = memoryview(out).cast("B"), self._start + lo * self.dtype.itemsize
        if hasattr(os, "preadv"):
            got = os.preadv(self._fd, [view], at)
        else:  # pragma: no cover - platforms without preadv
            with self._lock:
                os.lseek(self._fd, at, os.SEEK_SET)
                got = os.readv(self._fd, [view])
        if got != len(view):
            raise OSError(f"short read of {self.name}: {got} of {len(view)} bytes at {at}")
        return out

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


Source = Union[np.ndarray, FileArray]


def _take(src: Source, lo: int, hi: int) -> np.ndarray:
    return src[lo:hi] if isinstance(src, np.ndarray) else src.take(lo, hi)


def blocks(src: Source) -> Iterator[np.ndarray]:
    """``src`` in consecutive slices of :data:`READ_EVERY` (a full read holds one slice in memory at a time)."""
    for lo in range(0, len(src), READ_EVERY):
        yield _take(src, lo, min(lo + READ_EVERY, len(src)))


class Postings:
    """term -> ``(slots [p] int32, tfs [p] uint8|int32)``: a read-only CSR base and a growable delta.

    Args:
        vocab: the base's terms (``vocab[j]`` owns ``slots/tfs[offsets[j]:offsets[j + 1]]``).
        offsets: ``[len(vocab) + 1]`` int64. slots, tfs: ``[postings]`` integer arrays, in memory or
            :class:`FileArray` (read a term at a time). All left out: an empty base.
    """

    def __init__(self, vocab: Sequence[str] = (), offsets: np.ndarray | None = None,
                 slots: Source | None = None, tfs: Source | None = None) -> None:
        self._where: dict[str, int] = {term: j for j, term in enumerate(vocab)}
        self._offsets = (np.ascontiguousarray(offsets, dtype=np.int64) if offsets is not None
                         else np.zeros(1, dtype=np.int64))
        self._slots = slots
        self._tfs = tfs
        self._delta: dict[str, Entry] = {}
        self._n_new = 0  # delta terms the base lacks

    # ------------------------------------------------------------------ reads
    def peek(self, term: str, tfs: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
        """``(slots [p] int32, tfs [p] uint8|int32)`` of ``term`` (read-only: views or fresh reads), or None
        for a term no document has ever held; ``tfs=False``: the slots only (an empty tfs array, nothing read)."""
        j = self._where.get(term)
        entry = self._delta.get(term)
        if j is None:
            return None if entry is None else (np.frombuffer(entry[0], dtype=np.int32), tf_array(entry[1]))
        lo, hi = int(self._offsets[j]), int(self._offsets[j + 1])
        assert self._slots is not None and self._tfs is not None
        slots = _take(self._slots, lo, hi)
        if not tfs:
            if entry is not None:
                slots = np.concatenate([slots.astype(np.int32, copy=False), np.frombuffer(entry[0], dtype=np.int32)])
            return slots, np.zeros(0, dtype=np.uint8)
        base_tfs = _take(self._tfs, lo, hi)
        if entry is None:
            return slots, base_tfs
        tfs_ = base_tfs
        more = tf_array(entry[1])
        wide = np.uint8 if tfs_.dtype == np.uint8 and more.dtype == np.uint8 else np.int32
        return (np.concatenate([slots.astype(np.int32, copy=False), np.frombuffer(entry[0], dtype=np.int32)]),
                np.concatenate([tfs_.astype(wide, copy=False), more.astype(wide, copy=False)]))

    def size(self, term: str) -> int:
        """How many postings ``term`` has (live and removed documents alike; 0 for an unknown term); reads nothing."""
        j = self._where.get(term)
        entry = self._delta.get(term)
        return ((0 if j is None else int(self._offsets[j + 1] - self._offsets[j]))
                + (0 if entry is None else len(entry[0])))

    def narrow(self, term: str) -> bool:
        """True when every frequency of ``term`` is known to be at most :data:`SMALL_TF_MAX` without reading it
        (its base file or array is uint8, its delta run ``'B'``)."""
        entry = self._delta.get(term)
        if entry is not None and entry[1].typecode != "B":
            return False
        return term not in self._where or (self._tfs is not None and self._tfs.dtype == np.uint8)

    def __contains__(self, term: object) -> bool:
        return term in self._where or term in self._delta

    def __iter__(self) -> Iterator[str]:
        """The base's terms in its order, then the delta's new ones in the order they came."""
        yield from list(self._where)
        yield from [t for t in self._delta if t not in self._where]

    def __len__(self) -> int:
        return len(self._where) + self._n_new

    @property
    def delta_postings(self) -> int:
        """Postings in the delta (those added since the base was made)."""
        return sum(len(s) for s, _ in self._delta.values())

    # ----------------------------------------------------------------- writes
    def _entry(self, term: str, wide: bool) -> Entry:
        entry = self._delta.get(term)
        if entry is None:
            entry = self._delta[term] = (array("i"), array("i" if wide else "B"))
            self._n_new += term not in self._where
        elif wide and entry[1].typecode == "B":  # widen this term's delta tfs, once
            entry = self._delta[term] = (entry[0], array("i", entry[1]))
        return entry

    def append(self, term: str, slot: int, tf: int) -> None:
        """Post ``term`` with frequency ``tf`` (>= 1) in document ``slot`` (above every slot posted so far)."""
        entry = self._entry(term, tf > SMALL_TF_MAX)
        entry[0].append(slot)
        entry[1].append(tf)

    def append_run(self, term: str, slots: np.ndarray, tfs: np.ndarray) -> None:
        """:meth:`append` for many documents at once: ``slots [r] int32`` ascending, ``tfs [r]`` integers >= 1."""
        entry = self._entry(term, int(tfs.max()) > SMALL_TF_MAX)
        entry[0].frombytes(np.ascontiguousarray(slots, dtype=np.int32).tobytes())
        entry[1].frombytes(tfs.astype(np.int32 if entry[1].typecode == "i" else np.uint8).tobytes())

    def close(self) -> None:
        """Close the base's files (a new base replaces this one)."""
        for src in (self._slots, self._tfs):
            if isinstance(src, FileArray):
                src.close()
