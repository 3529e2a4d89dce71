"""Search of the dense index: exact (blocked inner products) or HNSW over the same rows, best chunk per id.

A mixin of :class:`plur.index.dense.DenseIndex` (which holds the rows, ids and the graph); one BLAS
thread per search (:func:`_one_blas_thread`), since a query is one matrix-vector product.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from itertools import repeat
from typing import Any

import numpy as np

from ..errors import ValidationError

_BLAS: Any = None


def _one_blas_thread() -> Any:
    """Context that runs numpy's BLAS on one thread (threadpoolctl; ~6 us to enter).

    A query's matrix-vector product is small and memory-bound; a multi-threaded OpenBLAS pool
    busy-waits after it and starves torch's OpenMP threads embedding the next query. Measured on
    2 cores, 10k x 384: query embedding p99 111 ms -> 11 ms, exact search p50 2.0 -> 1.1 ms.
    """
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


class DenseSearch:
    """The search methods of :class:`~plur.index.dense.DenseIndex` (mixin)."""

    def search(self, vector: np.ndarray, k: int, allowed: Collection[str] | None = None) -> list[tuple[str, float]]:
        """The ``k`` ids most similar to ``vector``.

        Args:
            vector: ``[dims]`` float query (normalised here).
            k: how many ids; clamped to the live (allowed) count.
            allowed: if given, only these ids may be returned (authorisation, not a hint).

        Returns:
            ``[(id, cosine)]``, highest first, each id once (its best vector), ties by id.

        Raises:
            ValidationError: bad shape, non-finite or zero query, negative k.
        """
        q = self._check_matrix(vector, None)
        if k < 0:
            raise ValidationError(f"k={k} must be >= 0")
        with self._lock, _one_blas_thread():
            if allowed is None:
                k = min(k, len(self._rows_of))
                if k == 0:
                    return []
                found = self._hnsw_search(q, k, None) if self.uses_hnsw else None
                return found if found is not None else self._exact_all(q, k, None)
            slots = self._allowed_slots(allowed)
            k = min(k, len(slots))
            if k == 0:
                return []
            if len(slots) <= self.small_allowed_fraction * len(self._rows_of):
                return self._exact_subset(q, k, slots)
            slot_ok = np.zeros(len(self._slot_ids), dtype=bool)
            slot_ok[slots] = True
            found = self._hnsw_search(q, k, slot_ok) if self.uses_hnsw else None
            return found if found is not None else self._exact_all(q, k, slot_ok)

    def scores_for(self, vector: np.ndarray, ids: Iterable[str]) -> dict[str, float]:
        """Cosine of ``vector`` with each of ``ids`` (its best chunk), whatever their rank.

        Hybrid recall fills in the dense score of an engram that only the BM25 leg returned, so
        fusion sums both legs' evidence for every candidate (a leg's top ``k`` cut would count it as 0).

        Args:
            vector: ``[dims]`` float query (normalised here).
            ids: engram ids; ids without a live vector (unknown, removed, not yet embedded) are left out.

        Returns:
            ``{id: cosine in [-1, 1]}``.

        Raises:
            ValidationError: bad shape, non-finite or zero query.
        """
        q = self._check_matrix(vector, None)
        ids = ids if isinstance(ids, Collection) else list(ids)
        with self._lock, _one_blas_thread():
            slots = self._allowed_slots(ids)
            return dict(self._exact_subset(q, len(slots), slots)) if len(slots) else {}

    def closest_pieces(self, vector: np.ndarray, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """Each id's stored vector (chunk) closest to ``vector``: what of a long note answers the query.

        Args:
            vector: ``[dims]`` float query (normalised here).
            ids: engram ids; ids without a live vector are left out.

        Returns:
            ``{id: [dims] float32}`` (unit norm, a copy).

        Raises:
            ValidationError: bad shape, non-finite or zero query.
        """
        q = self._check_matrix(vector, None)
        with self._lock, _one_blas_thread():
            owned = [(i, self._rows_of[i]) for i in dict.fromkeys(ids) if self._rows_of.get(i)]
            if not owned:
                return {}
            m = self._matrix(np.fromiter((r for _, rows in owned for r in rows), dtype=np.int64))
        scores = m @ q
        out: dict[str, np.ndarray] = {}
        start = 0
        for engram_id, rows in owned:
            best = start + int(np.argmax(scores[start:start + len(rows)]))
            out[engram_id] = m[best].copy()
            start += len(rows)
        return out

    def _allowed_slots(self, allowed: Collection[str]) -> np.ndarray:
        """Slots of the live ids in ``allowed`` (unique, ``[m] int64``); unknown ids are dropped."""
        slots = np.fromiter(map(self._slot_of.get, allowed, repeat(-1)), dtype=np.int64, count=len(allowed))
        slots = slots[slots >= 0]
        return np.unique(slots[self._slot_live[slots]])

    def _exact_subset(self, q: np.ndarray, k: int, slots: np.ndarray) -> list[tuple[str, float]]:
        ids = [self._slot_ids[s] for s in slots.tolist()]
        rows = [r for i in ids for r in self._rows_of[i]]
        scores = self._scores(np.asarray(rows, dtype=np.int64), q)
        best: dict[str, float] = {}
        for r, s in zip(rows, scores.tolist()):
            i = self._slot_ids[self._row_slot[r]]
            if s > best.get(i, -np.inf):
                best[i] = s
        return _top(best.items(), k)

    def _exact_all(self, q: np.ndarray, k: int, slot_ok: np.ndarray | None) -> list[tuple[str, float]]:
        n = self._n
        slots = self._row_slot[:n]
        valid = slots >= 0
        if slot_ok is not None:
            valid &= slot_ok[np.where(valid, slots, 0)]
        if self._vecs is not None:
            scores = self._vecs[:n] @ q
        else:  # vectors live in the graph: score the valid rows in blocks (bounded memory)
            scores = np.full(n, -np.inf, dtype=np.float32)
            live = np.flatnonzero(valid)
            scores[live] = self._scores(live, q)
        if self._multi:
            best = np.full(len(self._slot_ids), -np.inf, dtype=np.float32)
            np.maximum.at(best, slots[valid], scores[valid])
            cand = _argtop(best, k)
            pairs = [(self._slot_ids[s], float(best[s])) for s in cand if best[s] > -np.inf]
        else:
            scores = np.where(valid, scores, -np.inf)
            cand = _argtop(scores, k)
            pairs = [(self._slot_ids[slots[r]], float(scores[r])) for r in cand if valid[r]]
        return _top(pairs, k)

    def _hnsw_search(self, q: np.ndarray, k: int, slot_ok: np.ndarray | None) -> list[tuple[str, float]] | None:
        """HNSW top-k, candidates re-scored with their exact rows; ``None`` when the graph cannot return
        enough allowed ids (the caller then goes exact)."""
        if self._graph is None:
            self._build_graph()
        live = self._live_rows
        # quantised distances only find: ask for the graph's candidates and re-score them all exactly (rows by pread)
        want = self._graph.candidates(k) * (2 if self._multi else 1)
        if slot_ok is None:
            fetch = min(live, want)
        else:  # ask for as many more as the allowed share of the rows suggests
            slots = self._row_slot[:self._n]
            pool = int(np.count_nonzero((slots >= 0) & slot_ok[np.maximum(slots, 0)]))
            if pool == 0:
                return None
            fetch = min(live, int(np.ceil(want * live / pool)))
        while True:
            labels = self._graph.search(q, fetch)
            slot = self._row_slot[labels]
            ok = slot >= 0
            if slot_ok is not None:
                ok &= slot_ok[np.maximum(slot, 0)]  # never leak
            labels, slot = labels[ok], slot[ok]
            scores = self._scores(labels, q) if len(labels) else np.empty(0, dtype=np.float32)
            if self._multi:  # best chunk per id
                order = np.lexsort((-scores, slot))
                first = np.ones(len(order), dtype=bool)
                first[1:] = slot[order][1:] != slot[order][:-1]
                slot, scores = slot[order][first], scores[order][first]
            if len(slot) >= k:
                ids = self._slot_ids
                return _top(zip([ids[s] for s in slot.tolist()], scores.tolist()), k)
            if fetch >= live or fetch >= _MAX_FETCH:
                return None
            fetch = min(live, 2 * fetch)


#: Most candidates asked of the graph in one search before an ``allowed`` search goes exact instead.
_MAX_FETCH = 8192


def _argtop(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values (unordered), k clamped to the length."""
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k == scores.shape[0]:
        return np.arange(k)
    return np.argpartition(-scores, k - 1)[:k]


def _top(pairs: Iterable[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    clipped = ((i, min(1.0, max(-1.0, float(s)))) for i, s in pairs)  # float32 rounding can pass 1.0
    return sorted(clipped, key=lambda p: (-p[1], p[0]))[:k]


__all__ = ["DenseSearch"]
