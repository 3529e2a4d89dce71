"""Documents and queries on ONNX Runtime without torch: an exported graph, its tokenizer and its probes.

A long-lived process that serves recalls from cached embeddings needs the model only for new texts
and queries; loading torch, transformers and sentence-transformers for that costs ~450 MiB of RSS
(``bench/speed/memory.py``: 491 MiB after resolving all-MiniLM-L6-v2 against 42 MiB before). A
*bundle* holds all the process needs instead, in ``<cache_dir>/onnx/<key>/``:

* ``model.onnx`` -- the whole model (encoder, pooling, normalisation) exported once from the
  loaded ``SentenceTransformer`` (:func:`plur.embed.onnx_query._export`, opset 17, dynamic axes);
* ``tokenizer.json`` -- the model's own fast tokenizer (Hugging Face ``tokenizers``, no torch);
* ``meta.json`` (written last) -- identity, input names, ``max_seq_length``, lower-casing, the
  number of special tokens, and probe texts with the vectors the eager model gave them.

It is written only when the ONNX vectors equal the eager model's to
:data:`~plur.embed.fast_query.MAX_ABS_DIFF` on the probes, single and in a padded batch, and the
tokenizer gives the same ids as the model's; each later load checks the stored probe vectors
again (a stale or corrupt bundle is not used). ``key`` hashes the vector identity and
:data:`FORMAT`, so a bundle serves every home of the user and every torch version.

Documents are embedded batched by length: the texts are tokenised once, sorted by token count and
cut into batches of at most ``batch_size`` texts, :data:`BATCH_TOKENS` padded tokens and
:data:`BATCH_ATTENTION` attention cells per head, so little
of a batch is padding (``SentenceTransformer.encode`` sorts by characters and pads each batch of
``batch_size`` to its longest text).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import install_hint
from .fast_query import MAX_ABS_DIFF, _probes
from .ort_session import open_session

log = logging.getLogger("plur.embed.onnx_bundle")

#: Bumped when a bundle's files or meta change meaning.
FORMAT = 1
#: Most padded tokens in one document batch (bounds ONNX Runtime's activations: ~20 MiB for MiniLM).
BATCH_TOKENS = 8192
#: Most ``texts x tokens^2`` in one batch: the attention scores (``x heads x 4`` bytes) of long texts.
BATCH_ATTENTION = 2 ** 20

#: Least cosine between an int8 bundle's probe vector and the float32 one it derives from (measured: mean
#: 0.9979, min 0.991 on 1,000 document chunks; :mod:`plur.embed.int8_graph`). A graph below it is not used.
MIN_INT8_COSINE = 0.95

__all__ = ["BATCH_ATTENTION", "BATCH_TOKENS", "FORMAT", "MIN_INT8_COSINE", "OnnxBundle", "bundle_folder",
           "derive_int8_bundle", "export_bundle", "int8_identity", "int8_or_why", "open_int8_bundle",
           "ready_bundle_meta"]


def bundle_folder(cache_dir: Path, identity: str) -> Path:
    """``<cache_dir>/onnx/<sha256(identity, FORMAT)[:16]>/``: where the bundle of a model identity lives."""
    key = hashlib.sha256(json.dumps({"format": FORMAT, "identity": identity}).encode()).hexdigest()[:16]
    return Path(cache_dir) / "onnx" / key


def ready_bundle_meta(cache_dir: Path, identity: str) -> dict[str, Any] | None:
    """The meta.json of ``identity``'s bundle when its files are all there and onnxruntime and tokenizers are
    installed, else None; read without opening it (no session, no probe check: :meth:`OnnxBundle.open` does both).

    :class:`~plur.embed.embedder.SentenceTransformerEmbedder` defers opening such a bundle to its first text.
    """
    import importlib.util

    folder = bundle_folder(cache_dir, identity)
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("identity") != identity
            or not isinstance(meta.get("special_tokens"), int)
            or not all((folder / name).is_file() for name in ("model.onnx", "tokenizer.json"))):
        return None
    if any(importlib.util.find_spec(name) is None for name in ("onnxruntime", "tokenizers")):
        return None
    return meta


class OnnxBundle:
    """A loaded bundle: ``embed(texts) -> [n, dims] float32`` unit vectors, and the tokenizer's offsets.

    Args:
        folder: a bundle folder written by :func:`export_bundle`.
        threads: ONNX Runtime intra-op threads (default: the machine's cores).

    Raises:
        ValueError / OSError / onnxruntime errors: a missing or unreadable file; ``ValueError`` also
        when a stored probe no longer gives its vector (:meth:`open` turns each into ``None``).
    """

    def __init__(self, folder: Path, threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.folder = Path(folder)
        self.meta: dict[str, Any] = json.loads((self.folder / "meta.json").read_text(encoding="utf-8"))
        if self.meta.get("format") != FORMAT:
            raise ValueError(f"bundle format {self.meta.get('format')!r}, expected {FORMAT}")
        self.names: list[str] = list(self.meta["inputs"])
        self.max_seq_length = int(self.meta["max_seq_length"])
        self.special = int(self.meta["special_tokens"])
        self.dims = int(self.meta["dims"])
        self._lower = bool(self.meta.get("lower_case"))
        self.tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self._model_tok = Tokenizer.from_str(self.tokenizer.to_str())
        self._model_tok.enable_truncation(max_length=self.max_seq_length)
        self._query_tok = Tokenizer.from_str(self._model_tok.to_str())  # embed_query's own, on the query thread
        self.session, self._run_options = open_session(self.folder / "model.onnx", threads or os.cpu_count() or 1)

    @classmethod
    def open(cls, cache_dir: Path, identity: str, threads: int | None = None) -> "OnnxBundle | None":
        """The verified bundle of ``identity`` under ``cache_dir``, or ``None`` (absent, unreadable, or a
        probe that no longer gives its stored vector; the reason is logged at INFO)."""
        folder = bundle_folder(cache_dir, identity)
        if not (folder / "meta.json").is_file():
            return None
        try:
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401
        except ImportError:
            log.info("no ONNX bundle: onnxruntime or tokenizers is not installed (%s)", install_hint("onnx"))
            return None
        try:
            bundle = cls(folder, threads)
            if bundle.meta.get("identity") != identity:
                raise ValueError(f"bundle of {bundle.meta.get('identity')!r}")
            diff = bundle.probe_diff()
            if not diff <= MAX_ABS_DIFF:
                raise ValueError(f"a probe differs from its stored vector by {diff:.2g}")
        except Exception as exc:  # noqa: BLE001 - a bad bundle is never used; the torch model serves
            log.info("ONNX bundle %s not used (%s: %s)", folder.name, type(exc).__name__, exc)
            return None
        return bundle

    def probe_diff(self) -> float:
        """Largest element-wise difference between this bundle's vectors and the stored probe vectors."""
        texts = list(self.meta["probes"])
        want = np.asarray(self.meta["probe_vectors"], dtype=np.float32)
        single = np.concatenate([self.embed([t]) for t in texts])
        if single.shape != want.shape:
            return float("inf")
        # One padded batch of every probe but those the tokenizer cuts at the model's limit (each checked alone above):
        # six texts padded to 256 tokens took ~86 MiB of activations, the peak of every process that opened the
        # bundle (issue 49: a 100k-engram service's peak RSS); padded to the longest shorter probe it is a few MiB.
        short = [i for i, n in enumerate(len(e.ids) for e in self.encode(texts)) if n < self.max_seq_length]
        if len(short) > 1:
            batched = self.embed([texts[i] for i in short])
            if batched.shape != want[short].shape:
                return float("inf")
            return float(max(np.max(np.abs(batched - want[short])), np.max(np.abs(single - want))))
        return float(np.max(np.abs(single - want)))

    def _prepare(self, text: str) -> str:
        text = str(text).strip()  # sentence-transformers strips each text before tokenising
        return text.lower() if self._lower else text

    def encode(self, texts: Sequence[str]) -> list[Any]:
        """The model's tokenisation of ``texts`` (special tokens added, truncated at ``max_seq_length``)."""
        return self._model_tok.encode_batch([self._prepare(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """One text, as :meth:`embed` gives it (``[dims] float32``), with a tokenizer of its own: safe on another
        thread while :meth:`embed` runs (ONNX Runtime's ``run`` is thread-safe; a tokenizer is not relied on)."""
        enc = self._query_tok.encode(self._prepare(text))
        return self._run([enc], len(enc.ids))[0]

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed ``texts`` batched by length: ``[len(texts), dims] float32``, rows L2-normalised, in input order."""
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        if not len(texts):
            return out
        encs = self.encode(texts)
        lengths = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))
        order = np.argsort(lengths, kind="stable")
        start = 0
        while start < len(order):
            width = int(lengths[order[start]])
            end = start + 1
            while end < len(order) and end - start < batch_size:
                w = int(lengths[order[end]])
                if w * (end - start + 1) > BATCH_TOKENS or w * w * (end - start + 1) > BATCH_ATTENTION:
                    break
                width, end = w, end + 1
            rows = order[start:end]
            out[rows] = self._run([encs[i] for i in rows.tolist()], width, last=end >= len(order))
            start = end
        return out

    def _run(self, encs: list[Any], width: int, last: bool = True) -> np.ndarray:
        """One padded batch through the graph; ``last``: give the arena's memory back after it (once per call of
        :meth:`embed`: shrinking after every batch re-allocates each one, 7,059 -> 6,398 tokens/s on documents)."""
        return self.session.run(None, self.feeds(encs, width), self._run_options if last else None)[0]

    def feeds(self, encs: list[Any], width: int) -> dict[str, np.ndarray]:
        """The graph's inputs for tokenised texts padded to ``width``: ``{name: [len(encs), width] int64}``."""
        n = len(encs)
        ids = np.zeros((n, width), dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        types = np.zeros((n, width), dtype=np.int64)
        for r, e in enumerate(encs):
            k = len(e.ids)
            ids[r, :k] = e.ids
            mask[r, :k] = 1
            types[r, :k] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: feeds[name] for name in self.names}

    def offsets(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Character offsets of each text's tokens, no special tokens, not truncated (for chunking)."""
        encs = self.tokenizer.encode_batch([t.lower() if self._lower else t for t in texts],
                                           add_special_tokens=False)
        return [list(e.offsets) for e in encs]


def export_bundle(model: Any, eager: Any, identity: str, cache_dir: Path, names: list[str]) -> Path | None:
    """Write the bundle of a loaded CPU ``SentenceTransformer`` when it reproduces the eager model; its folder or None.

    Args:
        model: the loaded model (first module a Hugging Face encoder with a fast tokenizer).
        eager: ``text -> [dims] float32``, the reference vector (no instruction added).
        identity: the embedder's vector identity.
        cache_dir: the graph cache folder (a bundle goes to its ``onnx/`` subfolder).
        names: the graph's input names, ``input_ids`` first (:func:`plur.embed.fast_query.query_layout`).

    Returns:
        The bundle folder, or ``None`` when the tokenizer or the vectors differ (the reason logged at INFO).
    """
    import shutil

    from ..store.atomic import private_dirs
    from .onnx_query import _export

    folder = bundle_folder(cache_dir, identity)
    tmp = folder.with_name(f".tmp-{os.getpid()}-{folder.name}")
    shutil.rmtree(tmp, ignore_errors=True)
    private_dirs(tmp)
    try:
        _export(model, names, tmp / "model.onnx")
        hf_tok = model.tokenizer
        hf_tok.backend_tokenizer.save(str(tmp / "tokenizer.json"))
        first = model[0]
        probes = _probes(int(model.max_seq_length)) + ["  padded text with spaces  ", "Ünïcödé café — naïve 東京"]
        meta = {"format": FORMAT, "identity": identity, "inputs": names,
                "max_seq_length": int(model.max_seq_length), "dims": int(len(eager(probes[0]))),
                "lower_case": bool(getattr(first, "do_lower_case", False)),
                "special_tokens": int(hf_tok.num_special_tokens_to_add(False)),
                "probes": probes, "probe_vectors": [np.asarray(eager(p)).tolist() for p in probes]}
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        bundle = OnnxBundle(tmp)
        feats = model.preprocess(probes)
        want = [[t for t, m in zip(ids, mask) if m] for ids, mask in
                zip(feats["input_ids"].tolist(), feats["attention_mask"].tolist())]
        if [e.ids for e in bundle.encode(probes)] != want:
            log.info("no ONNX bundle: the tokenizer file does not reproduce the model's tokenizer")
            return None
        diff = bundle.probe_diff()
        if not diff <= MAX_ABS_DIFF:
            log.info("no ONNX bundle: the graph differs from the eager model by %.2g on a probe", diff)
            return None
        del bundle
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
        log.info("ONNX bundle written to %s (documents and queries without torch from now on)", folder)
        return folder
    except Exception as exc:  # noqa: BLE001 - no bundle keeps the torch model, which is always right
        log.info("no ONNX bundle: %s: %s", type(exc).__name__, exc)
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def int8_identity(identity: str) -> str:
    """The vector identity of ``identity``'s per-token int8 graph: ``"<identity>:<int8_graph.TAG>"``.

    Its first field (``name@rev7``) is the float model's, so settings keyed by model (the relevance floor)
    still apply; everything keyed by the whole identity (embedding cache, saved dense index) is its own.
    """
    from .int8_graph import TAG

    return f"{identity}:{TAG}"


def open_int8_bundle(cache_dir: Path, identity: str) -> "OnnxBundle | None":
    """The verified int8 bundle of ``identity`` (a float32 identity) under ``cache_dir``, derived once; or None."""
    bundle = OnnxBundle.open(cache_dir, int8_identity(identity))
    if bundle is None and derive_int8_bundle(cache_dir, identity) is not None:
        bundle = OnnxBundle.open(cache_dir, int8_identity(identity))
    return bundle


def int8_or_why(cache_dir: Path | None, identity: str, float_bundle: "OnnxBundle | None",
                device: str) -> tuple["OnnxBundle | None", str]:
    """``(int8 bundle, "")`` for a float32 embedder with no verified int8 graph yet (derived now from
    ``float_bundle``), or ``(None, why)``: the one reason it cannot serve, with its fix."""
    import importlib.util

    if cache_dir is None:
        return None, "no ONNX graph cache (setting embed_runtime = torch; set it to auto)"
    if float_bundle is None and device != "cpu":
        return None, f"the model runs on {device} and int8 is for the CPU (set device = cpu to use it)"
    if float_bundle is None:
        return None, f"no ONNX bundle of the model ({install_hint('onnx')} for onnxruntime)"
    if derive_int8_bundle(cache_dir, identity, float_bundle) is not None:  # none verified yet: make it now
        bundle = OnnxBundle.open(cache_dir, int8_identity(identity))
        if bundle is not None:
            return bundle, ""
    if importlib.util.find_spec("onnx") is None:
        return None, f"the onnx package that rewrites the graph is missing ({install_hint('onnx')})"
    return None, "the int8 graph failed its check against the float32 vectors (see the plur.embed INFO log)"


def derive_int8_bundle(cache_dir: Path, identity: str, source: "OnnxBundle | None" = None) -> Path | None:
    """Write the int8 bundle of ``identity`` from its float32 bundle; its folder, or None.

    The float32 bundle (:func:`export_bundle`, verified against the eager model) must exist under
    ``cache_dir``. Its graph is rewritten by :func:`plur.embed.int8_graph.quantize_rows`, smoothed with the ranges
    of :data:`plur.embed.calibration.TEXTS` (:func:`~plur.embed.int8_graph.channel_maxima`); the probes are the
    float bundle's, their vectors the int8 graph's own (so each later load checks them like any bundle's).
    Written only when every probe's int8 vector has cosine >= :data:`MIN_INT8_COSINE` to its float32 one
    and single and batched runs agree to :data:`~plur.embed.fast_query.MAX_ABS_DIFF`.

    Args:
        source: the float32 bundle, already opened and verified (default: opened here).

    Returns:
        The folder (``bundle_folder(cache_dir, int8_identity(identity))``), or ``None`` with the reason
        logged at INFO (no float bundle, ``onnx`` missing, a probe too far from float32).
    """
    import shutil

    from ..store.atomic import private_dirs
    from .calibration import TEXTS
    from .int8_graph import channel_maxima, quantize_rows

    source = source or OnnxBundle.open(cache_dir, identity)
    if source is None:
        log.info("no int8 bundle: the float32 bundle of %s is missing or unusable", identity)
        return None
    target = int8_identity(identity)
    folder = bundle_folder(cache_dir, target)
    tmp = folder.with_name(f".tmp-{os.getpid()}-{folder.name}")
    shutil.rmtree(tmp, ignore_errors=True)
    private_dirs(tmp)
    try:
        feeds = [source.feeds([enc], len(enc.ids)) for enc in source.encode(TEXTS)]  # one a run: no padding
        maxima = channel_maxima(source.folder / "model.onnx", feeds)
        count = quantize_rows(source.folder / "model.onnx", tmp / "model.onnx", maxima)
        shutil.copyfile(source.folder / "tokenizer.json", tmp / "tokenizer.json")
        meta = dict(source.meta, identity=target, derived_from=identity, quantised_products=count)
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        bundle = OnnxBundle(tmp)
        vectors = bundle.embed(meta["probes"])
        cosine = float(np.min(np.sum(vectors * np.asarray(source.meta["probe_vectors"], np.float32), axis=1)))
        if not cosine >= MIN_INT8_COSINE:
            log.info("no int8 bundle: a probe's int8 vector has cosine %.3f to float32 (< %s)", cosine,
                     MIN_INT8_COSINE)
            return None
        meta.update(probe_vectors=vectors.tolist(), min_probe_cosine=round(cosine, 6))
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        bundle.meta = meta
        diff = bundle.probe_diff()
        if not diff <= MAX_ABS_DIFF:
            log.info("no int8 bundle: single and batched runs differ by %.2g", diff)
            return None
        del bundle
        for path in tmp.iterdir():
            path.chmod(0o600)  # private like the float32 bundle's files (onnx.save and copyfile follow the umask)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
        log.info("int8 ONNX bundle written to %s (%d products on int8; least probe cosine %.4f)", folder, count,
                 cosine)
        return folder
    except Exception as exc:  # noqa: BLE001 - no int8 bundle: the caller says so and serves float32
        log.info("no int8 bundle: %s: %s", type(exc).__name__, exc)
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
