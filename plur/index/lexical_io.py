"""The BM25 index on disk: a folder of plainly named files, replaced whole on save.

Files: ``meta.json`` (format, tokenizer identity and version, k1, b, counts; written last, so it marks
a complete folder), ``ids.json`` (doc ids), ``vocab.json`` (terms), ``doc_len.npy`` ``[n] int32``,
``offsets.npy`` ``[terms + 1] int64``, ``postings_doc.npy`` and ``postings_tf.npy`` ``[postings] int32``
(CSR: term j's postings are ``[offsets[j]:offsets[j + 1]]``). The layout follows bm25s's index folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..jsonio import loads
from .tokenize import Tokenizer
from ..store.atomic import private_dirs

#: Version of the on-disk layout written by :meth:`plur.index.lexical.BM25Index.save`.
FORMAT_VERSION: int = 1
FORMAT_NAME = "plur-bm25"


def write_folder(folder: Path, meta: dict[str, Any], ids: list[str], vocab: list[str],
                 arrays: dict[str, np.ndarray]) -> None:
    """Write an index folder whole: beside ``folder`` first, then renamed over it (``meta.json`` last).

    Args:
        folder: the target folder (replaced).
        meta: the ``meta.json`` content.
        ids: doc ids (``ids.json``); vocab: terms (``vocab.json``).
        arrays: ``doc_len`` ``[n] int32``, ``offsets`` ``[terms + 1] int64``, ``postings_doc`` and
            ``postings_tf`` ``[postings] int32``.
    """
    private_dirs(folder.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        _write(tmp / "ids.json", json.dumps(ids, ensure_ascii=False).encode())
        _write(tmp / "vocab.json", json.dumps(vocab, ensure_ascii=False).encode())
        for name, arr in arrays.items():
            with open(tmp / f"{name}.npy", "wb") as fh:
                np.save(fh, arr, allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())
        _write(tmp / "meta.json", json.dumps(meta, indent=2).encode())  # last: marks completeness
        old = None
        if folder.exists():
            old = folder.parent / f".{folder.name}.old-{os.getpid()}-{os.urandom(3).hex()}"
            os.replace(folder, old)
        os.replace(tmp, folder)
        _fsync_dir(folder.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def read_arrays(folder: Path, meta: dict[str, Any]) -> tuple[list[str], list[str], dict[str, np.ndarray]]:
    """Read ``ids.json``, ``vocab.json`` and the four arrays, checked against each other and ``meta``.

    Raises:
        OSError, ValueError, TypeError: missing, unreadable or inconsistent files.
    """
    ids = loads((folder / "ids.json").read_bytes())
    vocab = loads((folder / "vocab.json").read_bytes())
    arrays = {name: np.load(folder / f"{name}.npy", allow_pickle=False)
              for name in ("doc_len", "offsets", "postings_doc", "postings_tf")}
    _check_arrays(meta, ids, vocab, arrays)
    return ids, vocab, arrays


def tokenizer_for(identity: str) -> Tokenizer:
    return Tokenizer(stemming=identity.endswith("+snowball-en"))


def read_meta(folder: Path, tokenizer: Tokenizer | None) -> tuple[dict[str, Any] | None, str | None]:
    path = folder / "meta.json"
    if not path.is_file():
        return None, f"no index at {path}"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        fmt, version, identity = meta["format"], meta["format_version"], meta["tokenizer"]
        float(meta["k1"]), float(meta["b"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"unreadable {path} ({exc})"
    if fmt != FORMAT_NAME or version != FORMAT_VERSION:
        return None, f"index format {fmt!r} v{version}, this plur reads {FORMAT_NAME!r} v{FORMAT_VERSION}"
    expected = (tokenizer if tokenizer is not None else tokenizer_for(str(identity))).identity
    if identity != expected:
        return None, f"index built with tokenizer {identity!r}, queries use {expected!r}"
    return meta, None


def _check_arrays(meta: dict[str, Any], ids: Any, vocab: Any, arrays: dict[str, np.ndarray]) -> None:
    """Raise ValueError unless the loaded files agree with each other and with meta."""
    n, v = meta["n_docs"], meta["n_terms"]
    offsets, slots, tfs = arrays["offsets"], arrays["postings_doc"], arrays["postings_tf"]
    problems = []
    if not (isinstance(ids, list) and len(ids) == n and all(isinstance(i, str) for i in ids)
            and len(set(ids)) == n):
        problems.append("ids.json does not list n_docs distinct string ids")
    if not (isinstance(vocab, list) and len(vocab) == v):
        problems.append("vocab.json does not list n_terms terms")
    if arrays["doc_len"].shape != (n,):
        problems.append("doc_len.npy has the wrong shape")
    if offsets.shape != (v + 1,) or offsets[0] != 0 or offsets[-1] != len(slots):
        problems.append("offsets.npy does not match the postings")
    elif v and np.any(np.diff(offsets) < 0):
        problems.append("offsets.npy is not increasing")
    if slots.shape != tfs.shape or len(slots) != meta["n_postings"]:
        problems.append("postings_doc.npy and postings_tf.npy disagree")
    elif len(slots) and (slots.min() < 0 or slots.max() >= n or tfs.min() < 1):
        problems.append("postings out of range")
    if problems:
        raise ValueError("; ".join(problems))


def _write(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows cannot open folders
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
