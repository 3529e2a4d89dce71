"""The files of a pinned model on disk: sha256 verification, the Hugging Face cache, download.

* :func:`verify_files` / :func:`sha256_file`: is a folder byte for byte the pinned revision?
* :func:`hf_cache_dir`, :func:`hf_snapshot_folder`, :func:`hf_offline`, :func:`download_pinned`:
  where a pinned revision lives in the Hugging Face cache, and fetching it.

What is pinned is :mod:`plur.embed.models_lock`. huggingface_hub is imported inside
:func:`download_pinned` only.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelError, require
from .models_lock import ModelSpec

_HASH_MEMO: dict[tuple[str, int, int], str] = {}
_HASH_MEMO_LOCK = threading.Lock()


def fetch_hint(args: str) -> str:
    """The command that runs :mod:`plur.embed.fetch` with ``args``, which a wheel has as a checkout does (a wheel
    has no ``scripts/`` folder), e.g. ``python -m plur.embed.fetch download BAAI/bge-small-en-v1.5`` (the
    ``python`` of plur's environment)."""
    return f"python -m plur.embed.fetch {args}"


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
            f"machine with network ({fetch_hint('download ' + spec.name + ' --to DIR')}) and "
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
                f"{fetch_hint('download ' + spec.name + ' --to DIR')} and set PLUR_MODEL=DIR"
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
            f"or fetch the model on another machine ({fetch_hint('download ' + spec.name + ' --to DIR')}), "
            "copy DIR here and set PLUR_MODEL=DIR"
        ) from None


__all__ = ["VerifyReport", "download_pinned", "fetch_hint", "hf_cache_dir", "hf_offline", "hf_snapshot_folder", "sha256_file",
           "verify_files"]
