"""Dense index: cosine top-k over unit vectors, exact (numpy) when small, HNSW (usearch, 1-bit) when large.

One id may own several vectors (the chunks of a long engram); search returns each id once, with
its best chunk's score. Vectors are L2-normalised on the way in, so the inner product is the
cosine similarity, in [-1, 1], higher is better.

When each path runs:

* exact -- ``vectors @ query`` over a contiguous ``[n, dims] float32`` matrix, while the index
  holds fewer than ``exact_threshold`` live vectors, and whenever an ``allowed`` set covers at
  most ``small_allowed_fraction`` (5%) of the live ids (then only those ids' rows are scored);
* HNSW -- :mod:`plur.index.graph` (usearch; sign bits of the centred vectors, Hamming, or int8 vectors,
  inner product: ``quantisation``), built on first use above
  the threshold (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using
  Hierarchical Navigable Small World graphs", TPAMI 2020); deletes remove the labels, a re-added id
  gets new labels. The graph only finds candidates: each is re-scored with its exact float32 row, so
  a returned cosine is never the quantised one. With ``allowed`` the graph is asked for more
  candidates (in proportion to the share of rows allowed, doubled until k allowed ids come back) and
  the search falls back to exact when that fails. No id outside ``allowed`` is ever returned.

Where the float32 rows live: in a ``[capacity, dims]`` array on the heap while there is no graph;
once there is one, on disk (:class:`plur.index.dense_rows.RowStore`: the saved ``vectors.npy`` plus an
unlinked scratch file for newer rows, read with ``pread``), so a 157k-vector index holds the graph
(~30 MiB b1, ~80 MiB i8) and no second copy.

The search methods (exact and HNSW) are :mod:`plur.index.dense_search`. On disk
(:mod:`plur.index.dense_io`): ``vectors.npy`` (all rows, dead ones included, so HNSW labels
stay row numbers), ``ids.json`` (owner id per row, ``null`` if dead), ``graph.usearch`` (if built) and
``meta.json`` (format version, dims, identity, parameters, row count, sha256 of ids.json),
written last.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ValidationError
from .dense_io import FORMAT_VERSION, load_index, save_index
from .dense_rows import BLOCK_ROWS, RowStore
from .dense_search import DenseSearch

_COMPACT_MIN_DEAD = 1024  # compact once dead rows exceed max(this, live rows)



class DenseIndex(DenseSearch):
    """Cosine top-k over (id, vector) pairs.

    Args:
        dims: vector width (384 for bge-small).
        m: HNSW graph degree M (16).
        ef_construction: HNSW candidate list size while building.
        ef_search: HNSW candidate list size while searching; raised to the number fetched when larger.
        exact_threshold: below this many live vectors, search is exact.
        num_threads: threads for HNSW inserts.
        small_allowed_fraction: an ``allowed`` set at most this fraction of the live ids is
            searched exactly over its own rows.
        quantisation: what the next graph built stores (:data:`plur.index.graph.KINDS`: ``b1`` or ``i8``); a
            graph loaded from disk keeps its own kind until it is rebuilt.

    Attributes:
        identity: the embedding model identity the vectors came from (set by the caller; saved).
        scratch_dir: folder for the unlinked scratch file of float32 rows added while a graph exists
            (the index folder when :class:`~plur.index.indexes.IndexSet` owns it; default the temp folder).

    Thread-safe: every public method holds one re-entrant lock.
    """

    def __init__(self, dims: int, m: int = 16, ef_construction: int = 200, ef_search: int = 128,
                 exact_threshold: int = 20000, *, num_threads: int = 1,
                 small_allowed_fraction: float = 0.05, quantisation: str = "b1") -> None:
        if dims < 1:
            raise ValidationError(f"dims={dims} must be >= 1")
        if m < 2 or ef_construction < 1 or ef_search < 1:
            raise ValidationError(f"HNSW parameters m={m}, ef_construction={ef_construction}, "
                                  f"ef_search={ef_search} must be >= 2, >= 1, >= 1")
        if quantisation not in ("b1", "i8"):
            raise ValidationError(f"HNSW quantisation {quantisation!r} must be b1 or i8 (setting hnsw_quantisation)")
        self.dims, self.quantisation = int(dims), quantisation
        self.m, self.ef_construction, self.ef_search = int(m), int(ef_construction), int(ef_search)
        self.exact_threshold, self.num_threads = int(exact_threshold), int(num_threads)
        self.small_allowed_fraction = float(small_allowed_fraction)
        self.identity = ""
        self._scratch_dir: Path | None = None
        self._lock = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        # [capacity, dims] float32; rows [0, _n) used. None once there is a graph: the rows are then in
        # _rows (on disk), and a heap copy would cost 216 MiB at 147k x 384.
        self._vecs: np.ndarray | None = np.empty((0, self.dims), dtype=np.float32)
        self._row_slot = np.empty(0, dtype=np.int64)             # row -> slot of its id, -1 if dead
        self._n = 0
        self._slot_ids: list[str] = []                           # slot -> id
        self._slot_of: dict[str, int] = {}                       # id -> slot (kept after removal)
        self._rows_of: dict[str, list[int]] = {}                 # live id -> its rows
        self._slot_live = np.zeros(0, dtype=bool)                # slot -> id is live
        self._live_rows = 0
        self._multi = 0                                          # live ids owning > 1 row
        self._graph: Any = None                                  # plur.index.graph.Graph over [0, _n) once built
        if getattr(self, "_rows", None) is not None:
            self._rows.close()
        self._rows: RowStore | None = None                       # the float32 rows while there is a graph

    @property
    def scratch_dir(self) -> Path | None:
        """Folder of the unlinked scratch file holding float32 rows added while a graph exists (None: temp folder)."""
        return self._scratch_dir

    @scratch_dir.setter
    def scratch_dir(self, folder: Path | None) -> None:
        self._scratch_dir = None if folder is None else Path(folder)
        if self._rows is not None:
            self._rows.scratch_dir = self._scratch_dir

    # -- size ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Number of live ids."""
        return len(self._rows_of)

    def __contains__(self, engram_id: object) -> bool:
        return engram_id in self._rows_of

    @property
    def vector_count(self) -> int:
        """Number of live vectors (chunks), >= ``len(self)``."""
        return self._live_rows

    @property
    def uses_hnsw(self) -> bool:
        """True when an unfiltered search would take the HNSW path."""
        return self._live_rows >= self.exact_threshold

    def ids(self) -> list[str]:
        """The live ids, in insertion order."""
        with self._lock:
            return list(self._rows_of)

    # -- mutation ------------------------------------------------------------------------------
    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Add vectors; an id repeated within the call owns several vectors (chunks).

        An id already in the index has all its old vectors replaced.

        Args:
            ids: ``n`` ids (non-empty strings), repeats allowed.
            vectors: ``[n, dims]`` float (cast to float32, L2-normalised here).

        Raises:
            ValidationError: wrong shape, a non-finite value, a zero vector, or a bad id.
        """
        ids = list(ids)
        x = self._check_matrix(vectors, len(ids))
        for i in ids:
            if not isinstance(i, str) or not i:
                raise ValidationError(f"dense index ids must be non-empty strings, got {i!r}")
        if not ids:
            return
        with self._lock:
            for i in dict.fromkeys(ids):
                if i in self._rows_of:
                    self._remove_one(i)
            self._maybe_compact()
            start = self._n
            self._grow(start + len(ids))
            if self._vecs is not None:
                self._vecs[start:start + len(ids)] = x
            else:
                self._rows.append(x)
            for row, i in enumerate(ids, start):
                self._attach(row, i)
            self._n += len(ids)
            if self._graph is not None:
                self._graph.add(np.arange(start, self._n), x, self.num_threads)

    def remove(self, ids: Iterable[str]) -> int:
        """Remove ids and all their vectors; unknown ids are ignored.

        Returns:
            How many ids were removed.
        """
        with self._lock:
            removed = sum(self._remove_one(i) for i in dict.fromkeys(ids) if i in self._rows_of)
            self._maybe_compact()
            return removed

    def _attach(self, row: int, engram_id: str) -> None:
        """Record that ``row`` (already written) belongs to ``engram_id``."""
        slot = self._slot_of.get(engram_id)
        if slot is None:
            slot = self._slot_of[engram_id] = len(self._slot_ids)
            self._slot_ids.append(engram_id)
            if slot >= self._slot_live.shape[0]:
                self._slot_live = np.concatenate([self._slot_live, np.zeros(max(64, slot + 1), dtype=bool)])
        self._slot_live[slot] = True
        self._row_slot[row] = slot
        rows = self._rows_of.setdefault(engram_id, [])
        rows.append(row)
        self._multi += len(rows) == 2
        self._live_rows += 1

    def _remove_one(self, engram_id: str) -> bool:
        rows = self._rows_of.pop(engram_id)
        self._slot_live[self._slot_of[engram_id]] = False
        self._row_slot[rows] = -1
        self._live_rows -= len(rows)
        if len(rows) > 1:
            self._multi -= 1
        if self._graph is not None:
            self._graph.remove(rows)
        return True

    def _grow(self, needed: int) -> None:
        cap = self._row_slot.shape[0]
        if needed <= cap:
            return
        new_cap = max(needed, cap + cap // 2, 64)
        if self._vecs is not None:
            vecs = np.empty((new_cap, self.dims), dtype=np.float32)
            vecs[:self._n] = self._vecs[:self._n]
            self._vecs = vecs
        slots = np.full(new_cap, -1, dtype=np.int64)
        slots[:self._n] = self._row_slot[:self._n]
        self._row_slot = slots

    def _scores(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Inner products ``[len(rows)] float32`` of live ``rows`` with ``q``, block by block."""
        if self._vecs is not None:
            return self._vecs[rows] @ q
        out = np.empty(len(rows), dtype=np.float32)
        step = 16 * BLOCK_ROWS
        for c in range(0, len(rows), step):
            out[c:c + step] = self._matrix(rows[c:c + step]) @ q
        return out

    def _matrix(self, rows: np.ndarray) -> np.ndarray:
        """Vectors of live ``rows`` (``[len(rows), dims] float32``), from ``_vecs`` or, once there is a graph,
        from the rows on disk (:class:`plur.index.dense_rows.RowStore`: ``pread``, no copy on the heap)."""
        if self._vecs is not None:
            return self._vecs[rows]
        return self._rows.rows(np.asarray(rows, dtype=np.int64))

    def _maybe_compact(self) -> None:
        dead = self._n - self._live_rows
        if dead > max(_COMPACT_MIN_DEAD, self._live_rows):
            self._compact()

    def _compact(self) -> None:
        """Drop dead rows and forgotten slots; the HNSW graph is rebuilt on next use."""
        owners = [i for i, rows in self._rows_of.items() for _ in rows]
        keep = [r for rows in self._rows_of.values() for r in rows]
        vecs = self._matrix(np.asarray(keep, dtype=np.int64))
        self._reset()  # rows are renumbered: the saved file's map (if any) is dropped with the rest
        self._grow(len(keep))
        self._vecs[:len(keep)] = vecs
        for row, i in enumerate(owners):
            self._attach(row, i)
        self._n = len(keep)

    # -- HNSW ------------------------------------------------------------------------------------
    def build(self) -> None:
        """Build the HNSW graph now (it is otherwise built on the first search that needs it)."""
        with self._lock:
            if self._graph is None:
                self._build_graph()

    def _build_graph(self) -> None:
        """Move rows ``[0, _n)`` into a new graph and their float32 copies to disk (``_vecs`` is dropped)."""
        from .graph import Graph

        if self._n > self._live_rows:
            self._compact()
        centre = None
        if self.quantisation == "b1":  # the mean row: the signs of the centred vectors split the data evenly
            total = np.zeros(self.dims, dtype=np.float64)
            for c in range(0, self._n, 16 * BLOCK_ROWS):
                total += self._vecs[c:min(self._n, c + 16 * BLOCK_ROWS)].sum(axis=0, dtype=np.float64)
            centre = (total / max(self._n, 1)).astype(np.float32)
        graph = Graph(self.dims, self.m, self.ef_construction, self.ef_search, quantisation=self.quantisation,
                      centre=centre)
        rows = RowStore(self.dims, scratch_dir=self.scratch_dir)
        for c in range(0, self._n, 16 * BLOCK_ROWS):  # bounded blocks: the scratch file, then the graph
            block = self._vecs[c:min(self._n, c + 16 * BLOCK_ROWS)]
            rows.append(block)
            graph.add(np.arange(c, c + len(block)), block, self.num_threads)
        self._graph, self._rows, self._vecs = graph, rows, None

    # -- persistence (format: plur.index.dense_io) ---------------------------------------------
    def save(self, folder: Path, identity: str | None = None) -> None:
        """Write the index to ``folder`` (created); see :func:`plur.index.dense_io.save_index`."""
        save_index(self, folder, identity)

    @classmethod
    def load(cls, folder: Path, dims: int, identity: str | None = None, *, quantisation: str = "b1") -> "DenseIndex":
        """Read an index written by :meth:`save`; see :func:`plur.index.dense_io.load_index`.

        ``quantisation`` is what the next graph built stores; the saved graph keeps its own kind until then.

        Raises:
            StoreError: missing or inconsistent files, another format version, or a dims/identity
                mismatch; the fix is to rebuild (``plur reindex``).
        """
        return load_index(cls, folder, dims, identity, quantisation=quantisation)

    # -- helpers ---------------------------------------------------------------------------------
    def _check_matrix(self, x: np.ndarray, n: int | None) -> np.ndarray:
        """Validate and L2-normalise ``[n, dims]`` (or ``[dims]`` when n is None); returns float32."""
        arr = np.asarray(x, dtype=np.float32)
        want = (n, self.dims) if n is not None else (self.dims,)
        if arr.shape != want and not (n == 0 and arr.size == 0):
            raise ValidationError(f"expected an array of shape {want} (float32), got {arr.shape}")
        if arr.size == 0:
            return arr.reshape(0, self.dims)
        if not np.isfinite(arr).all():
            raise ValidationError("vectors contain NaN or infinity; re-embed the text")
        norms = np.linalg.norm(arr, axis=-1, keepdims=True)
        if (norms == 0).any():
            raise ValidationError("a zero vector has no direction (cosine undefined); re-embed the text")
        return np.ascontiguousarray(arr / norms, dtype=np.float32)

    def __repr__(self) -> str:
        return (f"DenseIndex(dims={self.dims}, ids={len(self)}, vectors={self._live_rows}, "
                f"path={'hnsw' if self.uses_hnsw else 'exact'}, identity={self.identity!r})")


__all__ = ["DenseIndex", "FORMAT_VERSION"]
