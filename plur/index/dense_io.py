"""The dense index on disk: ``vectors.npy``, ``ids.json``, ``hnsw.bin`` and ``meta.json``.

``vectors.npy`` holds all rows, dead ones included (zeros), so HNSW labels stay row numbers;
``ids.json`` the owner id per row (``null`` if dead); ``hnsw.bin`` the graph (if built);
``meta.json`` (format version, dims, model identity, parameters, row count, sha256 of ids.json)
is written last, so a torn save is detected on load. Each file is written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..jsonio import loads
from ..errors import StoreError, require
from ..store.atomic import private_dirs
from ..store.modes import open_private, private_file

#: Version of the on-disk format; another version on load means rebuild.
FORMAT_VERSION = 1
#: Rows copied per block when writing ``vectors.npy`` (see :data:`plur.index.dense._BLOCK_ROWS`).
_BLOCK_ROWS = 512


def save_index(dense: Any, folder: Path, identity: str | None = None) -> None:
    """Write a :class:`~plur.index.dense.DenseIndex` to ``folder`` (created); each file atomically, ``meta.json`` last.

    Args:
        folder: target folder.
        identity: embedding model identity to record (default: ``dense.identity``).
    """
    folder = Path(folder)
    private_dirs(folder)
    with dense._lock:
        if identity is not None:
            dense.identity = identity
        if dense._hnsw is None and dense.uses_hnsw:
            dense._build_hnsw()  # pay the build here, not on the first search after load
        ids = [dense._slot_ids[s] if s >= 0 else None for s in dense._row_slot[:dense._n].tolist()]
        ids_bytes = json.dumps(ids, ensure_ascii=False).encode("utf-8")
        _atomic(folder / "vectors.npy", lambda p: _write_vectors(dense, p))
        _atomic(folder / "ids.json", lambda p: _write_bytes(p, ids_bytes))
        if dense._hnsw is not None:
            _atomic(folder / "hnsw.bin", lambda p: dense._hnsw.save_index(str(p)))
        else:
            (folder / "hnsw.bin").unlink(missing_ok=True)
        meta = {
            "format_version": FORMAT_VERSION, "dims": dense.dims, "identity": dense.identity,
            "m": dense.m, "ef_construction": dense.ef_construction, "ef_search": dense.ef_search,
            "exact_threshold": dense.exact_threshold, "seed": dense.seed, "n_rows": dense._n,
            "n_live_ids": len(dense._rows_of), "hnsw": dense._hnsw is not None,
            "ids_sha256": hashlib.sha256(ids_bytes).hexdigest(),
            "versions": {"numpy": np.__version__, "hnswlib": _hnswlib_version()},
        }
        _atomic(folder / "meta.json", lambda p: _write_bytes(p, json.dumps(meta, indent=2).encode("utf-8")))
        if dense._hnsw is not None:  # read rows from the file just written (the folder may be renamed: same inode)
            dense._rowfile = RowFile(folder / "vectors.npy")



def _write_vectors(dense: Any, path: Path) -> None:
    """``vectors.npy`` of rows ``[0, _n)`` (dead rows zero), written block by block with plain writes.

    Not a memmap: its dirty pages would count in this process's RSS (150 MB at 100k x 384).
    """
    with open_private(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False,
                 "shape": (dense._n, dense.dims)})
        old = dense._rowfile
        for c in range(0, dense._n, _BLOCK_ROWS):
            rows = np.arange(c, min(dense._n, c + _BLOCK_ROWS))
            live = dense._row_slot[rows] >= 0
            if old is not None and rows[-1] < old.n:  # rows the last save wrote: one read of the block
                block = old.read_range(int(rows[0]), int(rows[-1]) + 1)
                block[~live] = 0.0
            else:
                block = np.zeros((len(rows), dense.dims), dtype=np.float32)
                block[live] = dense._matrix(rows[live])
            fh.write(block.tobytes())


class RowFile:
    """Rows of a saved ``vectors.npy`` read with ``pread``: the kernel's page cache holds the file, not this
    process's heap or mappings (a memory map's touched pages would count in its RSS, up to the whole file).

    A row costs one ~1 us system call; hnswlib's ``get_items`` takes ~16 us a row (it builds Python lists).
    The file may be renamed or unlinked meanwhile (the next save replaces the folder): the open descriptor
    keeps reading the same inode.

    Args:
        path: a ``vectors.npy`` written by :func:`save_index` (format 1.0 header, ``[n, dims] float32``).
    """

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            major, minor = np.lib.format.read_magic(fh)
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh) if major == 1 else \
                np.lib.format.read_array_header_2_0(fh)
            self.offset = fh.tell()
        if fortran or dtype != np.float32 or len(shape) != 2:
            raise StoreError(f"{path} is not a C-ordered [n, dims] float32 array; rebuild it with `plur reindex`")
        self.n, self.dims = int(shape[0]), int(shape[1])
        self.row_bytes = 4 * self.dims
        self._fd = os.open(path, os.O_RDONLY)

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """``[len(rows), dims] float32`` of rows ``< n``, one ``pread`` each."""
        out = np.empty((len(rows), self.dims), dtype=np.float32)
        fd, size, base = self._fd, self.row_bytes, self.offset
        for j, r in enumerate(rows.tolist()):
            out[j] = np.frombuffer(os.pread(fd, size, base + r * size), dtype=np.float32)
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


def load_index(cls: Any, folder: Path, dims: int, identity: str | None = None) -> Any:
    """Read an index written by :func:`save_index` into a new ``cls`` (a DenseIndex).

    Args:
        folder: the index folder.
        dims: the width the caller's model produces.
        identity: if given, the model identity the index must have been built with.

    Returns:
        The index, with its saved parameters and ``identity``.

    Raises:
        StoreError: missing or inconsistent files, another format version, or a dims/identity
            mismatch; the fix is to rebuild (``plur reindex``).
    """
    folder = Path(folder)
    fix = "rebuild it with `plur reindex`"
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        ids_bytes = (folder / "ids.json").read_bytes()
        vecs = np.load(folder / "vectors.npy", allow_pickle=False, mmap_mode="r")
    except (OSError, ValueError) as exc:
        raise StoreError(f"dense index at {folder} cannot be read ({exc}); {fix}") from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise StoreError(f"dense index at {folder} has format {meta.get('format_version')!r}, "
                         f"expected {FORMAT_VERSION}; {fix}")
    if meta.get("dims") != dims or vecs.ndim != 2 or vecs.shape[1] != dims:
        raise StoreError(f"dense index at {folder} holds {meta.get('dims')}-d vectors, the model gives {dims}-d; {fix}")
    if identity is not None and meta.get("identity") != identity:
        raise StoreError(f"dense index at {folder} was built with {meta.get('identity')!r}, "
                         f"the model is {identity!r}; {fix}")
    ids = loads(ids_bytes)
    if (hashlib.sha256(ids_bytes).hexdigest() != meta.get("ids_sha256") or len(ids) != vecs.shape[0]
            or meta.get("n_rows") != vecs.shape[0]):
        raise StoreError(f"dense index at {folder} is inconsistent (interrupted save?); {fix}")
    index = cls(dims, m=meta["m"], ef_construction=meta["ef_construction"], ef_search=meta["ef_search"],
                exact_threshold=meta["exact_threshold"], seed=meta["seed"])
    index.identity = meta.get("identity", "")
    n = vecs.shape[0]
    with_graph = bool(meta.get("hnsw")) and (folder / "hnsw.bin").is_file()
    if with_graph:
        index._vecs = None  # hnsw.bin carries the vectors; vectors.npy stays on disk, read row by row
        index._rowfile = RowFile(folder / "vectors.npy")
    index._grow(n)
    if index._vecs is not None:
        index._vecs[:n] = vecs
    del vecs
    for row, i in enumerate(ids):
        if i is not None:
            index._attach(row, i)
    index._n = n
    if with_graph:
        hnswlib = require("hnswlib", "embed")
        h = hnswlib.Index(space="ip", dim=dims)
        try:
            h.load_index(str(folder / "hnsw.bin"), max_elements=n + max(1024, n // 4))
        except RuntimeError as exc:
            raise StoreError(f"dense index at {folder}: hnsw.bin cannot be read ({exc}); {fix}") from None
        if h.element_count != n:
            raise StoreError(f"dense index at {folder}: hnsw.bin holds {h.element_count} vectors, "
                             f"vectors.npy {n}; {fix}")
        h.set_ef(index.ef_search)
        index._hnsw = h
    return index


def _atomic(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")  # np.save keeps a .npy suffix
    try:
        write(tmp)
        private_file(tmp)  # hnswlib's save_index creates its file with the umask's mode
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_bytes(path: Path, data: bytes) -> None:
    with open_private(path, "wb") as fh:
        fh.write(data)


def _hnswlib_version() -> str:
    try:
        from importlib.metadata import version
        return version("hnswlib")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        return "unknown"
