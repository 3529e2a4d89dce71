"""Loading a ``SentenceTransformer`` for :class:`plur.embed.embedder.SentenceTransformerEmbedder`, and reading its
width and pooling back (to check them against ``models.lock``). sentence-transformers and transformers are
imported inside the functions.
"""

from __future__ import annotations

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


__all__ = ["_load_sentence_transformer", "_model_dims", "_model_pooling"]
