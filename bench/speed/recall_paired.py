"""Recall latency of two store sizes measured side by side: the ratio of issue 30 without the drift between runs.

``bench/speed/recall.py`` runs each size in its own process, minutes apart. On a shared VM the query embedding
(~6-9 ms of a ~10 ms recall) drifts by more between those minutes than the sizes differ: four 300-query runs on one
quiet day gave 100k/10k hybrid p50 ratios of 1.34, 1.59, 0.91 and 0.92. Here both stores (the same corpus and
conversation layout as ``bench.speed.recall``, embeddings from ``--cache-dir``) are built in one process and every query
is asked of both, in alternating order, so a slow moment hits both sizes alike. Reported per mode: each size's p50
and p99, the ratio of the p50s, and the median of the per-query ratios.

Peak RSS here is of both stores together; take RSS figures from ``bench.speed.recall``.

    python -m bench.speed.recall_paired --sizes 10000,100000 --queries 300 --cache-dir DIR [--out f.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.speed.recall import MODEL, corpus, learn_turns, pct, sentence_pool  # noqa: E402


def build(home: str, n: int, pool: list[str], cache_dir: str):
    """A ``Memory`` on ``home`` holding the first ``n`` engrams of the bench.speed.recall corpus, indexed."""
    from plur.memory import Memory

    mem = Memory(home, model=MODEL, fsync=False, cache_dir=cache_dir)
    learn_turns(mem, corpus(n, pool))
    mem.reindex(progress=False)
    return mem


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="two store sizes, small first")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    small, large = (int(s) for s in args.sizes.split(","))
    pool, questions = sentence_pool()
    rng = random.Random(11)
    queries = [questions[rng.randrange(len(questions))] for _ in range(args.queries)]
    result: dict = {"sizes": [small, large], "queries": args.queries}
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        mems = {small: build(a, small, pool, args.cache_dir), large: build(b, large, pool, args.cache_dir)}
        del pool
        for mode in ("bm25", "dense", "hybrid"):
            lat: dict[int, list[float]] = {small: [], large: []}
            for q in queries[:10]:  # warm-up
                for mem in mems.values():
                    mem.recall(q, k=10, mode=mode, record=False)
            for j, q in enumerate(queries):
                for n in ((small, large) if j % 2 == 0 else (large, small)):
                    mem = mems[n]
                    emb = mem.model_resolution().embedder
                    if hasattr(emb, "_queries"):
                        emb._queries.clear()  # every query pays its embedding, as a new message would
                    t0 = time.perf_counter()
                    mem.recall(q, k=10, mode=mode)
                    lat[n].append((time.perf_counter() - t0) * 1000)
            p50 = {n: pct(v, 50) for n, v in lat.items()}
            per_query = statistics.median(x / y for x, y in zip(lat[large], lat[small]))
            result[mode] = {str(n): {"p50_ms": round(p50[n], 2), "p99_ms": round(pct(lat[n], 99), 2)} for n in lat}
            result[mode]["p50_ratio"] = round(p50[large] / p50[small], 3)
            result[mode]["median_per_query_ratio"] = round(per_query, 3)
            print(f"{mode:>6}: {small} p50 {p50[small]:.2f} ms / {large} p50 {p50[large]:.2f} ms = "
                  f"{p50[large] / p50[small]:.2f}x (median per-query ratio {per_query:.2f}x); p99 "
                  f"{pct(lat[small], 99):.1f} / {pct(lat[large], 99):.1f} ms", flush=True)
        for mem in mems.values():
            mem.close()
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
