"""The HNSW graph of the dense index: usearch over int8-quantised unit vectors, labels = row numbers.

HNSW (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using
Hierarchical Navigable Small World graphs", TPAMI 2020) as implemented by usearch (Unum), with the
vectors stored as ``i8`` (usearch scales each component of a unit vector by 127, truncated toward 0): 384
bytes a 384-d vector instead of hnswlib's 1,536, so a 100k-engram store's graph (147k vectors) holds
~97 MiB instead of ~234 MiB (RSS growth of the build, 135k vectors), and the distance kernels touch a
quarter of the memory. The graph only
*finds* candidates: :class:`~plur.index.dense.DenseIndex` re-scores them with the exact float32
vectors it keeps on disk (:mod:`plur.index.dense_rows`), so a hit's cosine is never the quantised one.

Measured on 135,297 real MiniLM vectors of the ``bench_recall`` corpus (M=16, ef_search 128, 300
queries): recall@10 of the exact top 10 when the top 64 the graph returns are re-scored exactly 0.969
at ``ef_construction`` 64, 0.980 at 96 (the default, setting ``hnsw_ef_construction``), 0.988 at 128;
asking for 10 only, 0.952 at 128. Build of those vectors on 2 threads: ~24 s at 128 on a quiet machine.

Deleted labels are removed from the graph (usearch ``remove``), so a search never returns them. A removed
node stays in the graph (and in a saved file) with its int8 vector until usearch reuses its slot for a
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

from ..errors import StoreError, require

__all__ = ["Graph", "QUANTISATION", "SCRUB_LABELS"]

#: What the graph stores per component (usearch scalar kind).
QUANTISATION = "i8"
#: First label of the placeholder vectors :meth:`Graph.scrub` inserts and removes (row labels stay far below).
SCRUB_LABELS = 1 << 62


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
    """An HNSW graph over unit vectors under inner product, labelled by row number.

    Args:
        dims: vector width.
        m: graph degree M (usearch ``connectivity``).
        ef_construction: candidate list size while inserting (usearch ``expansion_add``).
        ef_search: candidate list size while searching (usearch ``expansion_search``); a search
            that asks for more results raises it to that count for the call.

    Raises:
        MissingDependencyError: usearch is not installed (extra ``embed``).
    """

    def __init__(self, dims: int, m: int, ef_construction: int, ef_search: int, *, _index: Any = None) -> None:
        self.dims, self.ef_search = int(dims), int(ef_search)
        if _index is None:
            usearch_index = _usearch()
            _index = usearch_index.Index(ndim=self.dims, metric="ip", dtype=QUANTISATION, connectivity=int(m),
                                         expansion_add=int(ef_construction), expansion_search=self.ef_search)
        self._index = _index

    def __len__(self) -> int:
        """Live labels in the graph."""
        return int(self._index.size)

    def add(self, labels: np.ndarray, vectors: np.ndarray, threads: int = 1) -> None:
        """Insert ``[n] int64`` labels with their ``[n, dims] float32`` unit vectors (quantised here)."""
        if len(labels):
            self._index.add(np.asarray(labels, dtype=np.uint64), np.ascontiguousarray(vectors, dtype=np.float32),
                            threads=max(1, int(threads)))

    def remove(self, labels: list[int]) -> None:
        """Take labels out of the graph; a later search never returns them."""
        if labels:
            self._index.remove(np.asarray(labels, dtype=np.uint64))

    def free_slots(self) -> int:
        """Nodes of removed labels still in the graph (each holds its old int8 vector until reused)."""
        return int(self._index.stats.nodes) - int(self._index.size)

    def scrub(self) -> bool:
        """Overwrite the int8 vector of every removed label in the graph with random data.

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
        self._index.add(labels, filler, threads=1)
        reused = int(self._index.stats.nodes) == nodes
        self._index.remove(labels)
        return reused

    def search(self, q: np.ndarray, count: int) -> np.ndarray:
        """Labels ``[<= count] int64`` of the vectors nearest to the ``[dims] float32`` query, best first
        (by the quantised inner product; the caller re-scores them exactly)."""
        count = min(int(count), len(self))
        if count <= 0:
            return np.empty(0, dtype=np.int64)
        self._index.expansion_search = max(self.ef_search, count)
        found = self._index.search(np.ascontiguousarray(q, dtype=np.float32), count, threads=1)
        return np.asarray(found.keys, dtype=np.int64)

    def save(self, path: Path) -> None:
        """Write the graph to ``path`` (one usearch file)."""
        self._index.save(str(path))

    @classmethod
    def load(cls, path: Path, dims: int, ef_search: int) -> "Graph":
        """Read a graph written by :meth:`save`.

        Raises:
            StoreError: the file is unreadable, or of another width or quantisation.
        """
        usearch_index = _usearch()
        try:
            index = usearch_index.Index.restore(str(path), view=False)
        except Exception as exc:  # noqa: BLE001 - usearch raises RuntimeError/ValueError on a bad file
            raise StoreError(f"{path} cannot be read ({exc})") from None
        if index is None or int(index.ndim) != int(dims) or str(index.dtype).rsplit(".", 1)[-1].lower() != QUANTISATION:
            raise StoreError(f"{path} is not an {QUANTISATION} graph of {dims}-d vectors")
        graph = cls(dims, int(index.connectivity), int(index.expansion_add), ef_search, _index=index)
        index.expansion_search = int(ef_search)
        return graph
