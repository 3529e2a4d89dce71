"""The dense index on disk: ``vectors.npy``, ``ids.json``, ``graph.usearch`` and ``meta.json``.

``vectors.npy`` holds all rows (``[n, dims] float32``), dead ones included (zeros), so graph labels
stay row numbers; ``ids.json`` the owner id per row (``null`` if dead); ``graph.usearch`` the b1 or int8
HNSW graph (:mod:`plur.index.graph`, if built);
``meta.json`` (format version, dims, model identity, parameters, row count, sha256 of ids.json, the graph's
kind ``quantisation`` and, for ``b1``, its ``centre``: ``[dims]`` floats, the mean row subtracted before the signs)
is written last, so a torn save is detected on load. Each file is written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..jsonio import loads
from ..errors import StoreError
from .dense_rows import RowFile, RowStore
from .graph import Graph
from ..store.atomic import private_dirs
from ..store.modes import open_private, private_file

#: Version of the on-disk format; another version on load means rebuild (1: hnswlib's float32 ``hnsw.bin``).
FORMAT_VERSION = 2
#: Rows copied per block when writing ``vectors.npy`` (3 MiB at 384-d).
_BLOCK_ROWS = 2048
GRAPH_FILE = "graph.usearch"


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
        if dense._graph is None and dense.uses_hnsw:
            dense._build_graph()  # pay the build here, not on the first search after load
        ids = [dense._slot_ids[s] if s >= 0 else None for s in dense._row_slot[:dense._n].tolist()]
        ids_bytes = json.dumps(ids, ensure_ascii=False).encode("utf-8")
        _atomic(folder / "vectors.npy", lambda p: _write_vectors(dense, p))
        _atomic(folder / "ids.json", lambda p: _write_bytes(p, ids_bytes))
        if dense._graph is not None:
            _atomic(folder / GRAPH_FILE, lambda p: dense._graph.save(p))
        else:
            (folder / GRAPH_FILE).unlink(missing_ok=True)
        meta = {
            "format_version": FORMAT_VERSION, "dims": dense.dims, "identity": dense.identity,
            "m": dense.m, "ef_construction": dense.ef_construction, "ef_search": dense.ef_search,
            "exact_threshold": dense.exact_threshold, "n_rows": dense._n,
            "n_live_ids": len(dense._rows_of), "hnsw": dense._graph is not None,
            "quantisation": dense._graph.quantisation if dense._graph is not None else dense.quantisation,
            "centre": None if getattr(dense._graph, "centre", None) is None else dense._graph.centre.tolist(),
            "ids_sha256": hashlib.sha256(ids_bytes).hexdigest(),
            "versions": {"numpy": np.__version__, "usearch": _usearch_version()},
        }
        _atomic(folder / "meta.json", lambda p: _write_bytes(p, json.dumps(meta, indent=2).encode("utf-8")))
        if dense._graph is not None:  # rows now come from the file just written (a rename keeps the inode)
            old = dense._rows
            dense._rows = RowStore(dense.dims, RowFile(folder / "vectors.npy"), scratch_dir=dense.scratch_dir)
            old.close()



def _write_vectors(dense: Any, path: Path) -> None:
    """``vectors.npy`` of rows ``[0, _n)`` (dead rows zero), written block by block with plain writes.

    Not a memmap: its dirty pages would count in this process's RSS (216 MiB at 147k x 384).
    """
    with open_private(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False,
                 "shape": (dense._n, dense.dims)})
        for c in range(0, dense._n, _BLOCK_ROWS):
            end = min(dense._n, c + _BLOCK_ROWS)
            block = (dense._rows.read_range(c, end) if dense._vecs is None else dense._vecs[c:end].copy())
            block[dense._row_slot[c:end] < 0] = 0.0
            fh.write(block.tobytes())


def load_index(cls: Any, folder: Path, dims: int, identity: str | None = None, *, quantisation: str = "b1") -> Any:
    """Read an index written by :func:`save_index` into a new ``cls`` (a DenseIndex).

    Args:
        folder: the index folder.
        dims: the width the caller's model produces.
        identity: if given, the model identity the index must have been built with.
        quantisation: what the index's next graph stores (the saved graph, ``b1`` or ``i8``, keeps its kind).

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
    ids = [sys.intern(i) if type(i) is str else i for i in loads(ids_bytes)]  # one string per id in the process
    if (hashlib.sha256(ids_bytes).hexdigest() != meta.get("ids_sha256") or len(ids) != vecs.shape[0]
            or meta.get("n_rows") != vecs.shape[0]):
        raise StoreError(f"dense index at {folder} is inconsistent (interrupted save?); {fix}")
    index = cls(dims, m=meta["m"], ef_construction=meta["ef_construction"], ef_search=meta["ef_search"],
                exact_threshold=meta["exact_threshold"], quantisation=quantisation)
    index.identity = meta.get("identity", "")
    n = vecs.shape[0]
    with_graph = bool(meta.get("hnsw"))
    if with_graph:
        index._vecs = None  # the graph finds, vectors.npy (on disk, read row by row) scores
        index._rows = RowStore(dims, RowFile(folder / "vectors.npy"))
    index._grow(n)
    if index._vecs is not None:
        index._vecs[:n] = vecs
    del vecs
    for row, i in enumerate(ids):
        if i is not None:
            index._attach(row, i)
    index._n = n
    if with_graph:
        try:
            centre = meta.get("centre")
            graph = Graph.load(folder / GRAPH_FILE, dims, index.ef_search, ef_construction=index.ef_construction,
                               centre=None if centre is None else np.asarray(centre, dtype=np.float32))
        except StoreError as exc:
            raise StoreError(f"dense index at {folder}: {exc}; {fix}") from None
        if len(graph) != index._live_rows:
            raise StoreError(f"dense index at {folder}: {GRAPH_FILE} holds {len(graph)} vectors, "
                             f"ids.json {index._live_rows} live rows; {fix}")
        index._graph = graph
    return index


def _atomic(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")  # np.save keeps a .npy suffix
    try:
        write(tmp)
        private_file(tmp)  # usearch's save creates its file with the umask's mode
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_bytes(path: Path, data: bytes) -> None:
    with open_private(path, "wb") as fh:
        fh.write(data)


def _usearch_version() -> str:
    try:
        from importlib.metadata import version
        return version("usearch")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        return "unknown"
