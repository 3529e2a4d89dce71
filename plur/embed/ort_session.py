"""One way to open an ONNX Runtime session on the CPU, for the bundle and the query graph alike.

Both :mod:`plur.embed.onnx_bundle` (documents and queries without torch) and :mod:`plur.embed.onnx_query`
(the query path beside a loaded torch model) run the same exported graph with the same options:

* intra-op threads as asked, one inter-op thread, idle threads sleeping instead of spinning (on a shared
  machine spinning threads fight the busy ones for the cores: 6 short documents with one core taken,
  42 ms spinning, 26 ms not; issue 27);
* every graph optimisation, errors-only logging (its fusion notices are not for the user);
* a ``RunOptions`` that gives the CPU arena's unused memory back after each run. The arena otherwise keeps
  the largest run's activations for the life of the session: the bundle's probe check (a padded batch up to
  ``max_seq_length``) left 327 MiB resident for the 90 MB MiniLM graph, 131 MiB with shrinkage; a one-query
  run costs the same either way (p50 6.9-7.5 ms, 2 threads; issue 30).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["open_session"]


def open_session(path: Path, threads: int) -> tuple[Any, Any]:
    """``(InferenceSession, RunOptions)`` for the graph at ``path`` on the CPU with ``threads`` intra-op threads.

    Raises:
        ImportError: onnxruntime is not installed (extra ``onnx``); onnxruntime errors for an unreadable graph.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, int(threads))
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    run_options = ort.RunOptions()
    run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return session, run_options
