"""Write ``tests/data/minilm_vectors.npz``: real all-MiniLM-L6-v2 vectors for tests/test_quantised_topk.py.

    python scripts/minilm_vectors.py [--n 4000] [--queries 200] [--cache-dir DIR]

The texts are the first ``--n + --queries`` notes of ``bench.scale.distractors`` (seeded: LongMemEval haystack
sentences, MIT; faker personal facts and rule paraphrases, generated; never LoCoMo): the first ``--n`` are the
corpus, the rest the queries (a note asked as a question finds its neighbourhood, paraphrases included).
Each text's vector comes from the bench's embedding cache when it holds it (``--cache-dir``), else from the
packaged model (ONNX Runtime bundle, float32). Stored as float16 (``corpus [n, 384]``, ``queries [q, 384]``,
re-normalised on load): the test compares two searches over the same vectors, so their precision on disk
does not matter, and float16 halves the file.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sqlite3
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    from bench.scale.distractors import distractors
    from plur.embed.cache import text_key

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", default=str(REPO / "tests" / "data" / "minilm_vectors.npz"))
    args = ap.parse_args(argv)
    shared = Path(os.environ.get("PLUR_SHARED_DATA") or REPO.parent / "shared" / "data")
    texts = [d["statement"] for d in itertools.islice(distractors(args.n + args.queries, shared), args.n + args.queries)]
    identity = "sentence-transformers/all-MiniLM-L6-v2@1110a24:384:mean:norm:256"
    found: dict[bytes, np.ndarray] = {}
    if args.cache_dir:
        conn = sqlite3.connect(f"file:{Path(args.cache_dir) / 'embeddings.sqlite'}?mode=ro", uri=True)
        keys = [text_key(t) for t in texts]
        for c in range(0, len(keys), 500):
            part = keys[c:c + 500]
            rows = conn.execute(f"SELECT text_sha256, vector FROM vectors WHERE identity = ? AND text_sha256 IN "
                                f"({','.join('?' * len(part))})", [identity, *part]).fetchall()
            found.update((bytes(k), np.frombuffer(v, dtype=np.float32)) for k, v in rows)
    missing = [t for t in texts if text_key(t) not in found]
    if missing:
        from plur.config import load_settings
        from plur.embed.resolve import resolve_embedder

        res = resolve_embedder(load_settings(REPO / ".no-home", model="sentence-transformers/all-MiniLM-L6-v2", device="cpu"))
        assert res.embedder is not None and res.embedder.identity == identity, res.reason
        for t, v in zip(missing, res.embedder.embed_documents(missing)):
            found[text_key(t)] = v
    x = np.stack([found[text_key(t)] for t in texts]).astype(np.float16)
    np.savez_compressed(args.out, corpus=x[:args.n], queries=x[args.n:])
    print(f"{args.out}: {args.n} + {args.queries} vectors ({len(texts) - len(missing)} from the cache), "
          f"{Path(args.out).stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
