"""The exact float32 rows of a graph-backed dense index, on disk and read with ``pread``.

Once a :class:`~plur.index.dense.DenseIndex` holds an HNSW graph, the graph keeps int8 vectors only
(:mod:`plur.index.graph`); the float32 rows that re-score its candidates, fill in scores for the other
leg's hits and are saved to ``vectors.npy`` live here, never on the heap:

* rows ``[0, base.n)``: the last saved ``vectors.npy`` (:class:`RowFile`);
* rows ``[base.n, n)``: an unlinked scratch file beside the index (``O_TMPFILE``-style: created with
  :func:`tempfile.TemporaryFile`, mode 0600, gone when closed), appended as rows are added.

Reads and writes go through the kernel's page cache, which does not count in this process's RSS
(a memory map's touched pages would, up to the whole file: 216 MiB at 147k x 384).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError
from ..store.atomic import private_dirs

__all__ = ["RowFile", "RowStore"]

#: Rows scored per block when many rows are read at once (a 384-d block is 768 KiB).
BLOCK_ROWS = 512


class RowFile:
    """Rows of a saved ``vectors.npy`` read with ``pread`` (one ~1 us system call a row).

    The file may be renamed or unlinked meanwhile (the next save replaces the folder): the open
    descriptor keeps reading the same inode.

    Args:
        path: a ``[n, dims] float32`` C-ordered ``.npy`` file.

    Raises:
        StoreError: the file is not such an array (the fix: ``plur reindex``).
    """

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            major, _minor = np.lib.format.read_magic(fh)
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh) if major == 1 else \
                np.lib.format.read_array_header_2_0(fh)
            self.offset = fh.tell()
        if fortran or dtype != np.float32 or len(shape) != 2:
            raise StoreError(f"{path} is not a C-ordered [n, dims] float32 array; rebuild it with `plur reindex`")
        self.n, self.dims = int(shape[0]), int(shape[1])
        self.row_bytes = 4 * self.dims
        self._fd = os.open(path, os.O_RDONLY)

    def rows(self, rows: list[int]) -> np.ndarray:
        """``[len(rows), dims] float32`` of rows ``< n`` (any order, repeats allowed), one ``pread`` per run of
        consecutive rows: an engram's chunks are consecutive rows, so the exact scores of a recall's BM25-only
        candidates (~50 engrams, ~176 rows at 100k) take ~50 reads instead of ~176."""
        out = np.empty((len(rows), self.dims), dtype=np.float32)
        fd, size, base, dims = self._fd, self.row_bytes, self.offset, self.dims
        order = sorted(range(len(rows)), key=rows.__getitem__)
        j, n = 0, len(order)
        while j < n:
            first = rows[order[j]]
            e = j + 1
            while e < n and rows[order[e]] == first + (e - j):
                e += 1
            block = np.frombuffer(os.pread(fd, (e - j) * size, base + first * size), dtype=np.float32)
            if e - j == 1:
                out[order[j]] = block
            else:
                out[order[j:e]] = block.reshape(e - j, dims)
            j = e
        return out

    def read_range(self, start: int, end: int) -> np.ndarray:
        """Rows ``[start, end)`` in one read: ``[end - start, dims] float32`` (a writable copy)."""
        data = os.pread(self._fd, (end - start) * self.row_bytes, self.offset + start * self.row_bytes)
        return np.frombuffer(data, dtype=np.float32).reshape(end - start, self.dims).copy()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()


class RowStore:
    """Float32 rows ``[0, n)``: a saved prefix (:class:`RowFile`, optional) and an appended scratch tail.

    Args:
        dims: row width.
        base: the saved ``vectors.npy`` of rows ``[0, base.n)``, or ``None`` (rows start at 0).
        scratch_dir: where the unlinked scratch file is created (default: the system temp folder).
    """

    def __init__(self, dims: int, base: RowFile | None = None, scratch_dir: Path | None = None) -> None:
        self.dims = int(dims)
        self.base = base
        self.start = base.n if base is not None else 0
        self.n = self.start
        self._row_bytes = 4 * self.dims
        self._scratch: Any = None
        #: where the scratch file is created on the first :meth:`append` (made private if missing)
        self.scratch_dir = scratch_dir

    def append(self, vectors: np.ndarray) -> None:
        """Append ``[m, dims] float32`` rows as rows ``[n, n + m)``."""
        if not len(vectors):
            return
        if self._scratch is None:
            if self.scratch_dir is not None:
                private_dirs(self.scratch_dir)
            self._scratch = tempfile.TemporaryFile(dir=self.scratch_dir)  # mode 0600, unlinked at once
        data = np.ascontiguousarray(vectors, dtype=np.float32).tobytes()
        os.pwrite(self._scratch.fileno(), data, (self.n - self.start) * self._row_bytes)
        self.n += len(vectors)

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """``[len(rows), dims] float32`` of rows ``< n`` (any order, repeats allowed)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) > BLOCK_ROWS and len(rows) * 8 > self.n:  # dense selection: read whole ranges
            out = np.empty((len(rows), self.dims), dtype=np.float32)
            order = np.argsort(rows, kind="stable")
            lo, hi = int(rows[order[0]]), int(rows[order[-1]]) + 1
            for c in range(lo, hi, 8 * BLOCK_ROWS):
                block = self.read_range(c, min(hi, c + 8 * BLOCK_ROWS))
                sel = order[(rows[order] >= c) & (rows[order] < c + len(block))]
                out[sel] = block[rows[sel] - c]
            return out
        out = np.empty((len(rows), self.dims), dtype=np.float32)
        listed = rows.tolist()
        in_base = [j for j, r in enumerate(listed) if r < self.start]
        if in_base:
            assert self.base is not None
            out[in_base] = self.base.rows([listed[j] for j in in_base])
        if len(in_base) < len(listed):
            fd, size = self._scratch.fileno(), self._row_bytes
            for j, r in enumerate(listed):
                if r >= self.start:
                    out[j] = np.frombuffer(os.pread(fd, size, (r - self.start) * size), dtype=np.float32)
        return out

    def read_range(self, start: int, end: int) -> np.ndarray:
        """Rows ``[start, end)`` (``end <= n``), a writable ``[end - start, dims] float32`` copy."""
        parts = []
        if start < self.start:
            assert self.base is not None
            parts.append(self.base.read_range(start, min(end, self.start)))
        if end > self.start:
            lo = max(start, self.start) - self.start
            data = os.pread(self._scratch.fileno(), (end - self.start - lo) * self._row_bytes, lo * self._row_bytes)
            parts.append(np.frombuffer(data, dtype=np.float32).reshape(-1, self.dims).copy())
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def close(self) -> None:
        """Close the scratch file (its data is gone) and the saved file's descriptor."""
        if self._scratch is not None:
            self._scratch.close()
            self._scratch = None
        if self.base is not None:
            self.base.close()
