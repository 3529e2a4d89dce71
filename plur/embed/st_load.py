"""Loading a ``SentenceTransformer`` for :class:`plur.embed.embedder.SentenceTransformerEmbedder`, reading its
width and pooling back (to check them against ``models.lock``), and describing an unpinned local model folder
(its spec, a fingerprint of its files). sentence-transformers and transformers are imported inside the functions.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import ModelError, require
from .model_files import hf_offline
from .models_lock import ModelSpec


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


__all__ = ["_folder_fingerprint", "_load_sentence_transformer", "_model_dims", "_model_pooling", "_spec_from_folder"]


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
