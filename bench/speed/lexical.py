"""Benchmark plur's BM25 index: build time, search latency (p50/p99), incremental add, save/load.

Corpus: sentences from the LongMemEval-S sample (all turns, both roles, split into
sentences of 4+ words; about 13.5k distinct, mean 16 words). Sizes above the pool
reuse pool sentences with 30% of their words replaced by words drawn from the
pool's unigram distribution, and one in three gets a number appended, so the
vocabulary keeps growing like a real store's (Heaps' law) instead of repeating.

Queries (seeded): ``short`` = the LongMemEval questions plus 3-8 word snippets of
indexed docs; ``long`` = whole user turns (a recall worker queries with the
user's message), cut at 2000 characters.

Run:  python -m bench.speed.lexical [--sizes 1000 10000 100000] [--out results.json]
Timings are wall-clock on this machine, single thread; ms unless noted.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from plur.index.lexical import BM25Index  # noqa: E402
from plur.index.tokenize import Tokenizer  # noqa: E402

from bench.datasets.paths import SHARED_DATA  # noqa: E402

DATA = SHARED_DATA / "longmemeval" / "MuhammadNoor7__longmemeval_s__grouped_3items.json"


def load_pool(path: Path) -> tuple[list[str], list[str], list[str]]:
    """Return (sentences, questions, user turns) from a LongMemEval json file."""
    items = json.loads(path.read_text())
    sentences: set[str] = set()
    questions: list[str] = []
    turns: list[str] = []
    for item in items:
        qs = item.get("questions") or [item.get("question", "")]
        questions.extend(q for q in qs if q)
        for session in item["haystack_sessions"]:
            for turn in session:
                if turn["role"] == "user":
                    turns.append(turn["content"][:2000])
                for s in re.split(r"(?<=[.!?])\s+|\n+", turn["content"]):
                    s = s.strip()
                    if 20 <= len(s) <= 400 and len(s.split()) >= 4:
                        sentences.add(s)
    return sorted(sentences), questions, turns


def make_docs(pool: list[str], n: int, rng: random.Random) -> list[str]:
    """``n`` realistic sentences: the pool first, then perturbed copies (see module docstring)."""
    words = [w for s in pool for w in s.split()]
    docs = list(pool[:n])
    while len(docs) < n:
        ws = rng.choice(pool).split()
        for i in range(len(ws)):
            if rng.random() < 0.3:
                ws[i] = rng.choice(words)
        if rng.random() < 1 / 3:
            ws.append(str(rng.randrange(100_000)))
        docs.append(" ".join(ws))
    rng.shuffle(docs)
    return docs


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def bench_size(n: int, pool: list[str], questions: list[str], turns: list[str], seed: int) -> dict:
    rng = random.Random(seed)
    docs = make_docs(pool, n, rng)
    ids = [f"ENG-2025-01-01-{i:06x}" for i in range(n)]
    tokenizer = Tokenizer()

    t0 = time.perf_counter()
    for d in docs:
        tokenizer(d)
    tokenize_s = time.perf_counter() - t0

    index = BM25Index(tokenizer=tokenizer)
    t0 = time.perf_counter()
    index.add(ids, docs)
    build_s = time.perf_counter() - t0

    snippets = []
    for d in rng.sample(docs, 174):
        ws = d.split()
        start = rng.randrange(max(1, len(ws) - 3))
        snippets.append(" ".join(ws[start : start + rng.randint(3, 8)]))
    short = questions + snippets
    long = rng.sample(turns, min(100, len(turns)))
    allowed = set(rng.sample(ids, n // 10))

    def latencies(queries: list[str], k: int, allowed_ids: set[str] | None = None, reps: int = 1) -> list[float]:
        for q in queries[:10]:
            index.search(q, k, allowed_ids)  # warm caches
        out = []
        for _ in range(reps):
            for q in queries:
                t = time.perf_counter()
                index.search(q, k, allowed_ids)
                out.append((time.perf_counter() - t) * 1e3)
        return out

    rows = {
        "short k=10": latencies(short, 10, reps=3),
        "short k=100": latencies(short, 100, reps=3),
        "long k=100": latencies(long, 100),
        "short k=100, allowed 10%": latencies(short, 100, allowed),
    }

    add_ms = []
    for i in range(200):
        t = time.perf_counter()
        index.add([f"new-{i}"], [rng.choice(pool)])
        add_ms.append((time.perf_counter() - t) * 1e3)
    first_search_after_add = latencies(short[:50], 100)  # pays the O(N) length-norm refresh

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        index.save(Path(tmp) / "bm25")
        save_s = time.perf_counter() - t0
        size_mb = sum(p.stat().st_size for p in (Path(tmp) / "bm25").iterdir()) / 1e6
        t0 = time.perf_counter()
        loaded = BM25Index.load(Path(tmp) / "bm25")
        load_s = time.perf_counter() - t0
        assert loaded is not None and len(loaded) == len(index)

    result = {
        "docs": n, "terms": len(index._postings), "tokenize_s": tokenize_s, "build_s": build_s,
        "save_s": save_s, "load_s": load_s, "index_mb": size_mb,
        "add_one_ms_p50": pct(add_ms, 50), "add_one_ms_p99": pct(add_ms, 99),
        "search_ms": {name: {"n": len(v), "p50": pct(v, 50), "p99": pct(v, 99), "mean": statistics.fmean(v)}
                      for name, v in rows.items()},
        "search_after_add_ms_p50": pct(first_search_after_add, 50),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()

    pool, questions, turns = load_pool(args.data)
    print(f"pool: {len(pool)} sentences, {len(questions)} questions, {len(turns)} user turns; "
          f"python {platform.python_version()}, numpy {np.__version__}, {platform.processor() or platform.machine()}")
    results = []
    for n in args.sizes:
        r = bench_size(n, pool, questions, turns, args.seed)
        results.append(r)
        print(f"\n{n:>7} docs, {r['terms']} terms: tokenize {r['tokenize_s']:.2f} s, build {r['build_s']:.2f} s, "
              f"save {r['save_s']:.2f} s, load {r['load_s']:.2f} s, {r['index_mb']:.1f} MB on disk")
        print(f"        add one doc: p50 {r['add_one_ms_p50']:.3f} ms, p99 {r['add_one_ms_p99']:.3f} ms; "
              f"search right after an add: p50 {r['search_after_add_ms_p50']:.2f} ms")
        for name, s in r["search_ms"].items():
            print(f"        search {name:<26} p50 {s['p50']:6.2f} ms  p99 {s['p99']:6.2f} ms  (n={s['n']})")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"machine": platform.platform(), "results": results}, indent=2))


if __name__ == "__main__":
    main()
