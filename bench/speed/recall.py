"""Recall latency, index build time and peak RSS at 1k / 10k / 100k engrams (issue 3's figures).

Corpus: real conversation text, not lorem ipsum: the sentences of every turn in the LongMemEval
haystacks and the LoCoMo dialogs under ``../shared/data`` (deduplicated). Past the pool's size,
engram i joins two pool sentences chosen by a seeded RNG, so every engram is distinct.
Queries: the LongMemEval questions plus LoCoMo questions (real questions about such text).

Engrams are learned as conversation turns (``source.kind = "conversation"``, 20 turns per session),
so the BM25 documents carry neighbouring-turn context as a chat import's would; ``--plain``
learns bare statements (the layout before conversation context).

Each store size runs in its own subprocess, so peak RSS (``ru_maxrss``) belongs to that size alone.
Latency covers the whole ``Memory.recall`` call as users get it: query tokenising and embedding
(query-embedding cache off), both legs, fusion and the stats.db write.

    python -m bench.speed.recall [--sizes 1000,10000,100000] [--queries 300] [--out bench/results/recall.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("PLUR_SHARED_DATA") or REPO.parent / "shared" / "data")  # as the tests read it
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_SPLIT = re.compile(r"(?<=[.!?])\s+")


def sentence_pool() -> tuple[list[str], list[str]]:
    """(distinct sentences of 20..400 chars, questions) from the shared LongMemEval and LoCoMo files."""
    seen: set[str] = set()
    pool: list[str] = []
    questions: list[str] = []

    def take(text: str) -> None:
        for s in _SPLIT.split(text.replace("\n", " ")):
            s = s.strip()
            if 20 <= len(s) <= 400 and s not in seen:
                seen.add(s)
                pool.append(s)

    for path in sorted((SHARED / "longmemeval").glob("*.json")):
        for item in json.loads(path.read_text(encoding="utf-8")):
            qs = item.get("questions") or [item.get("question")]
            questions.extend(q for q in qs[:1] if q)
            for session in item["haystack_sessions"]:
                for turn in session:
                    take(turn["content"])
    locomo = SHARED / "locomo" / "locomo10.json"
    if locomo.exists():
        for conv in json.loads(locomo.read_text(encoding="utf-8")):
            for key, turns in conv["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    for t in turns:
                        take(f"{t['speaker']}: {t['text']}")
            questions.extend(q["question"] for q in conv["qa"])
    return pool, questions


def corpus(n: int, pool: list[str]) -> list[str]:
    """``n`` distinct engram statements drawn from the sentence pool (seeded)."""
    if n <= len(pool):
        return pool[:n]
    rng = random.Random(7)
    out = list(pool)
    seen = set(out)
    while len(out) < n:
        s = pool[rng.randrange(len(pool))] + " " + pool[rng.randrange(len(pool))]
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def learn_turns(mem, texts: list[str]) -> None:
    """Learn ``texts`` as conversation turns: 20 per session, one session a day (context and date paths exercised)."""
    day0 = datetime.date(2022, 1, 1)
    mem.learn_many({"statement": t, "created": (day0 + datetime.timedelta(days=i // 20)).isoformat(),
                    "source": {"kind": "conversation", "format": "messages", "session": f"s{i // 20}",
                               "turn": i % 20}} for i, t in enumerate(texts))


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def run_size(n: int, n_queries: int, cache_dir: str, plain: bool = False) -> dict:
    """Build an n-engram store in a temp home, index it, time recalls; runs inside a subprocess."""
    from plur.memory import Memory

    pool, questions = sentence_pool()
    texts = corpus(n, pool)
    rng = random.Random(11)
    queries = [questions[rng.randrange(len(questions))] for _ in range(n_queries)]
    with tempfile.TemporaryDirectory() as home:
        mem = Memory(home, model=MODEL, fsync=False, cache_dir=cache_dir)
        t0 = time.perf_counter()
        if plain:
            mem.learn_many({"statement": t} for t in texts)
        else:
            learn_turns(mem, texts)
        t_store = time.perf_counter() - t0
        del pool, questions, texts  # the bench's own corpus (~30 MiB at 100k): not part of plur's peak RSS
        emb = mem.model_resolution().embedder
        t0 = time.perf_counter()
        out = mem.reindex(progress=False)
        t_index = time.perf_counter() - t0
        result = {"engrams": n, "store_write_s": round(t_store, 2), "index_build_s": round(t_index, 2),
                  "indexed": out, "embedded_now": emb.stats.__dict__ if hasattr(emb, "stats") else None}
        for mode in ("bm25", "dense", "hybrid"):
            for q in queries[:10]:                       # warm-up (first query loads lazily)
                mem.recall(q, k=10, mode=mode, record=False)
            lat = []
            for q in queries:
                if hasattr(emb, "_queries"):
                    emb._queries.clear()          # every query pays its embedding, as a new message would
                t0 = time.perf_counter()
                mem.recall(q, k=10, mode=mode)
                lat.append((time.perf_counter() - t0) * 1000)
            result[mode] = {"p50_ms": round(pct(lat, 50), 2), "p99_ms": round(pct(lat, 99), 2),
                            "mean_ms": round(statistics.fmean(lat), 2)}
        mem.close()
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--cache-dir", default=str(REPO / "bench" / ".cache"))
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "recall.json"))
    ap.add_argument("--plain", action="store_true", help="bare statements, no conversation provenance")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.one:
        print(json.dumps(run_size(args.one, args.queries, args.cache_dir, args.plain)))
        return 0
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        proc = subprocess.run([sys.executable, __file__, "--one", str(n), "--queries", str(args.queries),
                               "--cache-dir", args.cache_dir] + (["--plain"] if args.plain else []),
                              capture_output=True, text=True)
        if proc.returncode:
            print(proc.stderr[-3000:], file=sys.stderr)
            return proc.returncode
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"{n:>7} engrams  index build {r['index_build_s']:>7.2f} s  "
              + "  ".join(f"{m} p50 {r[m]['p50_ms']:.1f} / p99 {r[m]['p99_ms']:.1f} ms" for m in ("bm25", "dense", "hybrid"))
              + f"  peak RSS {r['peak_rss_mib']:.0f} MiB", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
