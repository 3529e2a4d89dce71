"""A TorchScript-frozen query path for a sentence-transformers model on the CPU, used only when it is exact.

A query is one short text, so its forward pass on the CPU is bound by per-operator dispatch in
Python, not by arithmetic: all-MiniLM-L6-v2 takes ~14 ms for 3 tokens and ~18 ms for 15 on 2
cores. Tracing the transformer once (``torch.jit.trace``) and freezing it (``torch.jit.freeze``,
which folds the weights in as constants) and running the graph as traced (no profiling executor,
which would re-specialise it for every new query length) costs less: query embedding p50 17.8 ->
13.5 ms on the model thread, three alternating process pairs of 150 queries of 3-14 words on the
10k store of ``bench/doors/service.py``. The model's own later modules (pooling, normalisation)
still run as they are.

Tracing records one execution, so :func:`trace_query_path` checks the traced path against the
eager one on probe texts of 1 to ``max_seq_length`` tokens and keeps it only when every vector
agrees to :data:`MAX_ABS_DIFF`; otherwise (or when tracing fails: a model whose forward branches
on its input, a torch without TorchScript) it returns ``None`` and the caller keeps the eager
path. Batch size is always 1 (a query), so there is no padding to get wrong.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

log = logging.getLogger("plur.embed.fast_query")

#: Largest element-wise difference accepted between the traced and the eager unit vector.
MAX_ABS_DIFF = 1e-5
#: Inputs of a Hugging Face encoder, in the order its ``forward`` takes them positionally.
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

__all__ = ["MAX_ABS_DIFF", "max_probe_diff", "query_layout", "trace_query_path"]


def _probes(max_tokens: int) -> list[str]:
    """Texts from 1 token to past ``max_tokens`` (the last is truncated by the tokenizer)."""
    return ["hi", "What did my sister say about the trip to Lisbon last May?",
            " ".join(["memory"] * 60), " ".join(["engram"] * (max_tokens + 16))]


def query_layout(model: Any, instruction: str, what: str) -> tuple[list[Any], list[str]] | None:
    """The encoder's later modules and input names for a fast query path, or ``None`` (logged).

    Args:
        model: a loaded ``SentenceTransformer``.
        instruction: the query instruction (prepended to the example text that is tokenised).
        what: the path's name for the log ("traced", "ONNX").

    Returns:
        ``(later, names)``: the modules after the encoder (pooling, normalisation) and the
        tokenizer outputs the encoder takes, ``input_ids`` first; ``None`` when the model is not on
        the CPU or its layout is unknown.
    """
    if str(getattr(model, "device", "cpu")) != "cpu":
        log.info("no %s query path: the model is on %s (it is for CPU dispatch overhead)", what, model.device)
        return None
    first = model[0]
    encoder = getattr(first, "model", None) or getattr(first, "auto_model", None)
    later = list(model)[1:]
    if encoder is None or not later:
        log.info("no %s query path: unknown module layout %s", what, [type(m).__name__ for m in model])
        return None
    example = model.preprocess([instruction + "probe text for tracing"])
    names = [n for n in _INPUTS if n in example]
    if names[:1] != ["input_ids"]:
        log.info("no %s query path: the tokenizer gives %s", what, sorted(example))
        return None
    return later, names


def max_probe_diff(fast: Callable[[str], np.ndarray], eager: Callable[[str], np.ndarray], model: Any,
                   instruction: str) -> float:
    """Largest element-wise difference between ``fast`` and ``eager`` over the probe texts.

    The probes run from 1 token to past the model's ``max_seq_length`` (the last is truncated).

    Returns:
        The maximum absolute difference of the unit vectors (``inf`` when a shape differs or a
        value is NaN); a fast path is kept only when it is at most :data:`MAX_ABS_DIFF`.
    """
    worst = 0.0
    for probe in _probes(int(getattr(model, "max_seq_length", 256) or 256)):
        text = instruction + probe
        a, b = np.asarray(fast(text)), np.asarray(eager(text))
        diff = float(np.max(np.abs(a - b))) if a.shape == b.shape else float("inf")
        if not np.isfinite(diff):
            return float("inf")
        worst = max(worst, diff)
    return worst


def trace_query_path(model: Any, eager: Callable[[str], np.ndarray],
                     instruction: str = "") -> Callable[[str], np.ndarray] | None:
    """A function ``text -> [dims] float32`` unit vector equal to ``eager``, or ``None``.

    Args:
        model: a loaded ``SentenceTransformer`` on the CPU whose first module wraps a Hugging Face
            encoder (``.model`` or ``.auto_model``) and whose later modules read ``token_embeddings``.
        eager: the reference query path (``SentenceTransformerEmbedder._embed_eager``), which the
            traced one must equal on every probe.
        instruction: prepended to each probe as to real queries (the model's query instruction).

    Returns:
        The traced query function, or ``None`` (the reason is logged at INFO): not on the CPU, an
        unknown module layout, a tracing error, or a probe whose vector differs by more than
        :data:`MAX_ABS_DIFF`. Call both this and the returned function on the model thread.
    """
    import torch

    try:
        layout = query_layout(model, instruction, "traced")
        if layout is None:
            return None
        later, names = layout
        first = model[0]
        encoder = getattr(first, "model", None) or getattr(first, "auto_model", None)
        example = model.preprocess([instruction + "probe text for tracing"])
        # TracerWarnings name the shape checks that become constants (the probes below test them) and
        # torch 2.13 marks TorchScript deprecated: neither belongs in a service's log
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(encoder.eval(), tuple(example[n] for n in names), strict=False,
                                     check_trace=False)
            frozen = torch.jit.freeze(traced.eval())

        def fast(text: str) -> np.ndarray:
            features = dict(model.preprocess([text]))
            # the profiling executor re-specialises the graph for each new query length, which costs
            # more than it saves on a 1-text batch: run the frozen graph as traced
            with torch.inference_mode(), torch.jit.optimized_execution(False):
                out = frozen(*(features[n] for n in names))
                features["token_embeddings"] = out[0] if isinstance(out, (tuple, list)) else out["last_hidden_state"]
                for module in later:
                    features = module(features)
                vec = torch.nn.functional.normalize(features["sentence_embedding"].float(), p=2, dim=1)
            return np.ascontiguousarray(vec[0].numpy(), dtype=np.float32)

        diff = max_probe_diff(fast, eager, model, instruction)
        if not diff <= MAX_ABS_DIFF:
            log.info("query path not traced: the traced vector differs by %.2g on a probe", diff)
            return None
    except Exception as exc:  # noqa: BLE001 - any failure keeps the eager path, which is always right
        log.info("query path not traced: %s: %s", type(exc).__name__, exc)
        return None
    log.info("query path traced and frozen (TorchScript); equal to the eager model on the probes")
    return fast
