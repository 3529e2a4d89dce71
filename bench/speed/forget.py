"""Benchmark ``plur forget`` on a large home: a fresh process, and through the running service.

``forget`` erases the engram's vectors from the saved dense index. With an HNSW graph (homes above
``exact_threshold`` live vectors) the graph's removed nodes are scrubbed in place (:meth:`plur.index.graph.
Graph.scrub`); before issue 30's change the index was compacted and the graph rebuilt on every forget.

The home is one you built (``python -m bench.speed.memory --n 100000 --cache-dir C --keep-home DIR``, or any home with a
saved graph);
the benchmark forgets ``--n`` of its oldest engrams whose statements are longer than 100 characters (those also
load the model to find their chunk keys, the path a chat-history turn takes), so it changes the home.

* **fresh** (s): ``python -m plur --home DIR forget -y ID`` with no service (``PLUR_AUTOSTART_SERVICE=0``):
  wall clock of the whole process, interpreter start-up included;
* **service** (s): the same command while the home's service runs (started by the benchmark, stopped at the end).

Every forgotten id is then checked: no engram file, no row in the saved dense ``ids.json``.

Run:  python -m bench.speed.forget --home DIR [--n 3] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def plur(home: Path, *args: str, autostart: bool) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PLUR_AUTOSTART_SERVICE": "1" if autostart else "0"}
    return subprocess.run([sys.executable, "-m", "plur", "--home", str(home), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)


def victims(home: Path, n: int) -> list[str]:
    """The ``n`` oldest engram ids (by file name) whose statement is longer than 100 characters."""
    import yaml

    out = []
    for path in sorted((home / "engrams").glob("*.yaml")):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        if len(str(doc.get("statement", ""))) > 100:
            out.append(path.stem)
            if len(out) == n:
                return out
    raise SystemExit(f"{home} has fewer than {n} engrams longer than 100 characters")


def timed_forget(home: Path, engram_id: str, service: bool) -> float:
    t = time.perf_counter()
    r = plur(home, "-v", "forget", "-y", engram_id, autostart=service)
    secs = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"forget {engram_id} failed (exit {r.returncode}): {r.stderr[-2000:]}")
    way = "via the service" if service else "in-process"
    if way not in r.stderr:
        raise SystemExit(f"forget {engram_id} did not run {way}: {r.stderr[-500:]}")
    return secs


def wait_for_service(home: Path) -> None:
    plur(home, "recall", "warm up", autostart=True)  # spawns the service (this call answers by keyword)
    while not (home / "service.json").is_file():   # written once the model is loaded
        time.sleep(0.5)
    r = plur(home, "-v", "recall", "warm up", autostart=True)
    assert "via the service" in r.stderr, r.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    home = args.home.resolve()
    meta = json.loads((home / "index" / "dense" / "meta.json").read_text())
    print(f"home {home}: {meta['n_live_ids']} engrams, {meta['n_rows']} dense rows, graph: {meta['hnsw']}")
    ids = victims(home, 2 * args.n)
    fresh = [timed_forget(home, i, service=False) for i in ids[:args.n]]
    wait_for_service(home)
    try:
        served = [timed_forget(home, i, service=True) for i in ids[args.n:]]
    finally:
        plur(home, "service", "stop", autostart=False)
    saved = set(json.loads((home / "index" / "dense" / "ids.json").read_text()))
    for i in ids:
        assert not (home / "engrams" / f"{i}.yaml").exists() and i not in saved, i
    rows = {"fresh_s": fresh, "service_s": served, "fresh_p50_s": statistics.median(fresh),
            "service_p50_s": statistics.median(served)}
    print(f"forget, fresh process: {', '.join(f'{s:.2f}' for s in fresh)} s (median {rows['fresh_p50_s']:.2f})")
    print(f"forget, via the service: {', '.join(f'{s:.2f}' for s in served)} s (median {rows['service_p50_s']:.2f})")
    if args.out:
        args.out.write_text(json.dumps({"meta": {"machine": platform.platform(), "cpus": os.cpu_count(),
                                                 "engrams": meta["n_live_ids"], "rows": meta["n_rows"]},
                                        "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
