"""An ONNX Runtime query path for a sentence-transformers model on the CPU, used only when it is exact.

A one-text query is bound by per-operator dispatch, not arithmetic (see :mod:`plur.embed.fast_query`).
ONNX Runtime runs the whole model (encoder, pooling, normalisation) as one fused graph with its own
thread pool: query embedding p50 3.6-5.5 ms against 9-13 ms for the TorchScript-frozen path and
~14-18 ms eager, all-MiniLM-L6-v2 on 2 cores, same process, alternating, 180 queries of 1-400
tokens (``/tmp`` prototype, then ``bench/doors/service.py``; figures in the README 'Local service').

The model is exported once (``torch.onnx.export``, TorchScript-based exporter, opset
:data:`OPSET`, batch and sequence axes dynamic) to ``<cache_dir>/onnx/<key>.onnx``, where ``key``
hashes the model's vector identity, the torch / transformers / sentence-transformers versions and
the input names, so an upgrade exports anew. The file is written to a temporary name and renamed,
so a crash never leaves half a graph under the real name. Later processes load it (~0.15 s against
1.8-3 s to export). Every load is checked against the eager model on the probe texts of
:func:`plur.embed.fast_query.max_probe_diff`; a cached file that fails the check (stale, corrupt)
is exported again once, and a fresh export that fails it is not used.

Needs the extra ``onnx`` (``onnxruntime`` to run, ``onnx`` to export). Without it, or on any
failure, :func:`onnx_query_path` returns ``None`` and logs why; the caller then tries TorchScript.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import install_hint
from .fast_query import MAX_ABS_DIFF, max_probe_diff, query_layout

log = logging.getLogger("plur.embed.onnx_query")

#: ONNX opset of the export: 17 has every operator a BERT-family encoder needs (LayerNormalization)
#: and is supported by every onnxruntime >= 1.14.
OPSET = 17
#: Bumped when the exported graph's shape changes (its inputs, outputs or wrapper).
_FORMAT = 1

__all__ = ["OPSET", "onnx_file", "onnx_query_path"]


def onnx_file(model: Any, identity: str, names: list[str], cache_dir: Path) -> Path:
    """Where the exported graph of ``model`` is cached: ``<cache_dir>/onnx/<sha256[:16]>.onnx``.

    Args:
        model: the ``SentenceTransformer`` (its class name and ``max_seq_length`` enter the key).
        identity: the embedder's vector identity (model name, revision, dims, pooling).
        names: the graph's input names, ``input_ids`` first.
        cache_dir: plur's cache folder (setting ``cache_dir``).
    """
    import sentence_transformers
    import torch
    import transformers

    key = json.dumps({"format": _FORMAT, "opset": OPSET, "identity": identity, "inputs": names,
                      "class": type(model[0]).__name__, "max_seq_length": int(model.max_seq_length or 0),
                      "torch": torch.__version__, "transformers": transformers.__version__,
                      "sentence_transformers": sentence_transformers.__version__}, sort_keys=True)
    return Path(cache_dir) / "onnx" / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def onnx_query_path(model: Any, eager: Callable[[str], np.ndarray], instruction: str, *, identity: str,
                    cache_dir: Path, threads: int | None = None) -> Callable[[str], np.ndarray] | None:
    """A function ``text -> [dims] float32`` unit vector equal to ``eager``, run by ONNX Runtime, or ``None``.

    Args:
        model: a loaded ``SentenceTransformer`` on the CPU (first module a Hugging Face encoder).
        eager: the reference query path (``SentenceTransformerEmbedder._embed_eager``).
        instruction: the model's query instruction, prepended to each probe as to real queries.
        identity: the embedder's vector identity (part of the cache key).
        cache_dir: plur's cache folder; the graph lives in its ``onnx/`` subfolder.
        threads: ONNX Runtime intra-op threads (default ``torch.get_num_threads()``, the same pool
            size the eager model uses).

    Returns:
        The query function, or ``None`` with the reason logged at INFO: onnxruntime or onnx not
        installed, not on the CPU, an unknown module layout, an export or load error, or a probe
        whose vector differs from the eager one by more than :data:`~plur.embed.fast_query.MAX_ABS_DIFF`.
        Call both this and the returned function on the model thread.
    """
    try:
        import onnxruntime  # noqa: F401 - fail early and cheaply when the extra is missing
    except ImportError:
        log.info("no ONNX query path: onnxruntime is not installed (%s)", install_hint("onnx"))
        return None
    try:
        layout = query_layout(model, instruction, "ONNX")
        if layout is None:
            return None
        _, names = layout
        path = onnx_file(model, identity, names, cache_dir)
        exported = not path.is_file()
        if exported:
            _export(model, names, path)
        while True:
            try:
                fast = _session_path(model, names, path, threads)
                diff = max_probe_diff(fast, eager, model, instruction)
            except Exception as exc:  # noqa: BLE001 - a corrupt cached file fails to load: export it again
                if exported:
                    raise
                log.info("ONNX graph %s does not load (%s: %s)", path.name, type(exc).__name__, exc)
                diff = float("inf")
            else:
                if diff <= MAX_ABS_DIFF:
                    log.info("query path on ONNX Runtime (graph %s, %s); equal to the eager model on the probes "
                             "(max diff %.1g)", path.name, "exported" if exported else "cached", diff)
                    return fast
                log.info("ONNX graph %s differs from the eager model by %.2g on a probe", path.name, diff)
            if exported:
                return None
            path.unlink(missing_ok=True)  # stale or corrupt: export again, once
            _export(model, names, path)
            exported = True
    except Exception as exc:  # noqa: BLE001 - any failure keeps a slower path, which is always right
        log.info("no ONNX query path: %s: %s", type(exc).__name__, exc)
    return None


def _export(model: Any, names: list[str], path: Path) -> None:
    """Export the whole model (encoder, pooling, normalisation) to ``path``, atomically."""
    import torch

    class _Whole(torch.nn.Module):
        """Positional inputs in ``names`` order -> ``[batch, dims]`` float32 unit vectors."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: Any) -> Any:
            out = self.inner(dict(zip(names, inputs)))["sentence_embedding"]
            return torch.nn.functional.normalize(out.float(), p=2, dim=1)

    example = model.preprocess(["probe text for the export"])
    from ..store.atomic import private_dirs
    from ..store.modes import private_file

    private_dirs(path.parent)
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    axes = {n: {0: "batch", 1: "sequence"} for n in names} | {"embedding": {0: "batch"}}
    try:
        # the exporter's TracerWarnings name the shape checks that become constants (the probes test
        # them) and its deprecation notices are for us, not for a service's log
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(_Whole(model).eval(), tuple(example[n] for n in names), str(tmp), input_names=names,
                              output_names=["embedding"], dynamic_axes=axes, opset_version=OPSET, dynamo=False)
        private_file(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _session_path(model: Any, names: list[str], path: Path, threads: int | None) -> Callable[[str], np.ndarray]:
    """An ONNX Runtime session on ``path`` wrapped as ``text -> [dims] float32``."""
    import torch

    from .ort_session import open_session

    session, run_options = open_session(path, threads or torch.get_num_threads())

    def fast(text: str) -> np.ndarray:
        features = model.preprocess([text])
        out = session.run(None, {n: features[n].numpy() for n in names}, run_options)[0]
        return np.ascontiguousarray(out[0], dtype=np.float32)

    return fast
