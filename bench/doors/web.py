"""Benchmark the local web page on a large store: first page (and others) served over real HTTP.

Setup: a fresh home with ``--n`` engrams (default 10,000; varied scopes, types, tags and dates, written
through ``Memory.learn_many`` with fsync off) and a usage history in stats.db (``--recalls`` recall events
of 10 hits each, a quarter of them followed by an injection). The app runs in uvicorn on a loopback port
in a background thread; requests go through httpx, one at a time.

Measured (wall-clock ms per request, client side, including HTTP): the first page ``/`` (cold = the very
first request after the server started, templates not yet compiled; warm = p50/p99 over ``--requests``
repeats, usage counts and facets cached; "new recall" / "edited" = a recall recorded or an engram edited
before each request, so the caches are rebuilt) and, warm, its JSON twin, a full-text filter, a sort by
recall count, a deep page, an engram's detail page and the statistics page. ``open_store_ms`` is opening
the Memory and reading every engram file once, which ``serve()`` does before it listens.
Target from issue 6: first page <= 300 ms at 10,000 engrams.

Run:  python -m bench.doors.web [--n 10000] [--recalls 2000] [--requests 50] [--out bench/results/web.json]
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.manifest import base_manifest  # noqa: E402
from plur.memory import Memory  # noqa: E402
from plur.index.recall import Hit  # noqa: E402

WORDS = ("deploy release branch shop vault key printer label beach dog cat meeting standup report weekly "
         "invoice tax python rust tabs spaces editor theme coffee tea train bike garden recipe pasta "
         "budget flight hotel doctor dentist password backup server cluster log metric alert").split()
SCOPES = ["global"] * 4 + [f"project:p{i}" for i in range(8)] + ["agent:coder", "agent:writer"]
TYPES = ("user", "project", "feedback", "reference", "fact", "procedure")
TAGS = [f"t{i}" for i in range(40)]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) of ``values`` (ms)."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, round(q / 100 * (len(s) - 1))))]


def build_store(home: Path, n: int, n_recalls: int, seed: int = 0) -> dict[str, Any]:
    """Write ``n`` engrams and ``n_recalls`` recall events; returns timings (s) and a sample id."""
    rng = random.Random(seed)
    t0 = time.perf_counter()
    with Memory(home, model="none", fsync=False) as mem:
        items = []
        for i in range(n):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 24)))
            items.append({"statement": f"Note {i}: {words}.", "scope": rng.choice(SCOPES),
                          "type": rng.choice(TYPES), "tags": tuple(rng.sample(TAGS, rng.randint(0, 3))),
                          "created": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                                     f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"})
        for start in range(0, n, 1000):
            mem.learn_many(items[start:start + 1000])
        t_learn = time.perf_counter() - t0
        engrams = mem.store.all()
        now = time.time()
        t1 = time.perf_counter()
        for r in range(n_recalls):
            picked = rng.sample(engrams, 10)
            hits = [Hit(engram=e, score=1.0 / (60 + k), rank=k, bm25_rank=k, bm25_score=3.0, dense_rank=None,
                        dense_score=None) for k, e in enumerate(picked, 1)]
            ts = now - rng.random() * 30 * 86400
            mem.stats.record_recall(agent=rng.choice(["coder", "writer", None]), scope=None,
                                    query=" ".join(rng.sample(WORDS, 3)), mode="hybrid",
                                    latency_ms=rng.lognormvariate(2.5, 0.5), hits=hits, ts=ts)
            if r % 4 == 0:
                mem.stats.record_injection(agent="coder", engram_ids=[e.id for e in picked[:6]],
                                           block_hash=f"sha256:{r:016x}", tokens=rng.randint(200, 2000), ts=ts)
        t_stats = time.perf_counter() - t1
        sample = engrams[len(engrams) // 2].id
    return {"learn_s": round(t_learn, 2), "stats_s": round(t_stats, 2), "sample_id": sample}


def serve_in_thread(app: Any) -> tuple[Any, threading.Thread, str]:
    """Start uvicorn on a free loopback port; returns (server, thread, base URL)."""
    import uvicorn

    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only when the listening
    # socket says TCP; without it Nagle + delayed ACK add ~40 ms to every keep-alive response.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


def timed_get(client: Any, url: str) -> float:
    """GET ``url``; returns wall ms; raises on a non-200 answer."""
    t = time.perf_counter()
    r = client.get(url)
    ms = (time.perf_counter() - t) * 1000.0
    if r.status_code != 200:
        raise RuntimeError(f"GET {url} -> {r.status_code}: {r.text[:200]}")
    return ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="engrams in the store")
    ap.add_argument("--recalls", type=int, default=2_000, help="recall events in stats.db (10 hits each)")
    ap.add_argument("--requests", type=int, default=50, help="timed repeats per URL")
    ap.add_argument("--out", type=Path, default=Path("bench/results/web.json"))
    ap.add_argument("--home", type=Path, default=None, help="reuse/keep the store here (default: temp dir)")
    args = ap.parse_args(argv)

    import httpx

    from plur.web.server import create_app

    tmp = None
    if args.home is None:
        tmp = tempfile.TemporaryDirectory(prefix="plur-bench-web-")
        home = Path(tmp.name)
    else:
        home = args.home
    setup = build_store(home, args.n, args.recalls)
    print(f"store: {args.n} engrams in {setup['learn_s']} s; {args.recalls} recalls in {setup['stats_s']} s",
          flush=True)

    t_open = time.perf_counter()
    mem = Memory(home, model="none")
    mem.list()  # what serve() does before listening: read every engram file once
    open_ms = (time.perf_counter() - t_open) * 1000.0
    app = create_app(mem)
    server, thread, base = serve_in_thread(app)
    urls = {
        "first page": "/",
        "first page JSON": "/?format=json",
        "text filter": "/?q=deploy+vault",
        "sort by recalls": "/?sort=recalls",
        "scope+type filter": "/?scope=project:p3&type=fact",
        "page 100": "/?page=100",
        "detail": f"/engrams/{setup['sample_id']}",
        "statistics": "/stats",
    }
    results: dict[str, Any] = {}
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            # Log in as the owner does (the URL `plur service url` prints): the cookie rides along after.
            login = client.get("/?token=" + app.state.login_token)
            if login.status_code != 303:
                raise RuntimeError(f"login -> {login.status_code}: {login.text[:200]}")
            cold = timed_get(client, "/")
            for name, url in urls.items():
                timed_get(client, url)  # warm-up
                ms = [timed_get(client, url) for _ in range(args.requests)]
                results[name] = {"url": url, "n": len(ms), "p50_ms": round(percentile(ms, 50), 2),
                                 "p99_ms": round(percentile(ms, 99), 2), "mean_ms": round(statistics.fmean(ms), 2)}
            # Uncached paths: a recall recorded (usage counts re-read) or an engram edited (facets
            # recomputed) between two loads of the first page. The change itself is not timed.
            engrams = mem.list()
            for name, change in (
                ("first page, new recall", lambda i: mem.stats.record_recall(
                    agent="bench", scope=None, query="q", mode="bm25", latency_ms=1.0,
                    hits=[Hit(engram=engrams[i], score=1.0, rank=1)])),
                ("first page, edited", lambda i: mem.update(engrams[i].id, pinned=not engrams[i].pinned)),
            ):
                ms = []
                for i in range(args.requests):
                    change(i)
                    ms.append(timed_get(client, "/"))
                results[name] = {"url": "/", "n": len(ms), "p50_ms": round(percentile(ms, 50), 2),
                                 "p99_ms": round(percentile(ms, 99), 2), "mean_ms": round(statistics.fmean(ms), 2)}
            body = client.get("/").text
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        mem.close()
    report = {
        "manifest": base_manifest() | {"engrams": args.n, "recall_events": args.recalls, "requests": args.requests},
        "setup": setup, "open_store_ms": round(open_ms, 1), "first_page_cold_ms": round(cold, 2),
        "first_page_bytes": len(body.encode()), "target_first_page_ms": 300, "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"open store: {open_ms:.0f} ms; first page cold: {cold:.1f} ms; page size {len(body) // 1024} KiB")
    print(f"{'request':<20} {'p50 ms':>8} {'p99 ms':>8}")
    for name, r in results.items():
        print(f"{name:<20} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f}")
    ok = max(results[k]["p99_ms"] for k in ("first page", "first page, new recall", "first page, edited")) <= 300
    print(f"first page p99 {'<=' if ok else '>'} 300 ms target; wrote {args.out}")
    if tmp is not None:
        tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
