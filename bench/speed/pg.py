"""Benchmark: the PostgreSQL store at scale, and the recall design choice (local indexes vs pgvector HNSW).

Run (a real PostgreSQL 16 + pgvector is started from the ``pgserver`` wheel in a temporary folder)::

    python -m bench.speed.pg --sizes 10000,100000            # both parts
    python -m bench.speed.pg --sizes 1000000 --skip-ann      # the store at 1M (random unit vectors)

Per size N (random unit vectors, 384 dims, seeded; latency does not depend on what vectors say):

* **store**: ``PgStore.add_many`` ingest throughput (engrams/s, batches of 1,000), ``learn`` throughput
  (one engram per transaction, 200 of them), a fresh process's load of the whole table into its mirror
  (s), ``plur_vectors`` bulk write (vectors/s), and the peak RSS of this process (MiB).
* **ann** (skip with ``--skip-ann``): top-100 over the same vectors by plur's local
  :class:`~plur.index.dense.DenseIndex` (usearch int8 HNSW, exact below 20k) and by pgvector's HNSW index
  (``vector_cosine_ops``, m=16, ef_construction=64, ``hnsw.ef_search`` 128): build seconds, query
  p50/p99 ms over ``--queries`` queries, and recall@10 against exact cosine.
* **folder**: the folder store's ingest, learn and load at the same N (up to ``--folder-max``).
* **propagation**: with ``--propagation``, 50 writes on store A and the time until store B's mirror
  holds each (LISTEN/NOTIFY + feed), p50/p99 ms.

Writes ``bench/results/pg.json``. Timing figures are upper bounds on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results"
DIMS = 384


def _pct(ms: list[float], q: float) -> float:
    s = sorted(ms)
    return round(s[min(len(s) - 1, max(0, int(round(q / 100 * (len(s) - 1)))))], 3)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMS), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def bench_store(uri: str, n: int, home: Path) -> dict[str, Any]:
    """Ingest, learn, load and vector-write figures of :class:`plur.store.pg.store.PgStore` at ``n`` engrams."""
    from plur.store.engram import Engram
    from plur.store.pg.store import PgStore
    from plur.store.pg.vectors import PgVectorCache, text_key

    store = PgStore(uri, home, listen=False)
    texts = [f"engram number {i} about deploys, dogs and databases #{i * 7919}" for i in range(n)]
    t0 = time.perf_counter()
    for start in range(0, n, 1000):
        store.add_many([Engram.create(t) for t in texts[start:start + 1000]], dedupe=False)
    ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(200):
        store.add(Engram.create(f"a learned statement {i} at scale {n}"))
    learn_s = time.perf_counter() - t0
    store.close()
    t0 = time.perf_counter()
    fresh = PgStore(uri, home, listen=False)
    count = fresh.count()
    load_s = time.perf_counter() - t0
    fresh.close()
    vecs = PgVectorCache(uri)
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    for start in range(0, n, 5000):
        part = texts[start:start + 5000]
        vecs.put_many("bench", zip((text_key(t) for t in part), _unit(rng, len(part))))
    vec_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = vecs.get_many("bench", [text_key(t) for t in texts[:1000]])
    get_ms = (time.perf_counter() - t0) * 1000
    vecs.close()
    return {"engrams": count, "ingest_per_s": round(n / ingest_s), "learn_per_s": round(200 / learn_s, 1),
            "load_s": round(load_s, 2), "vectors_per_s": round(n / vec_s), "get_1000_vectors_ms": round(get_ms, 1),
            "got": len(got), "rss_mib": _rss_mib()}


def bench_folder(n: int, home: Path) -> dict[str, Any]:
    """The folder store's figures at ``n`` engrams for comparison: ingest (fsync off, batches of 1,000),
    learn (fsync on, 200), a fresh process's load (manifest saved, as after a normal close)."""
    from plur.store.engram import Engram
    from plur.store.store import EngramStore

    store = EngramStore(home, fsync=False)
    t0 = time.perf_counter()
    for start in range(0, n, 1000):
        store.add_many([Engram.create(f"engram number {i} about deploys, dogs and databases #{i * 7919}")
                        for i in range(start, min(n, start + 1000))], dedupe=False)
    ingest_s = time.perf_counter() - t0
    store.close()
    store = EngramStore(home, fsync=True)
    t0 = time.perf_counter()
    for i in range(200):
        store.add(Engram.create(f"a learned statement {i} at scale {n}"))
    learn_s = time.perf_counter() - t0
    store.close()
    t0 = time.perf_counter()
    count = EngramStore(home).count()
    return {"engrams": count, "ingest_per_s": round(n / ingest_s), "learn_per_s": round(200 / learn_s, 1),
            "load_s": round(time.perf_counter() - t0, 2)}


def bench_ann(uri: str, n: int, queries: int) -> dict[str, Any]:
    """Local DenseIndex vs pgvector HNSW over the same ``n`` random unit vectors."""
    import psycopg
    from pgvector.psycopg import register_vector

    from plur.index.dense import DenseIndex

    rng = np.random.default_rng(7)
    base, qs = _unit(rng, n), _unit(rng, queries)
    exact = np.argsort(-(qs @ base.T), axis=1)[:, :10]
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    idx = DenseIndex(DIMS)
    idx.add([str(i) for i in range(n)], base)
    if idx.uses_hnsw:  # below exact_threshold plur searches exactly (as Memory does)
        idx.build()
    build = time.perf_counter() - t0
    ms, hits = [], 0
    for qi, q in enumerate(qs):
        t = time.perf_counter()
        res = idx.search(q, 100)
        ms.append((time.perf_counter() - t) * 1000)
        hits += len({int(i) for i, _ in res[:10]} & set(exact[qi].tolist()))
    out["local"] = {"build_s": round(build, 2), "p50_ms": _pct(ms, 50), "p99_ms": _pct(ms, 99),
                    "recall_at_10": round(hits / (10 * queries), 4), "hnsw": idx.uses_hnsw}
    with psycopg.connect(uri, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("DROP TABLE IF EXISTS bench_ann")
        conn.execute(f"CREATE TABLE bench_ann (id int PRIMARY KEY, vec vector({DIMS}))")
        with conn.cursor().copy("COPY bench_ann (id, vec) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "vector"])
            for i in range(n):
                copy.write_row((i, base[i]))
        t0 = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("CREATE INDEX ON bench_ann USING hnsw (vec vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
        build = time.perf_counter() - t0
        conn.execute("SET hnsw.ef_search = 128")
        ms, hits = [], 0
        for qi, q in enumerate(qs):
            t = time.perf_counter()
            rows = conn.execute("SELECT id FROM bench_ann ORDER BY vec <=> %s LIMIT 100", (q,)).fetchall()
            ms.append((time.perf_counter() - t) * 1000)
            hits += len({r[0] for r in rows[:10]} & set(exact[qi].tolist()))
        size = conn.execute("SELECT pg_total_relation_size('bench_ann')").fetchone()[0]
        conn.execute("DROP TABLE bench_ann")
    out["pgvector"] = {"build_s": round(build, 2), "p50_ms": _pct(ms, 50), "p99_ms": _pct(ms, 99),
                       "recall_at_10": round(hits / (10 * queries), 4), "table_mib": round(size / 2**20, 1)}
    return out


def bench_propagation(uri: str, home: Path, writes: int = 50) -> dict[str, Any]:
    """Time from a commit on store A until store B's mirror holds the engram (LISTEN/NOTIFY + feed)."""
    from plur.store.engram import Engram
    from plur.store.pg.store import PgStore

    a, b = PgStore(uri, home / "a"), PgStore(uri, home / "b")
    b.refresh()
    deadline = time.monotonic() + 30
    while not (b._feed is not None and b._feed.connected) and time.monotonic() < deadline:
        time.sleep(0.01)
    ms = []
    for i in range(writes):
        token = b.change_token()[1]
        t0 = time.perf_counter()
        e, _ = a.add(Engram.create(f"propagating statement {i}"))
        while e.id not in b.refresh().added:
            token = b._feed.wait_change(token, 5.0)
        ms.append((time.perf_counter() - t0) * 1000)
    a.close()
    b.close()
    return {"writes": writes, "p50_ms": _pct(ms, 50), "p99_ms": _pct(ms, 99), "max_ms": round(max(ms), 3)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated engram counts")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--skip-ann", action="store_true")
    ap.add_argument("--skip-store", action="store_true")
    ap.add_argument("--propagation", action="store_true")
    ap.add_argument("--folder-max", type=int, default=100000, help="also time the folder store up to this size")
    ap.add_argument("--out", type=Path, default=RESULTS / "pg.json")
    args = ap.parse_args(argv)
    import pgserver
    import psycopg

    folder = tempfile.mkdtemp(prefix="plur-bench-pg-")
    server = pgserver.get_server(folder, cleanup_mode="delete")
    base = server.get_uri()
    report: dict[str, Any] = {"machine": platform.platform(), "cpus": __import__("os").cpu_count(), "sizes": {}}
    try:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        for k, n in enumerate(int(s) for s in args.sizes.split(",")):
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA s{k}")
            uri = f"{base}&options=-csearch_path%3Ds{k}%2Cpublic"
            row: dict[str, Any] = {}
            if not args.skip_store:
                row["store"] = bench_store(uri, n, Path(folder) / f"home{k}")
                print(n, "store", row["store"], flush=True)
            if args.folder_max and n <= args.folder_max:
                row["folder"] = bench_folder(n, Path(folder) / f"folder{k}")
                print(n, "folder", row["folder"], flush=True)
            if not args.skip_ann:
                row["ann"] = bench_ann(uri, n, args.queries)
                print(n, "ann", row["ann"], flush=True)
            report["sizes"][str(n)] = row
        if args.propagation:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute("CREATE SCHEMA prop")
            report["propagation"] = bench_propagation(f"{base}&options=-csearch_path%3Dprop%2Cpublic",
                                                      Path(folder) / "prop")
            print("propagation", report["propagation"], flush=True)
    finally:
        server.cleanup()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
