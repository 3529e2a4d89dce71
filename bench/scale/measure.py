"""The scale bench's measurements of one kept store, each in a process of its own.

* ``index`` (child): the indexes removed, a fresh process opens the store and runs ``Memory.reindex`` with every
  vector in the embedding cache: build seconds and the process's peak RSS (``ru_maxrss``).
* ``serve`` (this process drives a real ``plur service start``, waited for while it progresses, however long;
  stopped even when its start fails): seconds from the start command to the first hybrid answer (a hit with a
  dense rank); hybrid ``POST /recall`` (k=10, unix socket, each query a new text so it is embedded) p50/p99;
  capture of one more turn (``POST /capture`` with ``wait``: stored, indexed and embedded) p50; a cold
  ``plur list --limit 50`` process; the service's peak RSS (``VmHWM``) at the end.
  The captured turns' files are deleted after the service stops, so the kept store stays as built.
* ``quality`` (child): LoCoMo's questions (categories 1-4 with evidence) recalled in process as the quality
  runner does (k=50, ``now`` = the question's date): turn R_any@10 against the question's own conversation,
  and the memory block's notes per question with the relevance floor.
* ``alone``: the same questions, each conversation in a store of its own (the quality runner itself): the
  figure the distractors are compared with.

Each figure comes with the 1-minute load average when it was taken.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .homes import LOCOMO, MODEL

REPO = Path(__file__).resolve().parents[2]
#: Seconds the serve step's ``plur service start`` waits without progress from the starting service.
START_STALL_S = 600


def load() -> float:
    """The 1-minute load average, rounded."""
    return round(os.getloadavg()[0], 2)


def _cpu_s() -> float:
    """CPU seconds this process has used (user + system, every thread): a figure a busy machine inflates less."""
    return time.process_time()


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))] if v else float("nan")


def env_for(cache_dir: Path) -> dict[str, str]:
    """The environment every plur process of the bench runs with (model, cache, offline)."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PLUR_MODEL": MODEL, "PLUR_CACHE_DIR": str(cache_dir),
            "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def questions(path: Path = LOCOMO, conversations: tuple[int, ...] | None = None) -> list[Any]:
    """The scored LoCoMo questions (categories 1-4 with evidence), with their sample names."""
    from ..datasets import locomo

    tasks, _ = locomo.load_tasks(path, "turn", conversations=conversations)
    return [(t.name, q) for t in tasks for q in t.queries if q.primary]


def child(what: str, home: Path, cache_dir: Path, *extra: str) -> dict[str, Any]:
    """Run ``python -m bench.scale.measure <what> HOME CACHE ...`` and return the JSON it prints last."""
    proc = subprocess.run([sys.executable, "-m", "bench.scale.measure", what, str(home), str(cache_dir), *extra],
                          capture_output=True, text=True, env=env_for(cache_dir), cwd=REPO)
    if proc.returncode:
        raise SystemExit(f"bench.scale.measure {what} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- children -----------------------------------------------------------------------------------
def index_child(home: Path, cache_dir: Path) -> dict[str, Any]:
    """Remove the indexes (not the store's manifest) and rebuild them from cached embeddings."""
    from plur.memory import Memory

    for name in ("lexical", "dense", "manifest.json", "reindexing.json"):
        p = home / "index" / name
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    mem = Memory(home, model=MODEL, fsync=False, cache_dir=str(cache_dir))
    count = mem.store.count()
    open_s = time.perf_counter() - t0
    emb = mem.model_resolution().embedder
    t1, c1 = time.perf_counter(), _cpu_s()
    mem.reindex(progress=False)
    build_s, build_cpu_s = time.perf_counter() - t1, _cpu_s() - c1
    misses = emb.stats.misses if emb is not None else 0
    mem.close()
    return {"engrams": count, "store_open_s": round(open_s, 2), "index_build_s": round(build_s, 2),
            "index_build_cpu_s": round(build_cpu_s, 2),
            "embedded_now": misses, "index_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "load": load()}


def quality_child(home: Path, cache_dir: Path, conversations: tuple[int, ...] | None) -> dict[str, Any]:
    """Turn R_any@10 of LoCoMo's questions in the big store, block notes/q with the floor, in-process latency."""
    from plur.memory import Memory

    from ..quality.blocks import block_fields

    qs = questions(conversations=conversations)
    mem = Memory(home, model=MODEL, fsync=False, cache_dir=str(cache_dir), record_stats=False)
    s = mem.settings
    hits_any, notes, lat, cpu = [], [], [], []
    for sample, q in qs:
        t0, c0 = time.perf_counter(), _cpu_s()
        hits = mem.recall(q.text, k=50, record=False, now=q.now)
        lat.append((time.perf_counter() - t0) * 1000)
        cpu.append((_cpu_s() - c0) * 1000)
        docs_of = {}
        for h in hits:
            src = h.engram.source or {}
            if src.get("format") == "locomo" and str(src.get("session", "")).split("/")[0] == sample:
                docs_of[h.engram.id] = [str(src.get("doc_id"))]
        top = [d for h in hits[:10] for d in docs_of.get(h.engram.id, ())]
        hits_any.append(float(any(g in top for g in q.gold)))
        notes.append(block_fields(hits, docs_of, q.gold, recall_k=s.recall_k, budget_tokens=s.budget_tokens,
                                  now=q.now)["block"]["notes"])
    mem.close()
    return {"questions": len(qs), "r_any_at_10": round(sum(hits_any) / len(qs), 4),
            "block_notes_per_q": round(sum(notes) / len(qs), 3),
            "inprocess_k50_p50_ms": round(pct(lat, 50), 2), "inprocess_k50_p99_ms": round(pct(lat, 99), 2),
            "inprocess_k50_cpu_p50_ms": round(pct(cpu, 50), 2),
            "load": load()}


def alone(cache_dir: Path, conversations: tuple[int, ...] | None) -> dict[str, Any]:
    """R_any@10 and block notes/q of the same questions, each conversation alone (the quality runner)."""
    from ..datasets import locomo
    from ..engine.runner import Engine, EngineConfig, Variant

    tasks, _ = locomo.load_tasks(LOCOMO, "turn", conversations=conversations)
    engine = Engine(EngineConfig("locomo", "turn", model=MODEL, cache_dir=str(cache_dir)))
    rows = [r for t in tasks for r in engine.run_task(t, [Variant("hybrid", "weighted")]) if r.get("primary")]
    return {"questions": len(rows), "r_any_at_10": round(sum(r["metrics"]["turn"]["recall_any@10"] for r in rows) / len(rows), 4),
            "block_notes_per_q": round(sum(r["block"]["notes"] for r in rows) / len(rows), 3), "load": load()}


# -- the service --------------------------------------------------------------------------------
def _plur() -> list[str]:
    return [sys.executable, "-m", "plur"]


def _proc_kib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return float("nan")


def serve(home: Path, cache_dir: Path, n_queries: int = 300, n_captures: int = 30) -> dict[str, Any]:
    """Start a real service on ``home`` and time what its users wait for (see the module docstring)."""
    from plur.service.client import Client

    env = env_for(cache_dir)
    out: dict[str, Any] = {}
    stored: list[str] = []
    t0 = time.perf_counter()
    try:
        # A million-engram store takes minutes to open: the start waits while the service progresses, and gives
        # up only after START_STALL_S without progress (a loaded machine: let it be patient).
        start = subprocess.run(_plur() + ["--home", str(home), "service", "start", "--port", "0",
                                          "--stall-s", str(START_STALL_S)], env=env, capture_output=True, text=True)
        if start.returncode:
            raise SystemExit(f"plur service start failed: {start.stderr[-2000:]}")
        info = json.loads((home / "service.json").read_text())
        c = Client(dict(info, url=None))
        while True:
            got = c.recall("what did Caroline say about the adoption agency", k=10)
            if any(h.get("dense_rank") is not None for h in got["hits"]):
                break
            time.sleep(0.05)
        out["start_to_first_hybrid_s"] = round(time.perf_counter() - t0, 2)
        out["start_load"] = load()
        pid = int(c.status()["pid"])
        qs = [q.text for _, q in questions()]
        for i in range(10):
            c.recall(f"{qs[i]} warm", k=10)
        lat = []
        for i in range(n_queries):
            t = time.perf_counter()
            c.recall(f"{qs[(i * 7) % len(qs)]} #{i}", k=10)
            lat.append((time.perf_counter() - t) * 1000)
        out.update(hybrid_p50_ms=round(pct(lat, 50), 2), hybrid_p99_ms=round(pct(lat, 99), 2), recall_load=load())
        session = f"scale-bench-{os.getpid()}-{time.time_ns()}"
        cap: list[float] = []
        for i in range(n_captures):
            t = time.perf_counter()
            stored += c.request("POST", "/capture", {"text": f"I started a pottery class on Tuesdays, lesson {i} was about "
                                                   f"glazes number {time.time_ns()}", "session": session, "turn": i,
                                           "scope": "global", "wait": True})["stored"]
            cap.append((time.perf_counter() - t) * 1000)
        out.update(capture_p50_ms=round(pct(cap, 50), 2), capture_p99_ms=round(pct(cap, 99), 2), capture_load=load())
        lists = []
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run(_plur() + ["--home", str(home), "list", "--limit", "50"], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            lists.append(time.perf_counter() - t)
        out.update(list_50_s=round(sorted(lists)[1], 3), list_load=load())
        out["service_peak_rss_mib"] = round(_proc_kib(pid, "VmHWM") / 1024, 1)
        out["service_rss_mib"] = round(_proc_kib(pid, "VmRSS") / 1024, 1)
        c.close()
    finally:
        subprocess.run(_plur() + ["--home", str(home), "service", "stop"], env=env, capture_output=True)
        for engram_id in stored:  # the kept store stays as built (a forget would also VACUUM the shared cache)
            for name in (f"{engram_id[4:11]}/{engram_id}.yaml", f"{engram_id}.yaml"):  # month folder, or flat
                (home / "engrams" / name).unlink(missing_ok=True)
    return out


def main(argv: list[str]) -> int:
    what, home, cache = argv[0], Path(argv[1]), Path(argv[2])
    convs = tuple(int(x) for x in argv[3].split(",")) if len(argv) > 3 and argv[3] else None
    if what == "index":
        res = index_child(home, cache)
    elif what == "quality":
        res = quality_child(home, cache, convs)
    else:
        raise SystemExit(f"unknown measurement {what!r}")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
