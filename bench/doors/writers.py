"""Benchmark: hybrid recall latency while other processes keep learning (the "recall under writers" stall).

Run::

    python -m bench.doors.writers                                  # 10k store, 4 writers x 10 engrams/s, 60 s
    python -m bench.doors.writers --engrams 2000 --seconds 20      # quicker

Builds a store of ``--engrams`` engrams in a temporary home and indexes it (the base texts get random
unit vectors through the embedding cache unless ``--real-base``: latency does not depend on what the
vectors say, and embedding 10k texts takes ~25 min on 2 shared CPU cores), then starts ``--writers`` processes that each learn ``--rate`` new
engrams a second through :meth:`plur.memory.Memory.learn` (fsync on, the default), and times
hybrid recalls in this warm process for ``--seconds`` (after ``--warmup`` untimed ones).
Prints p50/p90/p99/max in ms, the writers' achieved rate and the dense backlog, the CPU seconds of the timed
window beside its wall (this process, the recall thread, the writers: on a loaded machine a recall's wall far
above its CPU waited for a core, not for plur), and writes
``bench/results/writers.json``. Target (issue 27; issue 14 set 250): p99 <= 150 ms warm with 4 writers x 10/s on 10k.
Timing figures are upper bounds on a shared machine; run under ``flock /tmp/plur-timing.lock``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import random
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "results"
WORDS = ("deploy database release budget meeting editor coffee holiday invoice laptop garden python "
         "rust kubernetes backup calendar password printer router travel dog cat river mountain "
         "piano violin doctor dentist school office train flight hotel museum recipe dinner").split()


def sentence(rng: random.Random, n: int = 12) -> str:
    """A random sentence of ``n`` words from :data:`WORDS` plus a number (so texts are distinct)."""
    return " ".join(rng.choice(WORDS) for _ in range(n)) + f" #{rng.randrange(1 << 40)}"


def _writer(home: str, model: str, rate: float, stop_at: float, seed: int, out: Any) -> None:
    from plur.memory import Memory

    rng = random.Random(seed)
    n = 0
    with Memory(home, model=model) as mem:
        start = time.monotonic()
        while time.time() < stop_at:
            mem.learn(sentence(rng), scope="global")
            n += 1
            delay = start + n / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        out.put(n)


def percentile(sorted_ms: list[float], q: float) -> float:
    """Nearest-rank percentile of ascending samples."""
    idx = min(len(sorted_ms) - 1, max(0, int(round(q / 100.0 * (len(sorted_ms) - 1)))))
    return sorted_ms[idx]


def _children_cpu_s() -> float:
    """User + system CPU seconds of this process's waited-for children (the writers), 0 where unsupported."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engrams", type=int, default=10000)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--rate", type=float, default=10.0, help="engrams per second per writer")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    ap.add_argument("--home", default=None, help="reuse this home (built on first use)")
    ap.add_argument("--breakdown", action="store_true",
                    help="time each recall's stages (bench/doors/breakdown.py): lock waits, refresh, catch-up, query "
                         "embedding, legs, second stage, stats, thread CPU; prints the mean of all and of the slowest 1%%")
    ap.add_argument("--real-base", action="store_true",
                    help="embed the base store with the model (slow on CPU); default: random unit vectors "
                         "put in the embedding cache for the base texts (latency does not depend on them)")
    ap.add_argument("--rows", default=None, help="with --breakdown: write every recall's stages (JSON) to this file")
    args = ap.parse_args(argv)

    from plur.index.catchup import queued
    from plur.memory import Memory

    home = Path(args.home or tempfile.mkdtemp(prefix="plur-bench-writers-"))
    rng = random.Random(7)
    t0 = time.perf_counter()
    with Memory(home, model=args.model, fsync=False) as mem:
        have = mem.store.count()
        start_count = max(have, args.engrams)
        if have < args.engrams:
            mem.learn_many({"statement": sentence(rng)} for _ in range(args.engrams - have))
        emb = mem.model_resolution().embedder
        if not args.real_base and emb is not None:
            import numpy as np

            from plur.embed.cache import text_key

            vrng = np.random.default_rng(7)
            texts = [e.statement for e in mem.store.all()]
            vecs = vrng.standard_normal((len(texts), emb.dims)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            emb.cache.put_many(emb.identity, zip([text_key(t) for t in texts], vecs))
        mem.reindex(progress=True)
    build_s = time.perf_counter() - t0
    queries = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(200)]
    mem = Memory(home, model=args.model)
    for q in queries[: args.warmup]:
        mem.recall(q, k=10, mode="hybrid", record=False)
    bd = None
    if args.breakdown:
        from bench.doors.breakdown import instrument, summarise

        bd = instrument(mem)
    stages: list[dict[str, float]] = []
    children_cpu0 = _children_cpu_s()
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    stop_at = time.time() + args.seconds + 3.0
    run_seed = time.time_ns()  # fresh sentences every run: a reused home must see real new writes, not duplicates
    procs = [ctx.Process(target=_writer, args=(str(home), args.model, args.rate, stop_at, run_seed + i, out))
             for i in range(args.writers)]
    for p in procs:
        p.start()
    time.sleep(3.0)  # writers up and learning
    lat: list[float] = []
    backlog: list[int] = []
    load_start = os.getloadavg()[0]
    cpu_process0, wall0 = time.process_time(), time.perf_counter()
    recall_cpu_s = 0.0
    end = time.monotonic() + args.seconds
    i = 0
    while time.monotonic() < end:
        q = queries[i % len(queries)]
        i += 1
        if bd is not None:
            bd.start()
        c = time.thread_time()
        s = time.perf_counter()
        mem.recall(q, k=10, mode="hybrid")
        lat.append((time.perf_counter() - s) * 1000.0)
        recall_cpu_s += time.thread_time() - c
        if bd is not None:
            stages.append(bd.take())
        backlog.append(queued(mem._indexes))
    timed_wall_s = time.perf_counter() - wall0
    process_cpu_s = time.process_time() - cpu_process0
    learned = sum(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    writers_cpu_s = _children_cpu_s() - children_cpu0
    mem.store.refresh()
    total = mem.store.count()
    mem.close()
    lat.sort()
    row = {
        "engrams_start": start_count, "engrams_end": total, "writers": args.writers,
        "rate_per_writer": args.rate, "learned": learned,
        "achieved_rate_total": round(learned / (args.seconds + 3.0), 1),
        "recalls": len(lat), "p50_ms": round(percentile(lat, 50), 1), "p90_ms": round(percentile(lat, 90), 1),
        "p99_ms": round(percentile(lat, 99), 1), "max_ms": round(lat[-1], 1),
        "dense_backlog_max": max(backlog, default=0), "dense_backlog_end": backlog[-1] if backlog else 0,
        "build_s": round(build_s, 1), "model": args.model, "real_base_vectors": bool(args.real_base), "cpus": os.cpu_count(),
        "python": platform.python_version(), "target_p99_ms": 150.0,
        "load_avg_1m_start": round(load_start, 2), "load_avg_1m_end": round(os.getloadavg()[0], 2),
        "timed_wall_s": round(timed_wall_s, 2), "process_cpu_s": round(process_cpu_s, 2),
        "recall_thread_cpu_s": round(recall_cpu_s, 2), "recall_wall_s": round(sum(lat) / 1000.0, 2),
        "writers_cpu_s": round(writers_cpu_s, 2),
    }
    print(f"{'recalls':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8} {'learned':>8} {'backlog':>8}")
    print(f"{row['recalls']:>8} {row['p50_ms']:>8} {row['p90_ms']:>8} {row['p99_ms']:>8} {row['max_ms']:>8} "
          f"{learned:>8} {row['dense_backlog_max']:>8}")
    print(f"wall {row['timed_wall_s']} s (recalls {row['recall_wall_s']} s); CPU s: process {row['process_cpu_s']}, "
          f"recall thread {row['recall_thread_cpu_s']}, writers {row['writers_cpu_s']}; "
          f"load {row['load_avg_1m_start']} -> {row['load_avg_1m_end']}")
    if bd is not None:
        row["breakdown"] = summarise(stages)
        if args.rows:
            Path(args.rows).write_text(json.dumps(stages) + "\n", encoding="utf-8")
        for name in ("all_mean_ms", "slowest_mean_ms"):
            parts = row["breakdown"][name]
            print(f"{name:<16}" + "  ".join(f"{k} {v}" for k, v in parts.items() if v >= 0.05))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "writers.json").write_text(json.dumps(row, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
