"""Where the memory of an n-engram store goes: RSS after each phase of a reindex, then by mapping.

Builds the same store as :mod:`bench.speed.recall` (conversation turns from the shared data), then
runs the steps of ``Memory.reindex`` one by one and prints the process's RSS (``/proc/self/status``
VmRSS, MiB) and its growth after each: imports, the store written and scanned, the model resolved,
the BM25 leg, the dense leg (embedding cache reads, HNSW graph), the save, the first recalls. At the
end the resident memory is split by mapping from ``/proc/self/smaps`` (anonymous heap against each
shared library and memory-mapped file) and, with ``--trace``, the Python heap by source file
(tracemalloc; slows the run ~2x and adds its own bookkeeping, so RSS figures of a traced run are
not the ones to report).

    python -m bench.speed.memory --n 20000 --cache-dir DIR [--trace] [--out bench/results/memory.json]
        [--keep-home DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.speed.recall import MODEL, corpus, learn_turns, sentence_pool  # noqa: E402


def rss_mib(field: str = "VmRSS") -> float:
    """Current resident set size of this process (``VmRSS``), or its peak so far (``VmHWM``), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def smaps_by_mapping(top: int = 12) -> list[tuple[str, float]]:
    """Resident MiB per mapping name (``[anon]`` for the heap and anonymous maps), largest first."""
    sizes: dict[str, float] = defaultdict(float)
    name = "[anon]"
    for line in Path("/proc/self/smaps").read_text().splitlines():
        parts = line.split()
        if parts and "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
            name = parts[5] if len(parts) >= 6 else "[anon]"
            name = Path(name).name if name.startswith("/") else name
        elif parts and parts[0] == "Rss:":
            sizes[name] += int(parts[1]) / 1024
    return sorted(((k, round(v, 1)) for k, v in sizes.items()), key=lambda kv: -kv[1])[:top]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--trace", action="store_true", help="also the Python heap by file (tracemalloc)")
    ap.add_argument("--out", default="")
    ap.add_argument("--keep-home", default="", help="build the store in this (new) folder and keep it "
                    "(e.g. for bench/speed/forget.py); default a temporary folder")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.trace:
        import tracemalloc

        tracemalloc.start()
    phases: list[dict] = []
    last = [rss_mib(), time.perf_counter()]

    def mark(phase: str) -> None:
        now, hwm, t = rss_mib(), rss_mib("VmHWM"), time.perf_counter()
        phases.append({"phase": phase, "rss_mib": round(now, 1), "delta_mib": round(now - last[0], 1),
                       "peak_so_far_mib": round(hwm, 1), "s": round(t - last[1], 2)})
        print(f"{phase:<34} RSS {now:7.1f} MiB  {now - last[0]:+7.1f}  peak so far {hwm:7.1f}  {t - last[1]:7.2f} s",
              flush=True)
        last[:] = [now, t]

    mark("python + bench imports")
    from plur.index.indexes import IndexSet
    from plur.memory import Memory

    mark("import plur")
    pool, _ = sentence_pool()
    texts = corpus(args.n, pool)
    del pool
    mark("corpus texts")
    with (contextlib.nullcontext(args.keep_home) if args.keep_home else tempfile.TemporaryDirectory()) as home:
        mem = Memory(home, model=MODEL, fsync=False, cache_dir=args.cache_dir)
        learn_turns(mem, texts)
        del texts
        mark("store written (learn_many)")
        res = mem.model_resolution()
        mark(f"model resolved ({type(res.embedder.inner).__name__})")
        mem._scan(force=True)
        engrams = mem._by_id()
        mark("store scanned")
        idx = IndexSet(mem.home / "index", mem.settings, res.embedder)
        idx.sync(engrams, progress=False)
        mark("BM25 leg + context (sync)")
        idx.flush_dense(progress=False)
        mark(f"dense leg ({idx.dense.vector_count} vectors)")
        idx.dirty = True
        idx.save()
        mark("saved")
        mem._indexes = idx
        for q in ("what did she say about the trip", "when is the concert", "favourite food"):
            mem.recall(q, k=10, record=False)
        mark("three hybrid recalls")
        mapping = smaps_by_mapping()
        heap: list[tuple[str, float]] = []
        if args.trace:
            import tracemalloc

            stats = tracemalloc.take_snapshot().statistics("filename")
            heap = [(s.traceback[0].filename.split("site-packages/")[-1].split("wt-30/")[-1],
                     round(s.size / 2**20, 1)) for s in stats[:15]]
        mem.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.1f} MiB\nresident by mapping (MiB): {mapping}")
    if heap:
        print("python heap by file (MiB):", heap)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"n": args.n, "phases": phases, "peak_rss_mib": round(peak, 1),
                                              "by_mapping": mapping, "heap_by_file": heap}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
