"""Benchmark of the prompt section: ``MemorySection.text()`` latency while the recall worker is busy,
and memory use over a long session.

Run::

    python -m bench.doors.section                 # BM25 only, a temporary home
    python -m bench.doors.section --calls 100000 --engrams 2000 --model sentence-transformers/all-MiniLM-L6-v2

Prints a table and writes ``bench/results/section.json``. Scenarios:

1. ``busy``: one thread submits recalls for 8 other agents back to back, so the worker is never
   idle; the main thread times ``--calls`` calls of ``text()`` for an agent with a cached block.
2. ``slow``: the recall is slowed to ``--slow-s`` seconds (a Memory subclass that sleeps before the
   real recall); ``text()`` is timed while that recall is in flight and must return the previous block.
3. ``turns``: ``--turns`` turns of submit -> recall -> text(); block size per turn and Python heap
   (tracemalloc) and RSS growth from turn 10 to the last.

The GIL is shared with the worker thread, so rare calls that straddle a thread switch take up to
the interpreter's switch interval (5 ms); they show in ``max``, not in p99.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

from plur.memory import Memory
from plur.prompt.block import estimate_tokens
from plur.prompt.section import MemorySection
from plur.prompt.worker import RecallWorker

P99_LIMIT_US = 50.0
WORDS = ("deploy database release budget meeting editor coffee holiday invoice laptop garden python "
         "rust kubernetes backup calendar password printer router travel").split()


def percentile(sorted_ns: list[int], q: float) -> float:
    """Nearest-rank percentile of ascending nanosecond samples, in microseconds."""
    idx = min(len(sorted_ns) - 1, max(0, int(round(q / 100.0 * (len(sorted_ns) - 1)))))
    return sorted_ns[idx] / 1000.0


def summarise(samples: list[int]) -> dict[str, float]:
    s = sorted(samples)
    return {"calls": len(s), "p50_us": percentile(s, 50), "p99_us": percentile(s, 99),
            "p999_us": percentile(s, 99.9), "max_us": s[-1] / 1000.0, "mean_us": statistics.fmean(s) / 1000.0}


def time_calls(fn: Any, arg: Any, n: int, *, pause_every: int = 100, pause_s: float = 0.0005,
               until: float | None = None) -> tuple[list[int], Any]:
    """Time ``n`` calls of ``fn(arg)`` one by one (ns), pausing ``pause_s`` (untimed) every
    ``pause_every`` calls so the calls spread over many recalls; stop early at ``until`` (monotonic)."""
    clock = time.perf_counter_ns
    out = []
    last = None
    for i in range(n):
        t0 = clock()
        last = fn(arg)
        out.append(clock() - t0)
        if i % pause_every == pause_every - 1:
            time.sleep(pause_s)
            if until is not None and time.monotonic() > until:
                break
    return out, last


class SlowMemory(Memory):
    """The real Memory with its recall delayed by ``delay_s`` seconds."""

    delay_s = 0.0

    def recall(self, query: str, k: int = 10, **kw: Any):  # type: ignore[override]
        time.sleep(self.delay_s)
        return super().recall(query, k, **kw)


def fill(mem: Memory, n: int, rng: random.Random) -> None:
    scopes = ["global", "project:a", "project:b"]
    mem.learn_many([{"statement": " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40))) + f" (fact {i}).",
                     "scope": scopes[i % 3], "pinned": i % 97 == 0} for i in range(n)])


def bench_busy(mem: Memory, calls: int, rng: random.Random) -> dict[str, Any]:
    with RecallWorker(mem) as worker:
        section = MemorySection(worker)
        worker.warm("reader", "deploy database backup", scope="project:a", timeout_s=600)
        stop = threading.Event()
        submitted = 0

        def churn() -> None:
            nonlocal submitted
            while not stop.is_set():
                worker.submit(f"busy-{submitted % 8}", " ".join(rng.sample(WORDS, 3)), "project:b")
                submitted += 1
                time.sleep(0.0005)

        t = threading.Thread(target=churn, daemon=True)
        t.start()
        time.sleep(0.2)
        before = worker.stats()["recalls"]
        t0 = time.monotonic()
        samples, last = time_calls(section.text, "reader", calls)
        window = time.monotonic() - t0
        recalls_during = worker.stats()["recalls"] - before
        stop.set()
        t.join()
        assert last and last.startswith("<plur-memory>")
    return summarise(samples) | {"recalls_during": recalls_during, "submitted": submitted, "window_s": window}


def bench_slow(mem: SlowMemory, slow_s: float, calls: int) -> dict[str, Any]:
    with RecallWorker(mem, timeout_s=slow_s * 3) as worker:
        section = MemorySection(worker)
        previous = worker.warm("reader", "coffee garden", scope="project:a", timeout_s=600)
        mem.delay_s = slow_s
        t0 = time.monotonic()
        worker.submit("reader", "password router travel", scope="project:a")
        time.sleep(0.01)
        samples, last = time_calls(section.text, "reader", calls, pause_s=0.002, until=t0 + 0.9 * slow_s)
        during = time.monotonic() - t0
        same = last == previous and worker.stats()["recalls"] == 2  # the slow recall is still running
        worker.wait_idle(slow_s * 5)
        mem.delay_s = 0.0
    return summarise(samples) | {"window_s": during, "returned_previous_block": same, "slow_recall_s": slow_s}


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # pragma: no cover - not Linux
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def bench_turns(home: Path, model: str, n_engrams: int, turns: int, budget: int, rng: random.Random
                ) -> dict[str, Any]:
    """A fresh Memory, traced by tracemalloc from before it exists (so objects it replaces, e.g. the
    store's manifest on a periodic re-scan, are not mistaken for growth)."""
    tracemalloc.start()
    mem = Memory(home, model=model, fsync=False)
    fill(mem, n_engrams, rng)
    heap: dict[int, int] = {}
    rss: dict[int, int] = {}
    tokens = []
    with RecallWorker(mem, budget_tokens=budget) as worker:
        section = MemorySection(worker)
        for turn in range(1, turns + 1):
            worker.submit("session", " ".join(rng.sample(WORDS, 4)), "project:a")
            worker.wait_idle(600)
            text = section.text("session")
            tokens.append(estimate_tokens(text))
            if turn in (10, turns // 2, turns):  # growth 10 -> end includes warm-up caches; see mid -> end
                worker.wait_idle(600)
                heap[turn] = tracemalloc.get_traced_memory()[0]
                rss[turn] = rss_bytes()
    mem.close()
    tracemalloc.stop()
    return {"turns": turns, "budget_tokens": budget, "block_tokens_min": min(tokens),
            "block_tokens_max": max(tokens), "heap_bytes": heap, "rss_bytes": rss,
            "heap_growth_10_to_end_bytes": heap[turns] - heap[10],
            "heap_growth_mid_to_end_bytes": heap[turns] - heap[turns // 2],
            "rss_growth_10_to_end_bytes": rss[turns] - rss[10]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=100_000, help="text() calls per scenario")
    ap.add_argument("--engrams", type=int, default=2000)
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--slow-s", type=float, default=2.0, help="slowed recall, seconds")
    ap.add_argument("--budget", type=int, default=2000, help="budget_tokens of the block")
    ap.add_argument("--model", default="none", help="embedding model ('none' = BM25 only)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results" / "section.json")
    args = ap.parse_args(argv)
    rng = random.Random(0)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="plur-bench-section-") as home:
        mem = SlowMemory(home, model=args.model, fsync=False)
        try:
            fill(mem, args.engrams, rng)
            busy = bench_busy(mem, args.calls, rng)
            slow = bench_slow(mem, args.slow_s, args.calls)
        finally:
            mem.close()
        turns = bench_turns(Path(home) / "turns", args.model, args.engrams, args.turns, args.budget, rng)
    result = {"busy": busy, "slow": slow, "turns": turns,
              "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                          "cpus": os.cpu_count(), "switch_interval_s": sys.getswitchinterval()},
              "args": {k: str(v) for k, v in vars(args).items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))

    print(f"text() latency, {args.engrams} engrams, model={args.model}")
    print(f"{'scenario':<10}{'calls':>9}{'p50 us':>9}{'p99 us':>9}{'p99.9 us':>10}{'max us':>10}")
    for name, r in (("busy", busy), ("slow", slow)):
        print(f"{name:<10}{r['calls']:>9}{r['p50_us']:>9.2f}{r['p99_us']:>9.2f}{r['p999_us']:>10.2f}{r['max_us']:>10.1f}")
    print(f"busy: {busy['recalls_during']} recalls ran during the {busy['window_s']:.1f} s of timed calls")
    print(f"slow: {slow['slow_recall_s']} s recall in flight; text() returned the previous block: "
          f"{slow['returned_previous_block']}")
    print(f"turns: {turns['turns']} turns, block {turns['block_tokens_min']}-{turns['block_tokens_max']} est. tokens "
          f"(budget {turns['budget_tokens']}); heap growth turn 10->{turns['turns']}: "
          f"{turns['heap_growth_10_to_end_bytes'] / 1024:.1f} KiB ({turns['turns'] // 2}->{turns['turns']}: "
          f"{turns['heap_growth_mid_to_end_bytes'] / 1024:.1f} KiB); RSS growth: "
          f"{turns['rss_growth_10_to_end_bytes'] / 1024:.1f} KiB")
    ok = busy["p99_us"] <= P99_LIMIT_US and slow["p99_us"] <= P99_LIMIT_US and slow["returned_previous_block"]
    print(f"p99 <= {P99_LIMIT_US:.0f} us in both scenarios: {'yes' if ok else 'NO'}   -> {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
