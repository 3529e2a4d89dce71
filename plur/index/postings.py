"""Term -> posting lists of a BM25 index, loaded from its CSR arrays on first use of each term.

A fresh process that opens a saved index (``plur recall --mode bm25``) answers one query, which
touches a handful of terms; turning every term's CSR slice into growable ``array('i')`` pairs up
front cost ~40 ms at 10k engrams. :class:`Postings` keeps the CSR arrays and makes a term's pair
when it is first read or written, so a query pays only for its own terms. Iteration, ``len`` and
``in`` cover loaded and not-yet-loaded terms alike.

A term's frequencies are an ``array('B')`` (uint8, 1 byte a posting) while all of them are at most
:data:`SMALL_TF_MAX`, else ``array('i')``; :func:`tf_array` reads either as numpy. Most postings have
tf 1-3, so this keeps a posting at 5 bytes instead of 8 (issue 30: 100k engrams, ~7M postings).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, MutableMapping, Sequence

import numpy as np

__all__ = ["Postings", "RELEASE_EVERY", "SMALL_TF_MAX", "blocks", "pacer", "peek", "release_pages", "tf_array"]

Entry = tuple[array, array]  # (doc slots array('i'), term frequencies array('B') or array('i'))
#: Largest term frequency an ``array('B')`` holds; a term whose postings have a larger one uses ``array('i')``.
SMALL_TF_MAX = 255
#: Postings a full read of memory-mapped CSR arrays (a load's checks, a save) reads between two releases of their
#: pages (4 MiB of each int32 array): only that much of the files is in RSS at once, not all of them (issue 49: a
#: save at 100k engrams, 7.4M postings, read both files whole, +59 MiB: the peak of a serving process).
RELEASE_EVERY = 1 << 20


def tf_array(tfs: array) -> np.ndarray:
    """A term's frequencies as numpy without a copy: ``[postings]`` uint8 (typecode ``'B'``) or int32 (``'i'``)."""
    return np.frombuffer(tfs, dtype=np.uint8 if tfs.typecode == "B" else np.int32)


class Postings(MutableMapping[str, Entry]):
    """A ``dict[str, (array('i') slots, array('i') tfs)]`` whose entries may still sit in CSR arrays.

    Args:
        vocab: terms of the CSR arrays (``vocab[j]`` owns ``slots/tfs[offsets[j]:offsets[j + 1]]``).
        offsets: ``[len(vocab) + 1]`` int64. slots, tfs: ``[postings]`` int32.
        (All empty: an empty mapping.)
    """

    def __init__(self, vocab: Sequence[str] = (), offsets: np.ndarray | None = None,
                 slots: np.ndarray | None = None, tfs: np.ndarray | None = None) -> None:
        self._loaded: dict[str, Entry] = {}
        self._where: dict[str, int] = {term: j for j, term in enumerate(vocab)}
        self._bounds: list[int] = offsets.tolist() if offsets is not None else [0]
        self._slots = np.ascontiguousarray(slots, dtype=np.int32) if slots is not None else None
        self._tfs = np.ascontiguousarray(tfs, dtype=np.int32) if tfs is not None else None
        self.release_pages()

    def _load(self, term: str) -> Entry | None:
        j = self._where.pop(term, None)
        if j is None:
            return None
        lo, hi = self._bounds[j], self._bounds[j + 1]
        assert self._slots is not None and self._tfs is not None
        tfs = self._tfs[lo:hi]
        small = hi == lo or int(tfs.max()) <= SMALL_TF_MAX
        entry = (array("i", self._slots[lo:hi].tobytes()),
                 array("B", tfs.astype(np.uint8).tobytes()) if small else array("i", tfs.tobytes()))
        self._loaded[term] = entry
        if not self._where:  # every term made: the CSR copy is no longer needed
            self._slots = self._tfs = None
        return entry

    def peek(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """``(slots [p] int32, tfs [p] uint8|int32)`` of a term without making its arrays (read-only views).

        Raises:
            KeyError: an unknown term.
        """
        entry = self._loaded.get(term)
        if entry is not None:
            return np.frombuffer(entry[0], dtype=np.int32), tf_array(entry[1])
        j = self._where[term]
        lo, hi = self._bounds[j], self._bounds[j + 1]
        assert self._slots is not None and self._tfs is not None
        return self._slots[lo:hi], self._tfs[lo:hi]

    def release_pages(self) -> None:
        """Let go of the pages of memory-mapped CSR arrays this process has read (a full read: the load's checks, a
        save): they stay in the kernel's page cache, out of this process's RSS, until a query reads them again."""
        for arr in (self._slots, self._tfs):
            release_pages(arr)

    def get(self, term: str, default: Entry | None = None) -> Entry | None:  # type: ignore[override]
        entry = self._loaded.get(term)
        if entry is None:
            entry = self._load(term)
        return default if entry is None else entry

    def __getitem__(self, term: str) -> Entry:
        entry = self.get(term)
        if entry is None:
            raise KeyError(term)
        return entry

    def __setitem__(self, term: str, entry: Entry) -> None:
        self._where.pop(term, None)
        self._loaded[term] = entry

    def __delitem__(self, term: str) -> None:
        if self._loaded.pop(term, None) is None and self._where.pop(term, None) is None:
            raise KeyError(term)

    def __contains__(self, term: object) -> bool:
        return term in self._loaded or term in self._where

    def __iter__(self) -> Iterator[str]:
        return iter([*self._loaded, *self._where])

    def __len__(self) -> int:
        return len(self._loaded) + len(self._where)


def peek(postings: MutableMapping[str, Entry], term: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(slots [p] int32, tfs [p] uint8|int32)`` of ``term`` as read-only views, or None for an unknown term.

    A search reads postings this way: a term still in the (memory-mapped) CSR arrays of a loaded index is read
    there, never copied into arrays of its own (only a write to a term makes them).
    """
    if isinstance(postings, Postings):
        try:
            return postings.peek(term)
        except KeyError:
            return None
    entry = postings.get(term)
    return None if entry is None else (np.frombuffer(entry[0], dtype=np.int32), tf_array(entry[1]))


def release_pages(arr: np.ndarray | None) -> None:
    """``madvise(MADV_DONTNEED)`` over a memory-mapped array's pages (a no-op for an array on the heap)."""
    import mmap

    base = arr
    while base is not None and not isinstance(base, np.memmap) and isinstance(getattr(base, "base", None), np.ndarray):
        base = base.base
    raw = getattr(base, "_mmap", None) if isinstance(base, np.memmap) else None
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if raw is not None and advice is not None:
        try:
            raw.madvise(advice)
        except (OSError, ValueError):  # a closed map or a platform without it: the pages simply stay
            pass


def blocks(arr: np.ndarray) -> Iterator[np.ndarray]:
    """``arr`` in consecutive slices of :data:`RELEASE_EVERY`, the pages of each let go (:func:`release_pages`)
    once the caller is done with it: a full read of a memory-mapped array holds one slice in RSS at a time."""
    step = RELEASE_EVERY
    for lo in range(0, len(arr), step):
        yield arr[lo:lo + step]
        release_pages(arr)


def pacer(release: Callable[[], None]) -> Callable[[int], None]:
    """A callback for a loop that reads postings: told how many each step read, it calls ``release`` every
    :data:`RELEASE_EVERY` of them (:meth:`Postings.release_pages` for a loaded index)."""
    left = RELEASE_EVERY

    def read(n: int) -> None:
        nonlocal left
        left -= n
        if left <= 0:
            release()
            left = RELEASE_EVERY

    return read
