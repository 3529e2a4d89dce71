"""The BM25 index on disk: a folder of plainly named files, replaced whole on save.

Files: ``meta.json`` (format, tokenizer identity and version, k1, b, counts; written last, so it marks
a complete folder), ``ids.json`` (doc ids), ``vocab.json`` (terms), ``doc_len.npy`` ``[n] int32``,
``offsets.npy`` ``[terms + 1] int64``, ``postings_doc.npy`` ``[postings] int32`` and ``postings_tf.npy``
``[postings] uint8`` (int32 when some frequency exceeds 255; always int32 in format 1, which is still read)
(CSR: term j's postings are ``[offsets[j]:offsets[j + 1]]``). The layout follows bm25s's index folder.
A loaded index reads a term's postings from the two postings files, with a positional read, when a query
needs them (:class:`~plur.index.postings.FileArray`; issue 49: read onto the heap whole they were 59 MB at
100k engrams, ~0.6 GB at a million; memory-mapped, the pages queries had read stayed in the process's RSS).
A save writes what the index holds (read base, delta and all) and then reads the files it wrote as its base.

:class:`BM25Files` gives :class:`~plur.index.lexical.BM25Index` its save, load and CSR export.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..jsonio import loads
from .id_slots import IdSlots
from .postings import SMALL_TF_MAX, FileArray, Postings, blocks
from .tokenize import TOKENIZER_VERSION, Tokenizer
from ..store.atomic import private_dirs
from ..store.modes import open_private, private_dir

#: Version of the on-disk layout written by :meth:`plur.index.lexical.BM25Index.save` (2: one-byte frequencies).
FORMAT_VERSION: int = 2
#: Versions this plur reads (1: int32 frequencies).
READS_VERSIONS = (1, 2)
FORMAT_NAME = "plur-bm25"

#: the BM25 index's logger (a load that falls back to a rebuild says why at WARNING)
log = logging.getLogger("plur.index.lexical")


def write_folder(folder: Path, meta: dict[str, Any], ids: list[str], vocab: list[str],
                 arrays: dict[str, np.ndarray], streamed: tuple[int, Any] | None = None) -> None:
    """Write an index folder whole: beside ``folder`` first, then renamed over it (``meta.json`` last).

    Args:
        folder: the target folder (replaced).
        meta: the ``meta.json`` content.
        ids: doc ids (``ids.json``); vocab: terms (``vocab.json``).
        arrays: ``doc_len`` ``[n] int32``, ``offsets`` ``[terms + 1] int64``, and unless ``streamed``,
            ``postings_doc`` ``[postings] int32`` and ``postings_tf`` ``[postings] uint8|int32``.
        streamed: ``(p, tf_dtype, parts)``: the postings written part by part instead, ``parts()`` yielding
            ``(slots, tfs)`` arrays that add up to ``p`` postings each, the tfs written as ``tf_dtype``.
    """
    private_dirs(folder.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))  # mkdtemp: 0700
    private_dir(tmp)
    try:
        _write(tmp / "ids.json", json.dumps(ids, ensure_ascii=False).encode())
        _write(tmp / "vocab.json", json.dumps(vocab, ensure_ascii=False).encode())
        for name, arr in arrays.items():
            with open_private(tmp / f"{name}.npy", "wb") as fh:
                np.save(fh, arr, allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())
        if streamed is not None:
            _write_streamed(tmp, *streamed)
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


def _write_streamed(tmp: Path, n: int, tf_dtype: Any, parts: Any) -> None:
    """``postings_doc.npy`` (``[n] int32``) and ``postings_tf.npy`` (``[n] tf_dtype``) from ``parts()``, a term at a time."""
    def header(dtype: Any) -> dict[str, Any]:
        return {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": (n,)}

    with open_private(tmp / "postings_doc.npy", "wb") as docs, open_private(tmp / "postings_tf.npy", "wb") as tfs:
        np.lib.format.write_array_header_1_0(docs, header(np.int32))
        np.lib.format.write_array_header_1_0(tfs, header(tf_dtype))
        written = 0
        for slots, freqs in parts():
            docs.write(np.ascontiguousarray(slots, dtype=np.int32).tobytes())
            tfs.write(np.ascontiguousarray(freqs, dtype=tf_dtype).tobytes())
            written += len(slots)
        if written != n:
            raise ValueError(f"streamed {written} postings, expected {n}")
        for fh in (docs, tfs):
            fh.flush()
            os.fsync(fh.fileno())


def read_arrays(folder: Path, meta: dict[str, Any]) -> tuple[list[str], list[str], dict[str, Any]]:
    """Read ``ids.json``, ``vocab.json`` and the four arrays (the postings as :class:`FileArray`, read when
    used), checked against each other and ``meta``.

    Raises:
        OSError, ValueError, TypeError: missing, unreadable or inconsistent files.
    """
    ids = loads((folder / "ids.json").read_bytes())
    if isinstance(ids, list):  # one string per id in the process: the store's engrams and both legs share it
        ids = [sys.intern(i) if type(i) is str else i for i in ids]
    vocab = loads((folder / "vocab.json").read_bytes())
    arrays: dict[str, Any] = {name: np.load(folder / f"{name}.npy", allow_pickle=False)
                              for name in ("doc_len", "offsets")}
    for name in ("postings_doc", "postings_tf"):
        arrays[name] = FileArray(folder / f"{name}.npy")
    try:
        _check_arrays(meta, ids, vocab, arrays)
    except BaseException:
        arrays["postings_doc"].close()
        arrays["postings_tf"].close()
        raise
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
    if fmt != FORMAT_NAME or version not in READS_VERSIONS:
        return None, f"index format {fmt!r} v{version}, this plur reads {FORMAT_NAME!r} v{READS_VERSIONS}"
    expected = (tokenizer if tokenizer is not None else tokenizer_for(str(identity))).identity
    if identity != expected:
        return None, f"index built with tokenizer {identity!r}, queries use {expected!r}"
    return meta, None


def _check_arrays(meta: dict[str, Any], ids: Any, vocab: Any, arrays: dict[str, Any]) -> None:
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
    if len(slots) != len(tfs) or len(slots) != meta["n_postings"]:
        problems.append("postings_doc.npy and postings_tf.npy disagree")
    elif len(slots) and not _in_range(slots, tfs, n):
        problems.append("postings out of range")
    if problems:
        raise ValueError("; ".join(problems))


def _in_range(slots: Any, tfs: Any, n: int) -> bool:
    """Every slot in ``[0, n)`` and every frequency at least 1, read a slice at a time (:func:`blocks`)."""
    return (all(part.min() >= 0 and part.max() < n for part in blocks(slots))
            and all(part.min() >= 1 for part in blocks(tfs)))


def _write(path: Path, data: bytes) -> None:
    with open_private(path, "wb") as fh:
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


class BM25Files:
    """Save and load of :class:`~plur.index.lexical.BM25Index` (mixin): the postings in CSR form and back, and
    the folder written by :func:`write_folder`."""

    def _csr_plan(self) -> tuple[list[str], np.ndarray, list[str], np.ndarray, Any, Any]:
        """Live documents in compressed-sparse-row form, tombstones dropped, the postings not yet copied.

        Returns:
            ``(ids, doc_len [n] int32, vocab, offsets [v + 1] int64, tf_dtype, parts)``: the postings of
            ``vocab[j]`` are ``[offsets[j]:offsets[j + 1]]``; ``tf_dtype`` is uint8 when every frequency is at
            most 255, else int32; ``parts()`` yields ``(slots [p] int32, tfs [p] uint8|int32)`` per term of
            ``vocab`` in order (one term's read at a time), under the caller's lock.
        """
        n_slots = len(self._ids)
        alive = self._alive[:n_slots]
        live = np.flatnonzero(alive)
        remap = np.full(n_slots, -1, dtype=np.int32)
        remap[live] = np.arange(len(live), dtype=np.int32)
        postings: Postings = self._postings
        vocab: list[str] = []
        sizes: list[int] = []
        narrow = True
        for term in sorted(postings):
            if self._n_dead or not postings.narrow(term):  # read the term: its live postings, its largest tf
                slots, tfs = postings.peek(term)  # type: ignore[misc]
                keep = alive[slots] if self._n_dead else None
                size = int(np.count_nonzero(keep)) if keep is not None else len(slots)
                if size and narrow and tfs.dtype != np.uint8:
                    narrow = int((tfs[keep] if keep is not None else tfs).max()) <= SMALL_TF_MAX
            else:
                size = postings.size(term)
            if size:
                vocab.append(term)
                sizes.append(size)
        offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        tf_dtype = np.dtype(np.uint8 if narrow else np.int32)

        def parts() -> Any:
            for term in vocab:
                slots, tfs = postings.peek(term)  # type: ignore[misc]
                if self._n_dead:
                    keep = alive[slots]
                    slots, tfs = slots[keep], tfs[keep]
                yield remap[slots], tfs.astype(tf_dtype, copy=False)

        ids = [self._ids[s] for s in live.tolist()]
        return ids, self._dl[live].astype(np.int32), vocab, offsets, tf_dtype, parts

    def _export(self) -> tuple[list[str], np.ndarray, list[str], np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_csr_plan` with the postings concatenated: ``(..., slots [p] int32, tfs [p] uint8|int32)``."""
        ids, doc_len, vocab, offsets, tf_dtype, parts = self._csr_plan()
        slot_parts, tf_parts = [np.zeros(0, dtype=np.int32)], [np.zeros(0, dtype=tf_dtype)]
        for slots, tfs in parts():
            slot_parts.append(slots)
            tf_parts.append(tfs)
        return ids, doc_len, vocab, offsets, np.concatenate(slot_parts), np.concatenate(tf_parts)

    def _load_arrays(self, ids: list[str], doc_len: np.ndarray, vocab: list[str], offsets: np.ndarray,
                     slots: Any, tfs: Any) -> None:
        """Make the index these CSR arrays describe (``slots``/``tfs``: arrays or :class:`FileArray`)."""
        self._postings.close()
        self._clear()
        n = len(ids)
        cap = max(64, n)
        self._ids = list(ids)
        self._slot = IdSlots(self._ids)
        self._dl = np.zeros(cap, dtype=np.int32)
        self._dl[:n] = doc_len
        self._alive = np.zeros(cap, dtype=bool)
        self._alive[:n] = True
        self._total_len = int(doc_len.sum())
        self._postings = Postings(vocab, offsets, slots, tfs)

    def save(self, folder: str | Path) -> None:
        """Write the index to ``folder`` (replaced whole; written beside it, then renamed), then read the
        postings from there: the delta of postings added since the last load or save is merged into the base.

        Files: ``meta.json`` (format, tokenizer identity and version, k1, b, counts),
        ``ids.json`` (doc ids), ``vocab.json`` (terms), ``doc_len.npy`` ``[n] int32``,
        ``offsets.npy`` ``[terms + 1] int64``, ``postings_doc.npy`` ``[postings] int32`` and
        ``postings_tf.npy`` ``[postings] uint8`` (int32 if some frequency exceeds 255) (CSR: term j's
        postings are ``[offsets[j]:offsets[j + 1]]``). Tombstones are never written, and the index
        renumbers its documents as the files do (a save compacts).
        """
        folder = Path(folder)
        with self._lock:  # held while the postings stream to disk: no full CSR copy on the heap (~112 MB at 100k)
            ids, doc_len, vocab, offsets, tf_dtype, parts = self._csr_plan()
            meta = {
                "format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                "tokenizer": self.tokenizer.identity, "tokenizer_version": TOKENIZER_VERSION,
                "k1": self._k1, "b": self._b, "n_docs": len(ids), "n_terms": len(vocab),
                "n_postings": int(offsets[-1]), "total_len": int(doc_len.sum()),
            }
            write_folder(folder, meta, ids, vocab, {"doc_len": doc_len, "offsets": offsets},
                         streamed=(int(offsets[-1]), tf_dtype, parts))
            self._reopen(folder, ids, doc_len, vocab, offsets)

    def _reopen(self, folder: Path, ids: list[str], doc_len: np.ndarray, vocab: list[str], offsets: np.ndarray) -> None:
        """Take the postings just written to ``folder`` as the base (the documents renumbered only if some were
        removed); the files stay readable when the caller renames the folder or a later save deletes it."""
        slots, tfs = FileArray(folder / "postings_doc.npy"), FileArray(folder / "postings_tf.npy")
        if self._n_dead:
            self._load_arrays(ids, doc_len, vocab, offsets, slots, tfs)
            return
        self._postings.close()
        self._postings = Postings(vocab, offsets, slots, tfs)
        self._impacts, self._impact_norm, self._impact_size = {}, None, 0
        if self._slot.added:  # the ids added since: into the hashed base as well
            self._slot = IdSlots(self._ids)

    @classmethod
    def stale_reason(cls, folder: str | Path, tokenizer: Tokenizer | None = None) -> str | None:
        """Say why the index in ``folder`` cannot be loaded as is, or ``None`` if it can.

        Args:
            folder: a folder written by :meth:`save`.
            tokenizer: the tokenizer the caller will query with; ``None`` accepts the
                saved tokenizer if this version of plur still produces it.

        Returns:
            A one-line reason (missing, unreadable, other format version, other
            tokenizer), or ``None``. Only ``meta.json`` is read.
        """
        return read_meta(Path(folder), tokenizer)[1]

    @classmethod
    def load(cls, folder: str | Path, *, tokenizer: Tokenizer | None = None,
             k1: float | None = None, b: float | None = None) -> Any:
        """Load an index written by :meth:`save`, or return ``None`` so the caller rebuilds.

        ``None`` (with the reason logged at WARNING on ``plur.index.lexical``) when the folder
        is missing, unreadable or inconsistent, written by another format version, or
        by another tokenizer than ``tokenizer`` (or than this plur's tokenizer of the
        saved kind when ``tokenizer`` is None). It never raises for a bad index:
        a rebuild from the engram store is always possible.

        Args:
            folder: the index folder.
            tokenizer: the tokenizer queries will use; must match the saved identity.
            k1, b: override the saved parameters (they do not affect stored data).

        Raises:
            ValidationError: if ``k1`` or ``b`` is out of range.
        """
        folder = Path(folder)
        meta, reason = read_meta(folder, tokenizer)
        if meta is None:
            log.warning("BM25 index at %s not loaded, rebuilding: %s", folder, reason)
            return None
        try:
            ids, vocab, arrays = read_arrays(folder, meta)
        except (OSError, ValueError, TypeError) as exc:
            log.warning("BM25 index at %s not loaded, rebuilding: damaged files (%s)", folder, exc)
            return None
        index = cls(k1=meta["k1"] if k1 is None else k1, b=meta["b"] if b is None else b,
                    tokenizer=tokenizer if tokenizer is not None else tokenizer_for(meta["tokenizer"]))
        index._load_arrays(ids, arrays["doc_len"], vocab, arrays["offsets"],
                           arrays["postings_doc"], arrays["postings_tf"])
        return index
