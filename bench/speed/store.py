"""Benchmark the engram store: write throughput and cold ``plur list`` time.

* **learn throughput** (engrams/s): ``Memory.learn`` one statement at a time (one lock,
  one atomic file write each; no index is open, as in ``plur learn``), with ``fsync`` on
  and off, plus ``Memory.learn_many`` (one lock per batch) with fsync off.
* **cold list** (s): a fresh ``python -m plur list --limit 20`` process on a store of
  ``--size`` engrams (default 10,000), with the store manifest present (steady state:
  files older than the racy window) and absent (every YAML file parsed). Wall clock of
  the whole process, interpreter start-up included; median of ``--repeat`` runs.

Statements: sentences from the LongMemEval-S sample in ``../shared/data`` when present
(4+ words), else synthetic ones; each made unique with a counter.

Run:  python -m bench.speed.store [--size 10000] [--fsync-n 300] [--repeat 3] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from plur.memory import Memory  # noqa: E402
from plur.store.store import RACY_WINDOW_NS  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "longmemeval" / "MuhammadNoor7__longmemeval_s__grouped_3items.json"


def statements(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct, realistic statements."""
    pool: list[str] = []
    if DATA.is_file():
        for item in json.loads(DATA.read_text(encoding="utf-8")):
            for session in item["haystack_sessions"]:
                for turn in session:
                    for s in re.split(r"(?<=[.!?])\s+|\n+", turn["content"]):
                        if 20 <= len(s.strip()) <= 300 and len(s.split()) >= 4:
                            pool.append(s.strip())
    if not pool:
        pool = [f"The user mentioned item {i} while talking about their weekend plans." for i in range(1000)]
    rng = random.Random(seed)
    return [f"{rng.choice(pool)} (#{i})" for i in range(n)]


def learn_rate(home: Path, texts: list[str], fsync: bool, batch: bool) -> float:
    """Engrams per second written through Memory.learn / learn_many."""
    with Memory(home, model="none", fsync=fsync) as mem:
        t0 = time.perf_counter()
        if batch:
            for i in range(0, len(texts), 500):
                mem.learn_many({"statement": s} for s in texts[i:i + 500])
        else:
            for s in texts:
                mem.learn(s)
        dt = time.perf_counter() - t0
        mem.store.close()
    return len(texts) / dt


def cold_list(home: Path, repeat: int, manifest: bool) -> list[float]:
    """Seconds for a fresh `python -m plur list --limit 20` process, ``repeat`` times."""
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none"}
    mpath = home / "index" / "manifest-store.json"
    out = []
    for _ in range(repeat):
        if not manifest:
            mpath.unlink(missing_ok=True)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "plur", "list", "--limit", "20"], env=env, cwd=ROOT,
                           capture_output=True, text=True)
        out.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise SystemExit(f"plur list failed: {r.stderr}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10_000, help="engrams in the store for the cold-list test")
    ap.add_argument("--fsync-n", type=int, default=300, help="engrams learned with fsync on")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)

    texts = statements(args.size + args.fsync_n + 2000)
    rows: list[tuple[str, str]] = []
    results: dict = {"machine": {"python": platform.python_version(), "platform": platform.platform(),
                                 "cpus": os.cpu_count()}, "size": args.size}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        r_on = learn_rate(tmp_path / "fsync-on", texts[: args.fsync_n], fsync=True, batch=False)
        r_batch = learn_rate(tmp_path / "batch", texts[args.fsync_n: args.fsync_n + 2000], fsync=False, batch=True)
        home = tmp_path / "big"
        r_off = learn_rate(home, texts[args.fsync_n + 2000:], fsync=False, batch=False)
        results["learn_per_s"] = {"fsync_on": r_on, "fsync_off": r_off, "learn_many_fsync_off": r_batch}
        rows += [(f"learn, fsync on  ({args.fsync_n} engrams)", f"{r_on:,.0f} engrams/s"),
                 (f"learn, fsync off ({args.size:,} engrams)", f"{r_off:,.0f} engrams/s"),
                 ("learn_many, fsync off (2,000 in batches of 500)", f"{r_batch:,.0f} engrams/s")]

        time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)  # let every file leave the racy window
        cold_list(home, 1, manifest=True)      # settles the racy entries and saves the manifest
        with_m = cold_list(home, args.repeat, manifest=True)
        without = cold_list(home, args.repeat, manifest=False)
        baseline = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import plur.cli"], cwd=ROOT, check=True)
            baseline.append(time.perf_counter() - t0)
        results["cold_list_s"] = {"manifest": with_m, "no_manifest": without, "import_only": baseline}
        rows += [(f"cold `plur list`, {args.size:,} engrams, manifest", f"{statistics.median(with_m):.2f} s"),
                 (f"cold `plur list`, {args.size:,} engrams, no manifest", f"{statistics.median(without):.2f} s"),
                 ("  (python start-up + import plur.cli alone)", f"{statistics.median(baseline):.2f} s")]

    width = max(len(a) for a, _ in rows)
    print(f"{'measure':<{width}}  value")
    for a, b in rows:
        print(f"{a:<{width}}  {b}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
