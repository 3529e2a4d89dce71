"""The HNSW graph of the dense index: usearch over 1-bit (or int8) vectors, labels = row numbers.

HNSW (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using
Hierarchical Navigable Small World graphs", TPAMI 2020) as implemented by usearch (Unum). The graph only
*finds* candidates: :class:`~plur.index.dense.DenseIndex` re-scores them with the exact float32
vectors it keeps on disk (:mod:`plur.index.dense_rows`), so a hit's cosine is never the quantised one.
What a node stores (setting ``hnsw_quantisation``):

* ``b1`` (the default for new graphs): one sign bit a dimension of the vector minus :attr:`Graph.centre` (the
  mean of the rows the graph was built from, saved in the index's ``meta.json``), compared by Hamming distance
  (usearch ``b1``/``hamming``; sign-random-projection hashing, Charikar, STOC 2002, with the data's own axes).
  48 bytes a 384-d vector. Centring matters: MiniLM vectors share a large common component, and uncentred
  signs agree on most bits for every pair. More candidates are re-scored (:meth:`Graph.candidates`:
  max(256, 3 k), :data:`B1_CANDIDATES_PER_RESULT`; 4 k at first). Measured at 157k real MiniLM vectors (the 100k-engram scale home, docs/performance.md):
  graph file 79.8 -> 29.4 MiB, loaded index 138.7 -> 88.5 MiB, service peak RSS ~639 -> ~578 MiB, recall@10 of
  the exact top 10 for 300 LoCoMo questions 0.974 -> 0.988, ~5.6 ms more CPU a dense search (the graph's wider
  beam and the re-scoring's ``pread``). Weak on tight synthetic clusters (recall@10 0.86 on the 50k
  clustered test data, where the signs of many near neighbours coincide).
* ``i8`` (older graphs, and the setting's other value): usearch scales each component of a unit vector by
  127, truncated toward 0, inner product: 384 bytes a vector; max(k, 64) candidates re-scored. Measured on
  135,297 real MiniLM vectors of the ``bench_recall`` corpus (M=16, ef_search 128, 300 queries):
  recall@10 0.969 at ``ef_construction`` 64, 0.980 at 96 (the default, setting ``hnsw_ef_construction``),
  0.988 at 128. A saved i8 graph loads and answers as before; it becomes the setting's kind at its next
  rebuild.

Deleted labels are removed from the graph (usearch ``remove``), so a search never returns them. A removed
node stays in the graph (and in a saved file) with its quantised vector until usearch reuses its slot for a
later insert; :meth:`Graph.scrub` makes that happen at once, for ``forget``: it inserts as many random
unit vectors as there are free slots, checks that no new slot was allocated (so each went into a freed
one), and removes them again. A forget then costs a graph save instead of a rebuild (49 s at 147k
vectors, issue 30).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError, ValidationError, require

__all__ = ["Graph", "KINDS", "QUANTISATION", "SCRUB_LABELS"]

#: What a new graph stores per component (usearch scalar kind) unless told otherwise (setting ``hnsw_quantisation``).
QUANTISATION = "b1"
#: The kinds a graph may store: one sign bit of the centred component (Hamming), or int8 (inner product).
KINDS = ("b1", "i8")
_METRIC = {"b1": "hamming", "i8": "ip"}
#: First label of the placeholder vectors :meth:`Graph.scrub` inserts and removes (row labels stay far below).
SCRUB_LABELS = 1 << 62
#: Candidates a ``b1`` graph is asked for at least, and per result asked for (all re-scored exactly). Measured on
#: 157k real MiniLM vectors, k = 10: recall@10 0.988 of the exact top 10 (the ``i8`` graph's 64: 0.974). Hybrid
#: recall asks for 100 (doubled for chunked engrams, each row read with ``pread``); 300 LoCoMo queries, k = 100,
#: per result 4 / 3 / 2: recall@10 0.993 / 0.992 / 0.991, recall@100 0.961 / 0.942 / 0.929 (i8: 0.978, 0.963),
#: search CPU p50 8.0 / 4.4 / 3.6 ms (i8: 1.6); LoCoMo R_any@10 among 100k distractors 0.7943 with each.
B1_MIN_CANDIDATES, B1_CANDIDATES_PER_RESULT = 256, 3
#: Candidates an ``i8`` graph is asked for at least: int8 reorders near neighbours (clustered 50k x 384, k = 10:
#: recall@10 0.85 asking for 10, >= 0.99 asking for 64; 135k real MiniLM vectors: 0.988 for 64 or 100).
I8_MIN_CANDIDATES = 64


def _usearch() -> Any:
    """``usearch.index``, imported after the system C++ runtime is loaded into the global symbol scope (Linux).

    usearch's extension links libstdc++ statically and exports its ``STB_GNU_UNIQUE`` symbols (107 in 2.26.6);
    loaded first, it defines them for the whole process, and importing onnxruntime afterwards segfaults in
    libstdc++ every time (``import usearch.compiled; import onnxruntime`` -> SIGSEGV; usearch 2.26.6,
    onnxruntime 1.32.0). ``plur forget`` in a fresh process hit it: the saved graph was purged, then the model
    was loaded to find the engram's chunk keys. Loading ``libstdc++.so.6`` with ``RTLD_GLOBAL`` first makes
    the shared runtime's definitions the ones every later library binds to, whichever is imported next.

    Raises:
        MissingDependencyError: usearch is not installed (extra ``embed``).
    """
    if sys.platform.startswith("linux") and "usearch.compiled" not in sys.modules:
        import ctypes

        with contextlib.suppress(OSError):  # no shared libstdc++ (a static build): nothing to put first
            ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
    return require("usearch.index", "embed")


class Graph:
    """An HNSW graph over unit vectors, labelled by row number; it finds candidates, the caller re-scores them.

    Args:
        dims: vector width.
        m: graph degree M (usearch ``connectivity``).
        ef_construction: candidate list size while inserting (usearch ``expansion_add``).
        ef_search: candidate list size while searching (usearch ``expansion_search``); a search
            that asks for more results raises it to that count for the call.
        quantisation: ``b1`` (sign bits of the centred vector, Hamming) or ``i8`` (int8, inner product).
        centre: ``[dims] float32`` subtracted from every vector and query before its signs are taken (``b1``
            only; the mean of the rows the graph is built from). Default: zeros.

    Raises:
        MissingDependencyError: usearch is not installed (extra ``embed``).
        ValidationError: ``quantisation`` is not one of :data:`KINDS`, or ``centre`` is not ``[dims]``.
    """

    def __init__(self, dims: int, m: int, ef_construction: int, ef_search: int, *, quantisation: str = QUANTISATION,
                 centre: np.ndarray | None = None, _index: Any = None) -> None:
        if quantisation not in KINDS:
            raise ValidationError(f"HNSW quantisation {quantisation!r} is not one of {', '.join(KINDS)}")
        self.dims, self.ef_search, self.quantisation = int(dims), int(ef_search), quantisation
        self.centre: np.ndarray | None = None
        if quantisation == "b1":
            centre = np.zeros(self.dims, dtype=np.float32) if centre is None else np.asarray(centre, dtype=np.float32)
            if centre.shape != (self.dims,) or not np.isfinite(centre).all():
                raise ValidationError(f"a b1 graph's centre must be [{self.dims}] finite floats, got {centre.shape}")
            self.centre = np.ascontiguousarray(centre)
        if _index is None:
            usearch_index = _usearch()
            _index = usearch_index.Index(ndim=self.dims, metric=_METRIC[quantisation], dtype=quantisation,
                                         connectivity=int(m), expansion_add=int(ef_construction),
                                         expansion_search=self.ef_search)
        self._index = _index

    def __len__(self) -> int:
        """Live labels in the graph."""
        return int(self._index.size)

    def candidates(self, k: int) -> int:
        """How many candidates to ask for (and re-score exactly) to return ``k`` results."""
        if self.quantisation == "b1":
            return max(B1_MIN_CANDIDATES, B1_CANDIDATES_PER_RESULT * int(k))
        return max(int(k), I8_MIN_CANDIDATES)

    def _coded(self, vectors: np.ndarray) -> np.ndarray:
        """What usearch stores for ``[n, dims]`` (or ``[dims]``) float32 unit vectors: the float32 vectors
        (``i8``: usearch quantises them) or their centred sign bits packed 8 a byte (``b1``: ``[n, dims / 8] uint8``)."""
        x = np.asarray(vectors, dtype=np.float32)
        if self.centre is None:
            return np.ascontiguousarray(x)
        return np.packbits(x > self.centre, axis=-1)

    def add(self, labels: np.ndarray, vectors: np.ndarray, threads: int = 1) -> None:
        """Insert ``[n] int64`` labels with their ``[n, dims] float32`` unit vectors (quantised here)."""
        if len(labels):
            self._index.add(np.asarray(labels, dtype=np.uint64), self._coded(vectors), threads=max(1, int(threads)))

    def remove(self, labels: list[int]) -> None:
        """Take labels out of the graph; a later search never returns them."""
        if labels:
            self._index.remove(np.asarray(labels, dtype=np.uint64))

    def free_slots(self) -> int:
        """Nodes of removed labels still in the graph (each holds its old quantised vector until reused)."""
        return int(self._index.stats.nodes) - int(self._index.size)

    def scrub(self) -> bool:
        """Overwrite the quantised vector of every removed label in the graph with random data.

        Returns:
            True when every freed slot now holds a placeholder (none of the removed vectors is left in memory or
            in a later :meth:`save`); False when usearch allocated a new slot instead of reusing a freed one, in
            which case the caller must rebuild the graph from the live rows to erase them.
        """
        nodes = int(self._index.stats.nodes)  # stats walks the graph (~5 ms at 147k nodes): read it once
        free = nodes - int(self._index.size)
        if free <= 0:
            return True
        labels = np.arange(SCRUB_LABELS, SCRUB_LABELS + free, dtype=np.uint64)
        filler = np.random.default_rng().standard_normal((free, self.dims)).astype(np.float32)
        filler /= np.linalg.norm(filler, axis=1, keepdims=True)
        self.add(labels, filler)
        reused = int(self._index.stats.nodes) == nodes
        self._index.remove(labels)
        return reused

    def search(self, q: np.ndarray, count: int) -> np.ndarray:
        """Labels ``[<= count] int64`` of the vectors nearest to the ``[dims] float32`` query, best first
        (by the quantised distance; the caller re-scores them exactly)."""
        count = min(int(count), len(self))
        if count <= 0:
            return np.empty(0, dtype=np.int64)
        self._index.expansion_search = max(self.ef_search, count)
        found = self._index.search(self._coded(q), count, threads=1)
        return np.asarray(found.keys, dtype=np.int64)

    def save(self, path: Path) -> None:
        """Write the graph to ``path`` (one usearch file; the caller saves :attr:`centre`)."""
        self._index.save(str(path))

    @classmethod
    def load(cls, path: Path, dims: int, ef_search: int, *, ef_construction: int | None = None,
             centre: np.ndarray | None = None) -> "Graph":
        """Read a graph written by :meth:`save`, of whichever kind it stores.

        Args:
            ef_construction: candidate list size for later inserts (the file does not keep it; default usearch's).
            centre: the ``[dims]`` centre the graph was built with (required for a ``b1`` graph).

        Raises:
            StoreError: the file is unreadable, of another width or kind, or a ``b1`` graph without its centre.
        """
        usearch_index = _usearch()
        try:
            index = usearch_index.Index.restore(str(path), view=False)
        except Exception as exc:  # noqa: BLE001 - usearch raises RuntimeError/ValueError on a bad file
            raise StoreError(f"{path} cannot be read ({exc})") from None
        kind = "" if index is None else str(index.dtype).rsplit(".", 1)[-1].lower()
        if index is None or int(index.ndim) != int(dims) or kind not in KINDS:
            raise StoreError(f"{path} is not a {' or '.join(KINDS)} graph of {dims}-d vectors")
        if kind == "b1" and centre is None:
            raise StoreError(f"{path} is a b1 graph but its centre was not saved")
        if ef_construction is not None:
            index.expansion_add = int(ef_construction)
        try:
            graph = cls(dims, int(index.connectivity), int(index.expansion_add), ef_search, quantisation=kind,
                        centre=centre if kind == "b1" else None, _index=index)
        except ValidationError as exc:
            raise StoreError(f"{path}: {exc}") from None
        index.expansion_search = int(ef_search)
        return graph
