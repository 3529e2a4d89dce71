"""Benchmark: plur on PostgreSQL at 10k / 100k / 1M engrams beside the folder store, through a real service.

Run in two phases (a PostgreSQL 16 + pgvector from the ``pgserver`` wheel keeps its data in ``--data``, so the
slow build is done once and the timed phase can be re-run)::

    flock -x /work/notes/quiet.lock python -m bench.speed.pg_scale build --sizes 10000,100000   # timed writes
    flock -s /work/notes/quiet.lock python -m bench.speed.pg_scale index --sizes 10000,100000   # untimed
    flock -x /work/notes/quiet.lock python -m bench.speed.pg_scale serve --sizes 10000,100000   # timed
    (the same with --sizes 1000000: the folder store stops at --folder-max)

``build`` (per size N; the timed parts are upper bounds when the machine is shared): N synthetic engrams
(12 words each from a 50,000-word Zipf(1.2) vocabulary, so posting lists are as skewed as real text) ingested
with ``PgStore.add_many`` in batches of 1,000 (**ingest/s**), then 200 single ``add`` calls, one transaction
each (**learn/s**); random unit vectors (384-d, seeded; latency does not depend on what vectors say) stored
once in ``plur_vectors`` under the packaged model's identity, as a first machine would have. The same for a
folder home up to ``--folder-max`` (its vectors put in its local cache). ``index``: each home's indexes built
from those vectors and saved (``Memory.reindex``; **index_build_s**), as a running service keeps them.

``serve`` (per size and store): a real ``plur serve`` process on that home (packaged all-MiniLM-L6-v2, so each
recall embeds its query for real); **start_s** until its API answers (the mirror loaded from the table, saved
indexes opened, feed caught up); then ``--queries`` hybrid recalls (k=10, Zipf queries of 3 words, none
cached) over the unix socket: **recall p50/p99** (client wall time); 100 learns through the API (**service
learn/s**: each in the BM25 index at once, embedded by the next recall); the service's **RSS** (``VmRSS`` after, ``VmHWM`` peak, MiB).

Writes ``bench/results/pg_scale.json`` (merged with earlier runs of other sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
VOCAB = 50_000
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def vocabulary(seed: int = 11) -> list[str]:
    """:data:`VOCAB` distinct pseudo-words of 2-4 syllables (seeded)."""
    rng = np.random.default_rng(seed)
    words: dict[str, None] = {}
    while len(words) < VOCAB:
        n = int(rng.integers(2, 5))
        words["".join(SYLLABLES[int(i)] for i in rng.integers(0, len(SYLLABLES), n))] = None
    return list(words)


def texts(n: int, words: list[str], seed: int, length: int = 12) -> list[str]:
    """``n`` texts of ``length`` Zipf(1.2)-drawn words, each ending in its number (so all are distinct)."""
    rng = np.random.default_rng(seed)
    ranks = np.minimum(rng.zipf(1.2, size=(n, length)), VOCAB) - 1
    return [" ".join(words[r] for r in row) + f" n{i}" for i, row in enumerate(ranks)]


def pct(ms: list[float], q: float) -> float:
    s = sorted(ms)
    return round(s[min(len(s) - 1, max(0, int(round(q / 100 * (len(s) - 1)))))], 2)


def _server(data: Path) -> Any:
    import pgserver

    return pgserver.get_server(data / "pg", cleanup_mode=None)


def _uri(base: str, n: int) -> str:
    return f"{base}&options=-csearch_path%3Ds{n}%2Cpublic"


def _identity() -> str:
    from plur.memory import Memory

    import tempfile

    with Memory(Path(tempfile.mkdtemp(prefix="plur-id-")), model=MODEL) as mem:
        return mem.model_resolution().embedder.identity


def _unit(rng: np.random.Generator, n: int, dims: int = 384) -> np.ndarray:
    v = rng.standard_normal((n, dims), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _write_config(home: Path, uri: str | None) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = [f'model = "{MODEL}"'] + ([f'store = "{uri}"'] if uri else [])
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def index_home(home: Path) -> dict[str, Any]:
    """Build and save the home's indexes (vectors from the caches, none embedded): ``{"index_build_s"}``."""
    from plur.memory import Memory

    t0 = time.perf_counter()
    with Memory(home) as mem:
        got = mem.reindex(progress=False)
    return {"index_build_s": round(time.perf_counter() - t0, 1), "indexed": got["engrams"]}


def build_pg(base: str, n: int, data: Path, words: list[str], identity: str) -> dict[str, Any]:
    import psycopg

    from plur.memory import Memory
    from plur.store.engram import Engram
    from plur.store.pg.store import PgStore
    from plur.store.pg.vectors import PgVectorCache, text_key

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"DROP SCHEMA IF EXISTS s{n} CASCADE")
        conn.execute(f"CREATE SCHEMA s{n}")
    uri = _uri(base, n)
    home = data / f"pg-{n}"
    shutil.rmtree(home, ignore_errors=True)
    _write_config(home, uri)
    body = texts(n, words, seed=n)
    store = PgStore(uri, home, listen=False)
    t0 = time.perf_counter()
    for start in range(0, n, 1000):
        store.add_many([Engram.create(t) for t in body[start:start + 1000]], dedupe=False)
    ingest_s = time.perf_counter() - t0
    learned = texts(200, words, seed=n + 1)
    t0 = time.perf_counter()
    for t in learned:
        store.add(Engram.create("learned " + t))
    learn_s = time.perf_counter() - t0
    store.close()
    vecs = PgVectorCache(uri)
    rng = np.random.default_rng(n)
    every = body + ["learned " + t for t in learned]
    t0 = time.perf_counter()
    for start in range(0, len(every), 10000):
        part = every[start:start + 10000]
        vecs.put_many(identity, zip((text_key(t) for t in part), _unit(rng, len(part))))
    vectors_s = time.perf_counter() - t0
    vecs.close()
    return {"engrams": n + 200, "ingest_per_s": round(n / ingest_s), "learn_per_s": round(200 / learn_s, 1),
            "vectors_per_s": round(len(every) / vectors_s)}


def build_folder(n: int, data: Path, words: list[str]) -> dict[str, Any]:
    from plur.embed.cache import text_key
    from plur.memory import Memory
    from plur.store.engram import Engram
    from plur.store.store import EngramStore

    home = data / f"folder-{n}"
    shutil.rmtree(home, ignore_errors=True)
    _write_config(home, None)
    body = texts(n, words, seed=n)
    store = EngramStore(home, fsync=False)
    t0 = time.perf_counter()
    for start in range(0, n, 1000):
        store.add_many([Engram.create(t) for t in body[start:start + 1000]], dedupe=False)
    ingest_s = time.perf_counter() - t0
    store.close()
    learned = texts(200, words, seed=n + 1)
    store = EngramStore(home, fsync=True)
    t0 = time.perf_counter()
    for t in learned:
        store.add(Engram.create("learned " + t))
    learn_s = time.perf_counter() - t0
    store.close()
    with Memory(home) as mem:
        emb = mem.model_resolution().embedder
        every = [e.statement for e in mem.store.all()]
        rng = np.random.default_rng(n)
        for start in range(0, len(every), 10000):
            part = every[start:start + 10000]
            emb.cache.put_many(emb.identity, zip((text_key(t) for t in part), _unit(rng, len(part))))
    return {"engrams": n + 200, "ingest_per_s": round(n / ingest_s), "learn_per_s": round(200 / learn_s, 1)}


def _vm(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def serve(home: Path, words: list[str], queries: int) -> dict[str, Any]:
    """Start ``plur serve`` on ``home``, time recalls and learns through it, read its RSS, stop it."""
    from plur.service.client import Client

    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    env.update({"PLUR_HOME": str(home), "HF_HUB_OFFLINE": "1", "PLUR_AUTOSTART_SERVICE": "0"})
    (home / "service.json").unlink(missing_ok=True)
    log = open(home / "bench-serve.log", "wb")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "plur", "serve", "--port", "0"], env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        while not (home / "service.json").exists():
            if proc.poll() is not None:
                raise RuntimeError(f"plur serve exited {proc.returncode}; see {home / 'bench-serve.log'}")
            time.sleep(0.05)
        client = Client(json.loads((home / "service.json").read_text()), timeout_s=600)
        client.status()
        start_s = time.perf_counter() - t0
        qs = [" ".join(t.split()[:3]) for t in texts(queries + 10, words, seed=99)]
        for q in qs[:10]:
            client.recall(q, 10)
        ms, server_ms = [], []
        for q in qs[10:]:
            t = time.perf_counter()
            got = client.recall(q, 10)
            ms.append((time.perf_counter() - t) * 1000)
            server_ms.append(got["took_ms"])
        new = texts(100, words, seed=7)
        t = time.perf_counter()
        for s in new:
            client.learn("served " + s + f" {time.time_ns()}")
        learn_s = time.perf_counter() - t
        engrams = client.status()["engrams"]
        out = {"engrams": engrams, "start_s": round(start_s, 1), "recall_p50_ms": pct(ms, 50),
               "recall_p99_ms": pct(ms, 99), "server_p50_ms": pct(server_ms, 50), "server_p99_ms": pct(server_ms, 99),
               "service_learn_per_s": round(100 / learn_s, 1), "rss_mib": _vm(proc.pid, "VmRSS"),
               "peak_rss_mib": _vm(proc.pid, "VmHWM"), "queries": queries}
        client.close()
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("phase", choices=("build", "index", "serve"))
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--folder-max", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--only", choices=("pg", "folder", "both"), default="both")
    ap.add_argument("--data", type=Path, default=Path("/tmp/plur-bench-scale"))
    ap.add_argument("--out", type=Path, default=RESULTS / "pg_scale.json")
    args = ap.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    server = _server(args.data)
    base = server.get_uri()
    words = vocabulary()
    report = json.loads(args.out.read_text()) if args.out.exists() else {}
    report.update({"machine": platform.platform(), "cpus": os.cpu_count(), "model": MODEL})
    report.setdefault("sizes", {})
    identity = _identity() if args.phase == "build" and args.only != "folder" else ""
    for n in (int(s) for s in args.sizes.split(",")):
        row = report["sizes"].setdefault(str(n), {})
        kinds = [k for k in ("pg", "folder") if args.only in (k, "both") and (k == "pg" or n <= args.folder_max)]
        for kind in kinds:
            if args.phase == "build":
                got = build_pg(base, n, args.data, words, identity) if kind == "pg" else build_folder(n, args.data, words)
            elif args.phase == "index":
                got = index_home(args.data / f"{kind}-{n}")
            else:
                got = serve(args.data / f"{kind}-{n}", words, args.queries)
            got["load_avg_1m"] = round(os.getloadavg()[0], 2)
            row.setdefault(kind, {})[args.phase] = got
            print(n, kind, args.phase, got, flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
