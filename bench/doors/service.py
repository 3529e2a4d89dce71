"""Latency of the local service and the fast CLI at 10k engrams (issue 10's floors), in one run.

Measured, each against ``python -c pass`` timed in the same run (the ratio travels between machines):

* ``cold_cli_service``: a fresh ``plur recall QUERY`` process (hybrid) while ``plur service start`` runs,
  end to end (interpreter start, imports, unix-socket request, output). Floor: p50 <= 150 ms.
* ``cold_cli_pairs``: the issue-49 measure: ``--pairs`` (7) interleaved pairs of ``python -c pass`` and a cold
  ``plur recall``, the median of each and their ratio. Floor: 1.5x.
* ``cold_cli_service_after_pause``: the same, each after ``--pause-s`` seconds with no request, as a
  person or a hook calls it (the server's kept-alive connections and the store's periodic full scan,
  49 ms at 10k engrams every >= 2.5 s, are then in their idle state).
* ``api_recall_http`` / ``api_recall_socket``: ``POST /api/v1/recall`` on one kept-alive connection,
  loopback HTTP or the unix socket, warm service, query embedding not cached. Floor: p50 <= 15 ms (HTTP).
* ``cold_cli_bm25``: a fresh ``plur recall --mode bm25 QUERY`` process with no service (BM25 index
  loaded from disk; no torch). Floor: p50 <= 0.6 s.

Corpus and queries: the real conversation sentences and questions of ``bench.speed.recall`` (LongMemEval +
LoCoMo), stored with ``learn_many`` and fsync off, embedded once (embedding cache in ``--cache-dir``).

    flock /tmp/plur-timing.lock nice -n 5 python -m bench.doors.service [--engrams 10000] [--cold 25]
        [--queries 300] [--out bench/results/service.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.speed.recall import MODEL, corpus, pct, sentence_pool  # noqa: E402

FLOORS = {"cold_cli_service": 150.0, "api_recall_http": 15.0, "cold_cli_bm25": 600.0}


def summary(ms: list[float], baseline_p50: float | None = None) -> dict[str, float]:
    """p50 / p99 / mean in ms (and p50 over the ``python -c pass`` p50)."""
    out = {"n": len(ms), "p50_ms": round(pct(ms, 50), 2), "p99_ms": round(pct(ms, 99), 2),
           "mean_ms": round(statistics.fmean(ms), 2)}
    if baseline_p50:
        out["p50_ratio_to_python"] = round(out["p50_ms"] / baseline_p50, 2)
    return out


def cold(cmd: list[str], n: int, env: dict[str, str]) -> list[float]:
    """Wall time (ms) of ``n`` fresh processes running ``cmd`` (each must exit 0)."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        out.append((time.perf_counter() - t0) * 1000)
        if proc.returncode:
            raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return out


def build_store(home: Path, n: int, cache_dir: str) -> None:
    """An n-engram store, both indexes built and saved (embeddings from the cache when present)."""
    from plur.memory import Memory

    pool, _ = sentence_pool()
    with Memory(home, model=MODEL, fsync=False, cache_dir=cache_dir) as mem:
        mem.learn_many({"statement": t} for t in corpus(n, pool))
        mem.reindex(progress=False)


def api_latency(info: dict, queries: list[str], via: str, mode: str) -> list[float]:
    """Client-side ms of ``POST /recall`` per query; each text is new to the service (tagged with via and mode),
    so no figure is helped by the query-embedding cache a previous phase filled."""
    from plur.service.client import Client

    info = dict(info, socket=None) if via == "http" else dict(info, url=None)
    c = Client(info)
    for q in queries[:10]:
        c.recall(f"{q} warm {via} {mode}", k=10, mode=mode)
    out = []
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        c.recall(f"{q} #{i} {via} {mode}", k=10, mode=mode)    # a new text each time: no query-embedding cache hit
        out.append((time.perf_counter() - t0) * 1000)
    c.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engrams", type=int, default=10_000)
    ap.add_argument("--cold", type=int, default=25, help="fresh processes per cold figure")
    ap.add_argument("--pause-s", type=float, default=3.0, help="idle seconds before each after-pause process")
    ap.add_argument("--paused", type=int, default=8, help="fresh processes after a pause")
    ap.add_argument("--queries", type=int, default=300, help="API requests per warm figure")
    ap.add_argument("--pairs", type=int, default=7, help="interleaved (python -c pass, cold plur recall) pairs whose "
                                                         "medians give the issue's ratio (floor 1.5x)")
    ap.add_argument("--cache-dir", default=str(ROOT / "bench" / ".cache"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "service.json"))
    ap.add_argument("--store", help="keep the built store here and reuse it when it exists (the build is not timed, "
                                    "so it may run outside the timing lock: --build-only)")
    ap.add_argument("--build-only", action="store_true", help="build --store and exit")
    args = ap.parse_args(argv)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PLUR_MODEL": MODEL, "PLUR_CACHE_DIR": args.cache_dir}
    plur = [str(Path(sys.executable).with_name("plur"))]
    if not Path(plur[0]).exists():
        plur = [sys.executable, "-m", "plur"]
    _, questions = sentence_pool()
    rng = random.Random(5)
    queries = [questions[rng.randrange(len(questions))] for _ in range(max(args.queries, args.cold + args.paused))]
    results: dict = {"engrams": args.engrams, "model": MODEL, "python": platform.python_version(),
                     "machine": platform.machine(), "cpus": os.cpu_count(), "floors_ms": FLOORS}
    with tempfile.TemporaryDirectory(prefix="plur-bench-", dir="/tmp") as tmp:
        home = Path(args.store) if args.store else Path(tmp) / "home"
        if not (home / "index" / "manifest.json").exists():
            t0 = time.perf_counter()
            build_store(home, args.engrams, args.cache_dir)
            results["build_s"] = round(time.perf_counter() - t0, 1)
            print(f"store of {args.engrams:,} engrams built and indexed in {results['build_s']} s", flush=True)
        if args.build_only:
            return 0
        # A pip-installed plur has bytecode (pip compiles on install); a source checkout under
        # PYTHONDONTWRITEBYTECODE=1 would recompile ~90 modules in every cold process (~70 ms).
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "plur")], check=True)
        base = summary(cold([sys.executable, "-c", "pass"], args.cold, env))
        results["python_c_pass"] = base
        bp = base["p50_ms"]
        start = subprocess.run(plur + ["--home", str(home), "service", "start", "--port", "0"], env=env,
                               capture_output=True, text=True)
        if start.returncode:
            raise SystemExit(start.stderr)
        try:
            info = json.loads((home / "service.json").read_text())
            results["cold_cli_service"] = summary(
                [ms for q in queries[: args.cold] for ms in cold(plur + ["--home", str(home), "recall", q], 1, env)], bp)
            # the issue's own measure: 7 pairs, each a `python -c pass` then a cold `plur recall`, medians of each
            pairs = [(cold([sys.executable, "-c", "pass"], 1, env)[0],
                      cold(plur + ["--home", str(home), "recall", q], 1, env)[0]) for q in queries[: args.pairs]]
            base_med = statistics.median(p for p, _ in pairs)
            cli_med = statistics.median(c for _, c in pairs)
            results["cold_cli_pairs"] = {"n": len(pairs), "python_c_pass_median_ms": round(base_med, 2),
                                         "cold_cli_median_ms": round(cli_med, 2),
                                         "ratio": round(cli_med / base_med, 2), "load": os.getloadavg()[0]}
            paused = []
            for q in queries[args.cold: args.cold + args.paused]:
                time.sleep(args.pause_s)
                paused += cold(plur + ["--home", str(home), "recall", q], 1, env)
            results["cold_cli_service_after_pause"] = summary(paused, bp)
            for via in ("http", "socket"):
                for mode in ("hybrid", "bm25"):
                    key = f"api_recall_{via}" + ("" if mode == "hybrid" else "_bm25")
                    results[key] = summary(api_latency(info, queries[: args.queries], via, mode), bp)
        finally:
            subprocess.run(plur + ["--home", str(home), "service", "stop"], env=env, capture_output=True)
        results["cold_cli_bm25"] = summary(
            [ms for q in queries[: args.cold] for ms in cold(plur + ["--home", str(home), "recall", "--mode", "bm25", q],
                                                              1, env)], bp)
    results["within_floor"] = {k: results[k]["p50_ms"] <= v for k, v in FLOORS.items()}
    for key in ("python_c_pass", "cold_cli_service", "cold_cli_service_after_pause", "api_recall_http", "api_recall_socket", "api_recall_http_bm25",
                "api_recall_socket_bm25", "cold_cli_bm25"):
        r = results[key]
        floor = f"  (floor {FLOORS[key]:.0f} ms: {'ok' if results['within_floor'][key] else 'MISSED'})" \
            if key in FLOORS else ""
        ratio = f"  = {r['p50_ratio_to_python']:.1f}x python -c pass" if "p50_ratio_to_python" in r else ""
        print(f"{key:<24} p50 {r['p50_ms']:>8.1f} ms  p99 {r['p99_ms']:>8.1f} ms{ratio}{floor}", flush=True)
    r = results["cold_cli_pairs"]
    print(f"cold plur recall / python -c pass, medians of {r['n']} interleaved pairs: {r['cold_cli_median_ms']:.1f} / "
          f"{r['python_c_pass_median_ms']:.1f} ms = {r['ratio']:.2f}x (floor 1.5x), load {r['load']:.1f}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
