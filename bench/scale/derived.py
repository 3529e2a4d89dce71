"""Derived vectors: a store of a million engrams measured without embedding a million texts on the CPU.

Embedding the ~1.5M chunks of a million distractor notes takes ~2 hours of both cores of this machine (~200
chunks a second); the speed and memory figures of a store (index build, RSS, start, recall latency, capture,
list) depend on how many vectors there are and how they cluster, not on what each one says. With
``python -m bench scale --vectors derived`` every chunk the embedding cache lacks gets a **derived vector**
instead of the model's: a real vector of the cache (one of the model's own vectors of other distractor chunks,
picked by the chunk text's hash) plus seeded Gaussian noise, normalised, cosine ~0.86 to the vector it came from.
So the new rows sit where real ones do (MiniLM's vectors fill a narrow cone, not the whole sphere), neighbourhoods
are as crowded as real ones, and a query meets them as it would meet real notes it has no reason to match.

What stays real: every text (BM25 and the store are exactly as in a model-embedded run), every chunk whose vector
the cache already held (LoCoMo's turns, the distractors a smaller size embedded), every query and every capture
(the service embeds them with the model). What it costs: the dense leg's view of the derived notes is not their
meaning, so the quality row of such a size is marked approximate. Derived vectors never reach the shared embedding
cache: a derived run works on a copy of it (:func:`derived_cache`).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

#: Norm of the noise added to a unit vector (cosine to its source ~ 1 / sqrt(1 + NOISE**2) ~ 0.86).
NOISE = 0.6
#: At most this many real vectors are read from the cache as sources.
POOL = 200_000


def derived_cache(real: Path, work: Path) -> Path:
    """The cache folder of derived runs: ``work/derived-cache``, a copy of ``real``'s cache made on first use."""
    out = work / "derived-cache"
    db = out / "embeddings.sqlite"
    if not db.exists():
        out.mkdir(parents=True, exist_ok=True)
        src = real / "embeddings.sqlite"
        if src.exists():
            with sqlite3.connect(src) as a, sqlite3.connect(db) as b:
                a.backup(b)  # consistent even while another process writes the real cache
    return out


class DerivedVectors:
    """``embed_documents`` for chunks the cache lacks: a real source vector plus seeded noise, normalised.

    Args:
        cache_db: the (copied) embedding cache, whose vectors of ``identity`` are the sources.
        identity: the model identity the vectors are kept under.
        dims: vector width.

    Raises:
        SystemExit: the cache holds no vector of ``identity`` (embed a smaller size first).
    """

    def __init__(self, cache_db: Path, identity: str, dims: int) -> None:
        with sqlite3.connect(cache_db) as conn:
            rows = conn.execute("SELECT vector FROM vectors WHERE identity = ? AND dims = ? LIMIT ?",
                                (identity, dims, POOL)).fetchall()
        if not rows:
            raise SystemExit(f"--vectors derived: the cache {cache_db} has no vectors of {identity}; "
                             "build a smaller size with the model first (e.g. --sizes 100000)")
        self.pool = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), dims)
        self.dims = dims
        self.made = 0

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """``[len(texts), dims] float32`` unit vectors, each a function of its text alone."""
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            rng = np.random.default_rng(seed)
            v = self.pool[seed % len(self.pool)] + rng.standard_normal(self.dims).astype(np.float32) * (
                NOISE / np.sqrt(self.dims))
            out[i] = v / np.linalg.norm(v)
        self.made += len(texts)
        return out
