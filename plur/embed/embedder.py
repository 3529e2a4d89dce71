"""Embedding models: the :class:`Embedder` protocol and its sentence-transformers backend.

:class:`SentenceTransformerEmbedder` loads a verified folder (pinned in ``models.lock`` or given by
path); which model to load, with loud fallbacks, is :mod:`plur.embed.resolve`'s job.

What is pinned and how it is verified lives in :mod:`plur.embed.models_lock`; the persistent embedding
cache in :mod:`plur.embed.cache`. torch, sentence-transformers and transformers are imported inside
functions, so ``import plur.embed.embedder`` stays light (numpy only).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import ModelError, ValidationError
from . import model_thread
from .st_load import (_accelerator_visible, _folder_fingerprint, _load_sentence_transformer, _model_dims, _model_pooling,
                      _spec_from_folder, pick_device)
from .models_lock import ModelSpec, vector_identity

log = logging.getLogger("plur.embed")
#: Values of ``precision`` (setting ``embed_precision``).
PRECISIONS = ("float32", "int8")


# --------------------------------------------------------------------------------------------
# 1. Embedder
# --------------------------------------------------------------------------------------------


@runtime_checkable
class Embedder(Protocol):
    """What plur needs from an embedding model.

    Every vector is float32 and L2-normalised, so cosine similarity is a dot product.
    """

    @property
    def name(self) -> str:
        """Model name (repository id or folder name)."""

    @property
    def dims(self) -> int:
        """Embedding width."""

    @property
    def identity(self) -> str:
        """Vector-space identity; see :attr:`plur.embed.models_lock.ModelSpec.identity`."""

    @property
    def max_seq_length(self) -> int:
        """Token limit of one input, special tokens included."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts as documents (no instruction): ``[n, dims] float32``, rows L2-normalised."""

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (instruction prepended where the model has one): ``[dims] float32``."""

    def chunk_texts(self, texts: Sequence[str], max_tokens: int | None = None) -> tuple[list[str], np.ndarray]:
        """Split texts into pieces of at most ``max_tokens`` (default: the token limit): (chunks, ``[m] int64`` owner index)."""

    def embed_document_chunks(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """One vector per chunk: (``[m, dims] float32``, ``[m] int64`` index into ``texts``)."""


class SentenceTransformerEmbedder:
    """An :class:`Embedder` backed by sentence-transformers.

    Args:
        spec_or_path: a :class:`plur.embed.models_lock.ModelSpec` (loaded from ``folder``, or by name at
            the pinned revision when ``folder`` is None), or the path of a local model folder (its
            pooling, token limit and query prompt are read from its config files).
        device: ``"auto"`` (cuda, then mps, then cpu), ``"cuda"``, ``"mps"`` or ``"cpu"``. batch_size: texts per pass.
        folder: where the model files are, for a spec.
        onnx_dir: ONNX bundles' cache; given, on the CPU the model's bundle serves (:mod:`plur.embed.onnx_bundle`).
        precision: ``"float32"`` or ``"int8"``: documents and queries on the bundle's per-token int8 graph
            (:mod:`plur.embed.int8_graph`, its own vector identity); else float32, :attr:`precision_note` says why.

    Attributes:
        spec: the model description; ``identity`` is ``spec.identity`` for a pinned model and
            ``"local:<folder>#<fingerprint>:dims:pooling:norm:max"`` for a folder.
        device: the device in use. fp16 weights on CUDA, fp32 elsewhere; output is always float32.
        precision / precision_note: the precision serving; why ``"int8"`` was asked for and float32 serves, or ``""``.

    Raises:
        ModelError: the model cannot be loaded, or its width or pooling contradicts the spec.
        MissingDependencyError: sentence-transformers / torch are not installed (extra ``embed``).
    """

    def __init__(self, spec_or_path: ModelSpec | str | os.PathLike[str], device: str = "auto",
                 batch_size: int = 64, *, folder: Path | None = None, onnx_dir: Path | None = None,
                 precision: str = "float32") -> None:
        if precision not in PRECISIONS:
            raise ValidationError(f"precision={precision!r} is not one of {', '.join(PRECISIONS)}")
        if isinstance(spec_or_path, ModelSpec):
            spec, source = spec_or_path, (str(folder) if folder is not None else spec_or_path.name)
            self._identity = spec.identity
        else:
            path = Path(spec_or_path).expanduser().resolve()
            if not path.is_dir():
                raise ModelError(f"model folder {path} does not exist; give a folder holding modules.json")
            spec, source, folder = _spec_from_folder(path), str(path), path
            self._identity = ""
        if batch_size < 1:
            raise ValidationError(f"batch_size={batch_size} must be >= 1")
        self.batch_size = batch_size
        self.spec, self._source, self._local = spec, source, folder is not None
        if not self._identity and spec.dims:
            self._identity = vector_identity(f"local:{folder.name}#{_folder_fingerprint(folder)}", spec.dims,
                                            spec.pooling, spec.normalize, spec.max_seq_length)
        self._st: Any = None  # the SentenceTransformer, loaded on first need (never, when the bundle serves)
        self._fast: Any = None  # the faster query path, once prepare_fast_queries() (or the bundle) made one
        self._fast_tried = False
        #: the query path in use: ``eager``, ``torchscript`` or ``onnx`` (see :meth:`prepare_fast_queries`)
        self.query_runtime = "eager"
        self._bundle: Any = None
        self.precision, self.precision_note = "float32", ""
        cpu = device == "cpu" or (device == "auto" and not _accelerator_visible())
        self._open_lock = threading.RLock()
        self._deferred: tuple[Any, ...] | None = None
        meta = None
        if onnx_dir is not None and cpu and spec.dims and precision == "float32":
            from .onnx_bundle import ready_bundle_meta

            meta = ready_bundle_meta(Path(onnx_dir), self._identity)
        if meta is not None:  # a bundle serves: opened at the first text to embed or tokenize (see bundle)
            self._deferred = (spec_or_path, folder, Path(onnx_dir), device)
            self.device, self._special = "cpu", int(meta["special_tokens"])
            self._fast, self.query_runtime = self._bundle_one, "onnx"
        else:
            self._serve(spec_or_path, folder, onnx_dir, device, precision, cpu)

    @property
    def bundle(self) -> Any:
        """The ONNX Runtime bundle serving documents and queries (:mod:`plur.embed.onnx_bundle`), or None.

        A float32 bundle already exported for this identity is opened (its session made, its probes checked) on
        first need, not when the embedder is made: a build of the indexes whose every chunk is in the embedding
        cache never needs it (issue 49: ~165 MiB and ~1.4 s of CPU at every ``plur reindex``). Until then
        :attr:`identity`, :attr:`dims` and the chunk window are known from the spec and the bundle's meta.json;
        should the bundle then fail its check, the model is exported again or loaded here as when made, with the
        same identity (a float32 vector is the same space whichever runtime gives it).
        """
        if self._deferred is not None:
            with self._open_lock:
                if self._deferred is not None:
                    spec_or_path, folder, onnx_dir, device = self._deferred
                    self._serve(spec_or_path, folder, onnx_dir, device, "float32", True)
                    self._deferred = None
        return self._bundle

    def _serve(self, spec_or_path: Any, folder: Path | None, onnx_dir: Path | None, device: str, precision: str,
               cpu: bool) -> None:
        """Open the bundle (exporting it in a child process if need be) or load the model; pick the query path."""
        spec = self.spec
        if onnx_dir is not None and cpu and spec.dims:
            from .bundle_child import export_in_child
            from .onnx_bundle import OnnxBundle, int8_identity

            if precision == "int8":  # a verified int8 graph serves alone: the float32 bundle is not opened
                self._bundle = OnnxBundle.open(Path(onnx_dir), int8_identity(self._identity))
                if self._bundle is not None:
                    self._identity, self.precision = int8_identity(self._identity), "int8"
            self._bundle = self._bundle or OnnxBundle.open(Path(onnx_dir), self._identity)
            if self._bundle is None and export_in_child(spec_or_path, folder, Path(onnx_dir), self.batch_size):
                self._bundle = OnnxBundle.open(Path(onnx_dir), self._identity)  # torch stayed in the child
        self.device = "cpu" if self._bundle is not None else pick_device(device)
        if self._bundle is None:
            self._load()
            if onnx_dir is not None and self.device == "cpu":
                self._make_bundle(Path(onnx_dir))
        if precision == "int8" and self.precision != "int8":
            self._serve_int8(Path(onnx_dir) if onnx_dir is not None else None)
        if self._bundle is not None:
            self._fast, self.query_runtime = self._bundle_one, "onnx"
            self._special = self._bundle.special
        else:
            if self._fast == self._bundle_one:  # a deferred bundle that failed its check: the model's own path
                self._fast, self.query_runtime = None, "eager"
            self._special = int(getattr(self._tokenizer, "num_special_tokens_to_add", lambda pair=False: 2)(False))

    @property
    def _model(self) -> Any:
        """The ``SentenceTransformer`` (loaded now if the ONNX bundle served until here)."""
        if self._st is None:
            _ = self.bundle  # a deferred bundle settles first (one that fails its check loads the model itself)
            with self._open_lock:
                if self._st is None:
                    self._load()
        return self._st

    def _load(self) -> None:
        """Load the model and check it against the spec (dims, pooling); sets ``spec`` and ``identity``."""
        spec, source = self.spec, self._source
        if self._bundle is not None:
            self.device = pick_device("cpu")
        else:
            self.device = pick_device(getattr(self, "device", None) or "auto")
        model = _load_sentence_transformer(source, self.device, spec, local=self._local)
        dims = _model_dims(model)
        if spec.dims and dims != spec.dims:
            raise ModelError(f"{source} gives {dims}-d vectors but models.lock says {spec.dims}; fix the lock entry")
        pooling = _model_pooling(model)
        if pooling is not None and pooling != spec.pooling and spec.dims:
            raise ModelError(f"{source} pools by {pooling!r} but models.lock says {spec.pooling!r}; fix the lock entry")
        if not spec.dims:  # a folder without 1_Pooling/config.json
            spec = dataclasses.replace(spec, dims=dims, pooling=pooling or spec.pooling)
        model.max_seq_length = spec.max_seq_length
        self.spec = spec
        if not self._identity:
            folder = Path(source)
            self._identity = vector_identity(f"local:{folder.name}#{_folder_fingerprint(folder)}", spec.dims,
                                            spec.pooling, spec.normalize, spec.max_seq_length)
        self._tokenizer = model.tokenizer
        self._st = model

    def _make_bundle(self, onnx_dir: Path) -> None:
        """Export the ONNX bundle once (torch is loaded now anyway) and serve documents and queries from it."""
        from .fast_query import query_layout
        from .onnx_bundle import OnnxBundle, export_bundle

        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            return
        layout = model_thread.run(query_layout, self._st, "", "ONNX")
        if layout is not None and model_thread.run(export_bundle, self._st, self._embed_eager, self._identity,
                                                   onnx_dir, layout[1]) is not None:
            self._bundle = OnnxBundle.open(onnx_dir, self._identity)

    def _serve_int8(self, onnx_dir: Path | None) -> None:
        """Serve from the int8 bundle (derived from the float32 one once) or say in :attr:`precision_note` why not."""
        from .onnx_bundle import int8_identity, int8_or_why

        bundle, why = int8_or_why(onnx_dir, self._identity, self._bundle, self.device)
        if bundle is None:
            self.precision_note = f"{why}; float32 vectors serve"
            return
        self._bundle, self._identity, self.precision = bundle, int8_identity(self._identity), "int8"

    def _bundle_one(self, text: str) -> np.ndarray:
        bundle = self.bundle  # opened now if deferred
        return bundle.embed([text])[0] if bundle is not None else self._embed_eager(text)

    @property
    def queries_beside_model(self) -> bool:
        """True when queries are embedded by the ONNX bundle, which needs no model thread: a caller may embed
        them on a thread of its own (:func:`plur.embed.model_thread.submit_query`)."""
        return self.bundle is not None and self._fast == self._bundle_one

    # -- protocol -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def dims(self) -> int:
        return self.spec.dims

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def max_seq_length(self) -> int:
        return self.spec.max_seq_length

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents as they are (no instruction), truncated at ``max_seq_length`` tokens.

        Returns:
            ``[len(texts), dims] float32``, each row L2-normalised (``normalize_embeddings=True``,
            whatever the model's own last module does).
        """
        texts = list(texts)
        if not texts:
            return np.empty((0, self.dims), dtype=np.float32)
        bundle = self.bundle
        if bundle is not None:
            return model_thread.run(bundle.embed, texts, self.batch_size)
        out = model_thread.run(self._model.encode, texts, batch_size=self.batch_size, convert_to_numpy=True,
                               normalize_embeddings=True, show_progress_bar=False)
        return np.ascontiguousarray(out, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query with the model's query instruction prepended: ``[dims] float32``, unit norm.

        One text takes the short path: the model's own ``preprocess`` and forward (its pooling and
        normalisation modules), without ``encode``'s batching, length sorting and per-call device
        resolution. Every forward pass runs on :mod:`plur.embed.model_thread` (one OpenMP pool).
        The vector equals ``encode``'s (tested to 1e-6); a sentence-transformers without
        ``preprocess``, or a model with a default prompt of its own, gets ``encode``.
        """
        text = self.spec.query_instruction + text
        if self.queries_beside_model:
            return self.bundle.embed_query(text)  # on the caller's thread (the query thread: model_thread.submit_query)
        if self._fast is not None:
            return model_thread.run(self._fast, text)
        model = self._model
        if not hasattr(model, "preprocess") or getattr(model, "default_prompt_name", None):
            return self.embed_documents([text])[0]  # older sentence-transformers; a model-side default prompt
        return model_thread.run(self._embed_one, text)

    def prepare_fast_queries(self, runtime: str = "auto", cache_dir: Path | None = None) -> bool:
        """Give a long-lived process a faster query path on the CPU, used only when it equals the eager one.

        ``onnx`` runs the exported model on ONNX Runtime (:mod:`plur.embed.onnx_query`; exported once
        to ``<cache_dir>/onnx/``, 1.8-3 s, later starts load it in ~0.15 s); ``torchscript`` traces
        and freezes the encoder (:mod:`plur.embed.fast_query`, 0.4-0.6 s every start); ``auto`` tries
        ONNX (when ``cache_dir`` is given and onnxruntime is installed), then TorchScript. Each path
        is checked against the eager model on probe texts and dropped when it differs.

        Args:
            runtime: ``auto``, ``onnx``, ``torchscript`` or ``eager`` (setting ``query_runtime``).
            cache_dir: where the ONNX graph is cached (``None``: no ONNX path).

        Returns:
            True when a faster path is in use (:attr:`query_runtime` names it). A second call keeps
            the path the first one chose.

        Raises:
            ValidationError: an unknown ``runtime``.
        """
        if runtime not in ("auto", "onnx", "torchscript", "eager"):
            raise ValidationError(f"query runtime {runtime!r} is not one of auto, onnx, torchscript, eager")
        if self.query_runtime == "onnx" and self._fast == self._bundle_one and not self._fast_tried:
            if runtime in ("auto", "onnx") or self.precision == "int8":  # torch would give float32 vectors
                return True
            _ = self.bundle  # a deferred bundle settles first
            self._fast, self.query_runtime = None, "eager"  # torchscript or eager asked for: the torch model
        if self._fast is None and not self._fast_tried and runtime != "eager":
            self._fast_tried = True
            if runtime in ("auto", "onnx") and cache_dir is not None:
                from .onnx_query import onnx_query_path

                self._fast = model_thread.run(onnx_query_path, self._model, self._embed_eager,
                                              self.spec.query_instruction, identity=self._identity,
                                              cache_dir=Path(cache_dir))
                self.query_runtime = "onnx" if self._fast is not None else "eager"
            if self._fast is None and runtime in ("auto", "torchscript"):
                from .fast_query import trace_query_path

                self._fast = model_thread.run(trace_query_path, self._model, self._embed_eager,
                                              self.spec.query_instruction)
                self.query_runtime = "torchscript" if self._fast is not None else "eager"
        return self._fast is not None

    def _embed_one(self, text: str) -> np.ndarray:
        return self._fast(text) if self._fast is not None else self._embed_eager(text)

    def _embed_eager(self, text: str) -> np.ndarray:
        """One query through the model's own modules: ``[dims] float32`` unit vector (the reference path)."""
        import torch
        from sentence_transformers.util import batch_to_device

        model = self._model
        with torch.inference_mode():
            features = batch_to_device(model.preprocess([text]), model.device)
            vec = torch.nn.functional.normalize(model(features)["sentence_embedding"].float(), p=2, dim=1)
        return np.ascontiguousarray(vec[0].cpu().numpy(), dtype=np.float32)

    def chunk_texts(self, texts: Sequence[str], max_tokens: int | None = None) -> tuple[list[str], np.ndarray]:
        """Split each text into windows that fit the token limit, counted with the model's tokenizer.

        Windows hold ``max_seq_length - special tokens`` tokens, or ``max_tokens`` when that is smaller
        (setting ``embed_chunk_tokens``: a long engram's best chunk then covers fewer topics), overlap by
        1/8 of that (at most 32 tokens), and are cut at token boundaries (character offsets), so no text
        is silently truncated. A text of at most ``window // 2`` characters is one chunk without
        tokenising (a token covers at least one character; the factor 2 leaves room for SentencePiece's
        word-start marker).

        Args:
            texts: the documents.
            max_tokens: window size in tokens (``None`` or 0 = the model's limit; at least 8).

        Returns:
            (chunks, owners): ``owners[i]`` is the index in ``texts`` of ``chunks[i]``, ``[m] int64``;
            every text has at least one chunk (an empty text is one empty chunk).
        """
        window = max(8, self.max_seq_length - self._special)
        if max_tokens:
            window = max(8, min(window, int(max_tokens)))
        overlap = min(32, window // 8)
        chunks: list[str] = []
        owners: list[int] = []
        long_idx = [i for i, t in enumerate(texts) if len(t) > window // 2]
        spans: dict[int, list[tuple[int, int]]] = {}
        if long_idx:
            bundle = self.bundle
            if bundle is not None:
                all_offsets = bundle.offsets([texts[i] for i in long_idx])
            else:
                all_offsets = self._tokenizer([texts[i] for i in long_idx], add_special_tokens=False,
                                              return_offsets_mapping=True, truncation=False,
                                              verbose=False)["offset_mapping"]
            for i, offsets in zip(long_idx, all_offsets):
                offsets = [o for o in offsets if o[1] > o[0]] or [(0, len(texts[i]))]
                if len(offsets) <= window:
                    continue
                out, start = [], 0
                while True:
                    end = min(start + window, len(offsets))
                    out.append((offsets[start][0], offsets[end - 1][1]))
                    if end == len(offsets):
                        break
                    start = end - overlap
                spans[i] = out
        for i, text in enumerate(texts):
            for a, b in spans.get(i, [(0, len(text))]):
                chunks.append(text[a:b])
                owners.append(i)
        return chunks, np.asarray(owners, dtype=np.int64)

    def embed_document_chunks(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Embed every chunk of every text (see :meth:`chunk_texts`).

        Returns:
            (``[m, dims] float32`` unit vectors, ``[m] int64`` owner index into ``texts``); a
            caller keeps the best chunk score per text.
        """
        chunks, owners = self.chunk_texts(texts)
        return self.embed_documents(chunks), owners

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.identity!r}, device={self.device!r})"


__all__ = ["PRECISIONS", "Embedder", "SentenceTransformerEmbedder", "pick_device"]
