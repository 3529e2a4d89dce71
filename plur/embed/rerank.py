"""Optional second stage: a :class:`Reranker` reorders recall's top candidates (off by default).

A reranker scores ``(query, passage)`` pairs jointly, which a bi-encoder cannot; it is slow
(one transformer pass per pair), so it only sees the fused top ``rerank_top_n`` candidates
(:func:`plur.index.stages.rerank`). Turn it on with the setting ``reranker`` = a name pinned
in ``models.lock`` under ``[rerankers.*]`` (e.g. ``BAAI/bge-reranker-base``) or a local model
folder. Quality on plur's benchmarks is **not measured here**: no reranker weights can be had
on the machine this was built on.

The backend is sentence-transformers' ``CrossEncoder`` (lazy import: the ``embed`` extra).
Pinned files are checked against their sha256 before loading, as for embedding models; an empty
sha256 in the lock is a value nobody has verified yet and loads with a warning.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import ModelError, install_hint

__all__ = ["CrossEncoderReranker", "Reranker", "RerankerPin", "load_reranker", "reranker_pins"]

log = logging.getLogger("plur.embed.rerank")


@runtime_checkable
class Reranker(Protocol):
    """Anything that scores passages against a query, higher = more relevant."""

    name: str

    def score(self, query: str, passages: Sequence[str]) -> Sequence[float]:
        """One relevance score per passage (any finite scale, higher is better), in input order."""
        ...


@dataclass(frozen=True)
class RerankerPin:
    """A ``[rerankers."<name>"]`` entry of ``models.lock``: revision + sha256 per file ("" = unverified)."""

    name: str
    revision: str
    files: tuple[tuple[str, str], ...]
    max_seq_length: int = 512
    notes: str = ""


def reranker_pins(lock_path: Path | None = None) -> dict[str, RerankerPin]:
    """The rerankers pinned in ``models.lock`` (name -> pin), in file order.

    Raises:
        ModelError: the lock file is unreadable.
    """
    from .models_lock import default_lock_path

    path = Path(lock_path) if lock_path is not None else default_lock_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ModelError(f"cannot read {path} ({exc}); restore it from the plur repository") from None
    out = {}
    for name, entry in (data.get("rerankers") or {}).items():
        files = tuple((str(f["path"]), str(f.get("sha256", ""))) for f in entry.get("files") or ())
        out[name] = RerankerPin(name=name, revision=str(entry["revision"]), files=files,
                                max_seq_length=int(entry.get("max_seq_length", 512)), notes=str(entry.get("notes", "")))
    return out


def _verify(pin: RerankerPin, folder: Path) -> None:
    from .model_files import sha256_file

    for rel, want in pin.files:
        path = folder / rel
        if not path.is_file():
            raise ModelError(f"reranker {pin.name}: {path} is missing; download {pin.name}@{pin.revision[:7]} first")
        if not want:
            log.warning("reranker %s: %s has no verified sha256 in models.lock; loading it unverified", pin.name, rel)
            continue
        got = sha256_file(path)
        if got != want:
            raise ModelError(f"reranker {pin.name}: {rel} has sha256 {got}, models.lock pins {want}; "
                             "delete the file and download the pinned revision again")


def _hf_snapshot(pin: RerankerPin) -> Path:
    from .model_files import hf_cache_dir

    return hf_cache_dir() / f"models--{pin.name.replace('/', '--')}" / "snapshots" / pin.revision


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` over a local folder.

    Args:
        folder: the model files. name: label for logs. device: ``cpu``, ``cuda``, ``mps`` or ``auto``.
        max_seq_length: token limit of one (query, passage) pair.
        batch_size: pairs per forward pass.
    """

    def __init__(self, folder: Path, *, name: str, device: str = "auto", max_seq_length: int = 512,
                 batch_size: int = 16) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ModelError(f"the reranker needs sentence-transformers: {install_hint('embed')}") from None
        self.name = name
        self.batch_size = batch_size
        kwargs: dict[str, Any] = {"max_length": max_seq_length}
        if device != "auto":
            kwargs["device"] = device
        self._model = CrossEncoder(str(folder), **kwargs)

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, higher = more relevant (the model's own output activation:
        a sigmoid in [0, 1] for one-label models such as bge-reranker-base)."""
        if not passages:
            return []
        from . import model_thread  # one OpenMP pool for every forward pass in the process

        out = model_thread.run(self._model.predict, [(query, p) for p in passages], batch_size=self.batch_size,
                               show_progress_bar=False)
        return [float(x) for x in out]


def load_reranker(setting: str, *, device: str = "auto", lock_path: Path | None = None) -> Reranker:
    """Load the reranker the ``reranker`` setting names.

    Args:
        setting: a name pinned under ``[rerankers.*]`` in models.lock (its files must be in the
            Hugging Face cache at the pinned revision, or in a folder given instead), or a folder path.
        device: torch device.

    Raises:
        ModelError: unknown name, missing files, or a file whose sha256 differs from its pin.
    """
    pins = reranker_pins(lock_path)
    pin = pins.get(setting)
    folder = Path(setting).expanduser()
    if pin is not None:
        snap = _hf_snapshot(pin)
        _verify(pin, snap)
        return CrossEncoderReranker(snap, name=pin.name, device=device, max_seq_length=pin.max_seq_length)
    if folder.is_dir():
        return CrossEncoderReranker(folder, name=f"local:{folder}", device=device)
    known = ", ".join(pins) or "none"
    raise ModelError(f"reranker {setting!r} is neither pinned in models.lock (pinned: {known}) nor a folder; "
                     "set reranker to one of those, a model folder, or '' for none")
