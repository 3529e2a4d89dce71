"""MemPalace (3.11, extra ``compare``) as a side of the peer bench.

MemPalace files memories as *drawers* in a ChromaDB collection (``mempalace_drawers``, cosine HNSW, its
text and metadata in Chroma's SQLite) under a palace folder; its default embedding, ``minilm``, is
ChromaDB's ``ONNXMiniLM_L6_V2`` on ONNX Runtime (batches of 32 texts, each padded to 256 tokens),
pointed here at the same packaged weights as plur and txtai (:mod:`bench.peers.chroma_model`).

* **ingest**: the user's path for a conversation, ``mempalace mine <dir> --mode convos``
  (``convo_miner.mine_convos``) over the conversation written (untimed) as MemPalace's plain transcript,
  one ``"> <speaker>: <text>"`` line per turn, so each turn is one drawer as it is one engram in plur (a
  turn of 30 characters or less, MemPalace's smallest drawer, joins the drawer before it; the drawers
  filed are counted); the transcript carries no session dates.
  Untimed before: the embedding function built and warmed (the instance the palace uses). Timed: the
  mine (normalise, chunk, rooms, entities, upsert with embedding, FTS) into a fresh palace.
* **recall**: ``mempalace.searcher.search_memories(query, palace, n_results=k)``, its hybrid (vector
  candidates re-ranked with BM25), as its MCP server and ``mempalace search`` call it.

Each MemPalace job runs in a fresh process whose ``HOME`` and ``MEMPALACE_CONFIG_DIR`` are under the
job's folder (:func:`isolate`): MemPalace keeps locks, an entity registry and hallways under
``~/.mempalace``, and a run must neither read a user's nor grow one of its own between sets.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
from pathlib import Path
from typing import Any

from .chroma_model import use
from .conversation import WARM, turns

INSTALL = "pip install 'plur[compare]' (mempalace 3.11)"
WING = "locomo"


def runtime() -> str:
    """MemPalace's runtime here: ONNX Runtime through ChromaDB's ``ONNXMiniLM_L6_V2``."""
    from importlib import metadata

    return (f"onnxruntime {metadata.version('onnxruntime')} (chromadb {metadata.version('chromadb')} "
            f"ONNXMiniLM_L6_V2, 32 texts a batch padded to 256 tokens; mempalace {metadata.version('mempalace')})")


def isolate(root: Path) -> None:
    """Point this process's ``HOME`` and ``MEMPALACE_CONFIG_DIR`` under ``root`` (before mempalace is imported)."""
    home = root / "home"
    (home / ".mempalace").mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(home)
    os.environ["MEMPALACE_CONFIG_DIR"] = str(home / ".mempalace")


def transcript(sample: dict[str, Any]) -> str:
    """The conversation as MemPalace's plain transcript: one ``"> "`` line per turn (newlines folded)."""
    return "".join(f"> {' '.join(t.text.split())}\n" for t in turns(sample))


def ingest(sample: dict[str, Any], root: Path, *, model_dir: Path) -> dict[str, Any]:
    """Mine the conversation into a fresh palace under ``root`` (the clock around the mine only).

    Returns:
        ``{s, cpu_s, turns, runtime}``: seconds (wall; ``cpu_s`` this process's CPU, all threads) and the
        drawers filed.
    """
    isolate(root)
    use(model_dir)
    from mempalace.convo_miner import mine_convos
    from mempalace.embedding import get_embedding_function

    get_embedding_function()([WARM])  # the cached instance the palace's collection embeds with
    convos = root / "convos"
    convos.mkdir()
    (convos / "locomo.txt").write_text(transcript(sample), encoding="utf-8")
    palace = root / "palace"
    banner = io.StringIO()
    c0, t0 = time.process_time(), time.perf_counter()
    with contextlib.redirect_stdout(banner):
        mine_convos(str(convos), str(palace), wing=WING)
    t1, c1 = time.perf_counter(), time.process_time()
    return {"s": t1 - t0, "cpu_s": c1 - c0, "turns": _count(palace), "runtime": runtime()}


def _count(palace: Path) -> int:
    from mempalace.palace import get_collection

    return int(get_collection(str(palace), create=False).count())


def searcher(root: Path, *, model_dir: Path) -> tuple[Any, Any]:
    """``(search(query, k) -> hit texts, describe() -> runtime)`` over the palace :func:`ingest` filled."""
    isolate(root)
    use(model_dir)
    from mempalace.searcher import search_memories

    palace = str(root / "palace")

    def search(query: str, k: int) -> list[str]:
        out = search_memories(query, palace, n_results=k)
        if out.get("error"):
            raise RuntimeError(f"mempalace search failed: {out['error']}")
        return [r["text"] for r in out["results"]]

    return search, runtime
