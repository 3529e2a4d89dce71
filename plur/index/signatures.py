"""Engram id -> a 64-bit digest of its BM25 signature, in ~28 bytes an id instead of a dict's ~123.

The index manifest's ``lexical`` map tells, on open, which engrams' BM25 documents changed since the save
(:meth:`plur.index.indexes.IndexSet.sync`). Issue 49: held as ``{id: signature string}`` it was 11.8 MiB of a
100k-engram serving process (the dict entry plus a 36-character string an engram). :class:`SignatureTable`
keeps a slot -> id list (the id strings are the store's, shared), an :class:`~plur.index.id_slots.IdSlots` over
it (12 B an id) and one ``int64`` blake2b digest a slot (8 B). A changed signature whose 64-bit digest equals
the old one's (odds 2^-64 a change) would go unnoticed until the engram changes again.

The manifest stores the digests (:data:`DIGEST`, ``lexical_digest``); a manifest with signature strings (older
saves) is digested on open.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from .id_slots import IdSlots

__all__ = ["DIGEST", "SignatureTable", "digest"]

#: The manifest's ``lexical_digest`` value when its ``lexical`` entries are :func:`digest` ints.
DIGEST = "blake2b-64"


def digest(signature: str) -> int:
    """The signed 64-bit blake2b digest of a signature (stable across processes, unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(signature.encode(), digest_size=8).digest(), "little", signed=True)


class SignatureTable(Mapping[str, int]):
    """``{id: digest of its signature}``: a mapping's reads, :meth:`put` (takes the signature) and :meth:`pop`.

    Args:
        entries: ``(id, signature)`` pairs, or ``(id, digest)`` pairs with ``digested=True`` (a manifest's).
        digested: the values are already :func:`digest` ints.
    """

    def __init__(self, entries: Iterable[tuple[str, str | int]] = (), *, digested: bool = False) -> None:
        ids: list[str | None] = []
        values: list[int] = []
        for k, v in entries:
            ids.append(sys.intern(k))  # the store's id strings are interned: shared, not copied
            values.append(int(v) if digested else digest(v))
        self._reset(ids, np.asarray(values, dtype=np.int64).reshape(-1))

    def _reset(self, ids: list[str | None], values: np.ndarray) -> None:
        self._ids = ids
        self._digest = values  # [capacity] int64; slot s of ids[s]
        self._slots = IdSlots(ids)
        self._dead = 0

    def __getitem__(self, doc_id: str) -> int:
        return int(self._digest[self._slots[doc_id]])

    def get(self, doc_id: str, default: int | None = None) -> int | None:  # type: ignore[override]
        s = self._slots.get(doc_id)
        return default if s is None else int(self._digest[s])

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slots

    def __iter__(self) -> Iterator[str]:
        return iter(self._slots)

    def __len__(self) -> int:
        return len(self._slots)

    def put(self, doc_id: str, signature: str) -> None:
        """Record ``doc_id``'s current signature (added or replaced)."""
        d = digest(signature)
        s = self._slots.get(doc_id)
        if s is None:
            s = len(self._ids)
            self._ids.append(doc_id)
            if s >= len(self._digest):
                grown = np.zeros(max(1024, 2 * len(self._digest)), dtype=np.int64)
                grown[:len(self._digest)] = self._digest
                self._digest = grown
            self._slots[doc_id] = s
        self._digest[s] = d
        if self._slots.added > 4096 + len(self) // 8:
            self._compact()

    def pop(self, doc_id: str, default: int | None = None) -> int | None:  # type: ignore[override]
        """Forget ``doc_id``; its digest, or ``default`` when it was not there."""
        s = self._slots.get(doc_id)
        if s is None:
            return default
        value = int(self._digest[s])  # read before a compaction renumbers the slots
        self._slots.pop(doc_id)
        self._dead += 1
        if self._dead > 1024 + len(self):
            self._compact()
        return value

    def changed(self, want: Mapping[str, str]) -> list[str]:
        """Ids of ``want`` (id -> signature) whose signature differs from the recorded one, or not recorded; in
        ``want``'s order."""
        ids = list(want)
        new = np.fromiter((digest(want[i]) for i in ids), dtype=np.int64, count=len(ids))
        have = np.zeros(len(ids), dtype=np.int64)
        known = np.zeros(len(ids), dtype=bool)
        n = 0
        for doc_id, s in self._slots.lookup(ids):  # in ``ids``' order, unknown ids left out
            while ids[n] is not doc_id and ids[n] != doc_id:
                n += 1
            have[n], known[n] = self._digest[s], True
            n += 1
        return [ids[n] for n in np.flatnonzero(~known | (have != new)).tolist()]

    def to_json(self) -> dict[str, int]:
        """``{id: digest}`` for the manifest (a transient dict)."""
        return {i: int(self._digest[s]) for i, s in self._slots.items()}

    def _compact(self) -> None:
        """Drop removed slots and rebuild the id lookup (its dict of ids added since the last build empties)."""
        live = list(self._slots.items())
        self._reset([i for i, _ in live], self._digest[np.asarray([s for _, s in live], dtype=np.int64)])
