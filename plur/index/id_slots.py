"""Document id -> slot of a BM25 index, in 12 bytes an id instead of a dict's ~66.

The index's one id table is its slot -> id list (``None`` once removed). :class:`IdSlots` finds an id's slot
in it: the ids present when the table was last rebuilt (a load, a save, a compaction) by binary search over
their sorted string hashes ``[n] int64`` beside their slots ``[n] int32``, checked against the table (so a hash
collision or a removed id is never mistaken for another); ids added since in a small dict. Issue 49: the
``{id: slot}`` dict was 6.3 MiB of the 100k-engram leg (66 B an engram, the int objects included).

String hashes are salted per process (``PYTHONHASHSEED``): the arrays are built in the process that uses them,
never saved.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

__all__ = ["IdSlots"]


class IdSlots:
    """``{live id: slot}`` over the slot -> id table ``ids`` (a mapping's reads, :meth:`pop` and item assignment).

    Args:
        ids: the index's slot -> id list, shared: the index appends to it and sets removed slots to ``None``;
            this object reads it and never replaces it.
    """

    def __init__(self, ids: list[str | None]) -> None:
        self._ids = ids
        live = [s for s, i in enumerate(ids) if i is not None]
        hashes = np.fromiter((hash(ids[s]) for s in live), dtype=np.int64, count=len(live))
        order = np.argsort(hashes, kind="stable")
        self._hash = hashes[order]  # [n] int64, ascending
        self._slot = np.asarray(live, dtype=np.int32)[order]  # [n] int32: the slot of each hash
        self._base_live = len(live)
        self._new: dict[str, int] = {}  # ids given a slot since

    def _base_find(self, doc_id: str) -> int | None:
        h = hash(doc_id)
        hashes, i = self._hash, int(np.searchsorted(self._hash, h))
        while i < len(hashes) and hashes[i] == h:
            s = int(self._slot[i])
            if self._ids[s] == doc_id:
                return s
            i += 1
        return None

    def get(self, doc_id: str, default: int | None = None) -> int | None:
        """The slot of a live ``doc_id``, else ``default``."""
        s = self._new.get(doc_id)
        if s is None and len(self._hash) and isinstance(doc_id, str):
            s = self._base_find(doc_id)
        return default if s is None else s

    def __getitem__(self, doc_id: str) -> int:
        s = self.get(doc_id)
        if s is None:
            raise KeyError(doc_id)
        return s

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self.get(doc_id) is not None

    def __setitem__(self, doc_id: str, slot: int) -> None:
        """Record a new document's slot (``ids[slot]`` is ``doc_id``; the id is not live)."""
        self._new[doc_id] = slot

    def pop(self, doc_id: str) -> int:
        """Remove a live id and return its slot; its table entry becomes ``None``.

        Raises:
            KeyError: ``doc_id`` is not live.
        """
        s = self._new.pop(doc_id, None)
        if s is None:
            s = self[doc_id]
            self._base_live -= 1
        self._ids[s] = None
        return s

    def __len__(self) -> int:
        return self._base_live + len(self._new)

    def __iter__(self) -> Iterator[str]:
        return (i for i in self._ids if i is not None)

    def items(self) -> Iterator[tuple[str, int]]:
        """``(id, slot)`` of the live documents, in slot order."""
        return ((i, s) for s, i in enumerate(self._ids) if i is not None)

    @property
    def added(self) -> int:
        """Ids given a slot since the hashed arrays were built (they sit in the dict)."""
        return len(self._new)

    def lookup(self, ids: Iterable[str]) -> list[tuple[str, int]]:
        """``(id, slot)`` of the live ids among ``ids``, in their order (unknown and removed ones left out); one
        vectorised binary search for the lot."""
        want = [i for i in ids if isinstance(i, str)]
        if not want:
            return []
        n = len(self._hash)
        if n:
            hashes = np.fromiter(map(hash, want), dtype=np.int64, count=len(want))
            guess = self._slot[np.minimum(np.searchsorted(self._hash, hashes), n - 1)].tolist()
        else:
            guess = [-1] * len(want)
        table, out = self._ids, []
        for doc_id, s in zip(want, guess):
            if s < 0 or table[s] != doc_id:  # added since, unknown, removed, or a hash shared with another id
                s = self.get(doc_id, -1)
            if s >= 0:
                out.append((doc_id, s))
        return out

    def slots_of(self, ids: Iterable[str]) -> np.ndarray:
        """``[m] int64``: the slots of the live ids among ``ids`` (unknown and removed ones left out)."""
        return np.fromiter((s for _, s in self.lookup(ids)), dtype=np.int64)
