"""Benchmark plur's dense index: build time and search latency (p50/p99), exact vs HNSW.

Vectors: seeded random 384-d unit vectors around 64 cluster centres in a 24-d latent space
(the same generator as tests/test_dense.py). Queries: 200 points near indexed vectors.
Each size is measured on the exact path (numpy matmul) and the HNSW path (usearch int8 graph, candidates re-scored exactly, M=16,
ef_construction=128, ef_search=128), plus a filtered search (``allowed`` = 20% of the ids) and
HNSW Recall@10 against exact.

Run:  python -m bench.speed.dense [--sizes 1000 10000 100000] [--threads N] [--out results.json]
Timings are wall-clock on this machine; search is single-threaded; ms unless noted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from plur.index.dense import DenseIndex  # noqa: E402


def clustered(n: int, seed: int = 42, dims: int = 384, clusters: int = 64, latent: int = 24) -> np.ndarray:
    """``[n, dims] float32`` unit vectors in ``clusters`` seeded clusters (a low-rank latent lifted to ``dims``)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, latent))
    lift = rng.normal(size=(latent, dims)) / np.sqrt(latent)
    z = centres[rng.integers(0, clusters, n)] + 0.5 * rng.normal(size=(n, latent))
    x = (z @ lift + 0.15 * rng.normal(size=(n, dims))).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def latencies(index: DenseIndex, queries: np.ndarray, k: int, allowed=None) -> tuple[list[float], list]:
    out, results = [], []
    for q in queries:
        t = time.perf_counter()
        results.append(index.search(q, k, allowed=allowed))
        out.append((time.perf_counter() - t) * 1000)
    return out, results


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(values, p))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="HNSW build threads")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    rows = []
    print(f"{'n':>7} {'path':>6} {'build s':>8} {'p50 ms':>8} {'p99 ms':>8} {'filt p50':>9} {'filt p99':>9} {'R@10':>6}")
    for n in args.sizes:
        x = clustered(n)
        ids = [f"e{i}" for i in range(n)]
        rng = np.random.default_rng(1)
        queries = x[rng.integers(0, n, args.queries)] + 0.1 * rng.normal(size=(args.queries, x.shape[1])).astype(np.float32)
        allowed = set(rng.choice(ids, size=max(1, n // 5), replace=False).tolist())
        truth = None
        for path, threshold in (("exact", 10**12), ("hnsw", 0)):
            index = DenseIndex(x.shape[1], exact_threshold=threshold, num_threads=args.threads)
            t = time.perf_counter()
            index.add(ids, x)
            index.build() if path == "hnsw" else None
            build_s = time.perf_counter() - t
            index.search(queries[0], args.k)  # warm
            lat, res = latencies(index, queries, args.k)
            flat, _ = latencies(index, queries, args.k, allowed)
            if truth is None:
                truth = res
                recall = 1.0
            else:
                recall = float(np.mean([len({i for i, _ in a} & {i for i, _ in b}) / args.k for a, b in zip(res, truth)]))
            row = {"n": n, "path": path, "build_s": round(build_s, 3), "p50_ms": round(pct(lat, 50), 3),
                   "p99_ms": round(pct(lat, 99), 3), "filtered_p50_ms": round(pct(flat, 50), 3),
                   "filtered_p99_ms": round(pct(flat, 99), 3), "recall_at_10": round(recall, 4)}
            rows.append(row)
            print(f"{n:>7} {path:>6} {build_s:>8.2f} {row['p50_ms']:>8.3f} {row['p99_ms']:>8.3f} "
                  f"{row['filtered_p50_ms']:>9.3f} {row['filtered_p99_ms']:>9.3f} {recall:>6.3f}")
    meta = {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "build_threads": args.threads, "numpy": np.__version__, "k": args.k, "queries": args.queries}
    print(json.dumps(meta))
    if args.out:
        args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
