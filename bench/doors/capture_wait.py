"""Capture stays off the turn path: a turn's wait for its block, capture on against off, interleaved in one run.

    python -m bench capture-wait [--turns 150] [--gap-ms 300] [--conversations 6,7] [--doors worker,service,rules] [--out FILE]

Two homes hold the same memory (LoCoMo conversation ``A``'s turns, ingested and embedded, then
copied), each with its own :class:`~plur.prompt.worker.RecallWorker` in this process: one with
``capture=True``, one without. The "user" types conversation ``B``'s turns, one message per turn,
``--gap-ms`` apart (the time a person takes to type; ``0``: back to back, the worst case). Turns go
to the two arms alternately (ABBA order, so neither always goes first); each arm sees only its own
messages, so the capture arm's store grows as a real session's would.

Timed per turn: ``submit`` -> that request's recall finished and its block published (what a host that
waits for the turn's block waits for; :meth:`RecallWorker.warm` waits for the same event). Reported:
p50/p95 of each arm and the p50 difference (target: at most +5 ms, issue 42), and how many messages the
capture arm stored. The model is loaded and both homes opened before the clock starts.

The service door (``--doors service``: the DSH plugin's and the hooks' path) starts one ``plur service`` per
home and times ``POST /api/v1/block`` per turn; the capture arm then hands the turn to ``POST
/api/v1/capture`` (queued, not waited for, as the DSH plugin does). A service without that endpoint is
reported as skipped.

``--doors rules`` times capture itself per turn with the rules of issue 46 on against off (:func:`run_rules`).
``--doors cost`` times what capturing one turn costs the capture thread (``Memory.capture``, then
``embed_queued`` as the service's capture thread does), capture's rules on against off (setting
``capture_rules``: questions, turns with nothing to remember, capture-off marks, a text the scope holds),
interleaved ABBA on two copies of the home; p50/p95 over every turn and over the turns both arms stored.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..manifest import base_manifest, dataset_info
from ..peers.conversation import LOCOMO, MODEL
from ..peers.summary import pct

DONE_TIMEOUT_S = 120.0


def wait_done(worker: Any, agent: str, gen: int) -> None:
    """Until the request ``gen`` of ``agent`` has finished (published, unchanged or failed)."""
    with worker._cond:
        ok = worker._cond.wait_for(lambda: (st := worker._agents.get(agent)) is not None and st.finished_gen >= gen,
                                   timeout=DONE_TIMEOUT_S)
    if not ok:
        raise SystemExit(f"turn {gen} of {agent} did not finish within {DONE_TIMEOUT_S:.0f} s")


def texts_of(sample: dict[str, Any]) -> list[str]:
    """The conversation's turn texts (plur's LoCoMo parser: ``"<speaker>: <text>"``)."""
    from plur.formats.chats import locomo

    return [t.text for t in locomo.parse([sample], where="locomo")]


def make_homes(sample: dict[str, Any], root: Path) -> tuple[Path, Path]:
    """Conversation ``sample`` ingested and embedded into one home, copied to a second."""
    from plur.memory import Memory

    base = root / "off"
    with Memory(base, model=MODEL) as mem:
        mem.ingest([sample], progress=False, rules=False, forget=False)   # every turn, as before the rules
        mem.catch_up(progress=False)
    other = root / "on"
    shutil.copytree(base, other)
    return base, other


def run(data: list[dict[str, Any]], a: int, b: int, turns: int, gap_s: float) -> dict[str, Any]:
    from plur.memory import Memory
    from plur.prompt.worker import RecallWorker

    root = Path(tempfile.mkdtemp(prefix="plur-bench-capture-"))
    try:
        off_home, on_home = make_homes(data[a - 1], root)
        messages = texts_of(data[b - 1])[:turns]
        arms: dict[str, dict[str, Any]] = {}
        for name, home, capture in (("off", off_home, False), ("on", on_home, True)):
            mem = Memory(home, model=MODEL)
            worker = RecallWorker(mem, capture=capture)
            worker.warm("bench", "warm up the indexes and the model", timeout_s=DONE_TIMEOUT_S)
            arms[name] = {"mem": mem, "worker": worker, "ms": []}
        for i, text in enumerate(messages):
            order = ("off", "on") if i % 4 in (0, 3) else ("on", "off")
            for name in order:
                arm = arms[name]
                time.sleep(gap_s)
                t0 = time.perf_counter()
                gen = arm["worker"].submit("bench", text, session="bench-session")
                wait_done(arm["worker"], "bench", gen)
                arm["ms"].append((time.perf_counter() - t0) * 1e3)
        out: dict[str, Any] = {}
        for name, arm in arms.items():
            arm["worker"].close()
            stats = arm["worker"].stats()
            n_engrams = len(arm["mem"].store.all())
            arm["mem"].close()
            ms = arm["ms"]
            out[name] = {"p50_ms": pct(ms, 0.5), "p95_ms": pct(ms, 0.95), "mean_ms": sum(ms) / len(ms),
                         "turns": len(ms), "captured": stats.get("captured", 0), "engrams_after": n_engrams,
                         "ms": [round(x, 2) for x in ms]}
        out["p50_delta_ms"] = out["on"]["p50_ms"] - out["off"]["p50_ms"]
        out["p95_delta_ms"] = out["on"]["p95_ms"] - out["off"]["p95_ms"]
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_service(data: list[dict[str, Any]], a: int, b: int, turns: int, gap_s: float) -> dict[str, Any]:
    """The service door (DSH plugin, hooks): ``POST /block`` timed per turn; the capture arm then sends the turn
    to ``POST /capture`` (not waited for, as the DSH plugin does once its turn's recall is done)."""
    import subprocess

    from plur.errors import PlurError
    from plur.service.client import Client

    root = Path(tempfile.mkdtemp(prefix="plur-bench-capture-svc-"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PLUR_MODEL": MODEL}
    plur = [sys.executable, "-P", "-m", "plur"]
    homes = dict(zip(("off", "on"), make_homes(data[a - 1], root)))
    clients: dict[str, Any] = {}
    try:
        for name, home in homes.items():
            start = subprocess.run(plur + ["--home", str(home), "service", "start", "--port", "0"], env=env,
                                   capture_output=True, text=True)
            if start.returncode:
                raise SystemExit(f"plur service start: {start.stderr[-2000:]}")
            clients[name] = Client(json.loads((home / "service.json").read_text(encoding="utf-8")))
            clients[name].block("bench", "warm up the indexes and the model")
        try:
            clients["on"].request("POST", "/capture", {"text": "warm up capture", "session": "bench-warm", "turn": 0,
                                                       "scope": "global", "agent_id": "bench"})
        except PlurError as exc:
            return {"skipped": f"this service cannot capture ({exc})"}
        ms: dict[str, list[float]] = {"off": [], "on": []}
        for i, text in enumerate(texts_of(data[b - 1])[:turns]):
            for name in (("off", "on") if i % 4 in (0, 3) else ("on", "off")):
                time.sleep(gap_s)
                t0 = time.perf_counter()
                clients[name].block("bench", text)
                ms[name].append((time.perf_counter() - t0) * 1e3)
                if name == "on":
                    clients[name].request("POST", "/capture", {"text": text, "session": "bench-session", "turn": i,
                                                               "scope": "global", "agent_id": "bench"})
        out: dict[str, Any] = {n: {"p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95), "mean_ms": sum(v) / len(v),
                                   "turns": len(v), "ms": [round(x, 2) for x in v]} for n, v in ms.items()}
        out["p50_delta_ms"] = out["on"]["p50_ms"] - out["off"]["p50_ms"]
        out["p95_delta_ms"] = out["on"]["p95_ms"] - out["off"]["p95_ms"]
        return out
    finally:
        for c in clients.values():
            c.close()
        for home in homes.values():
            subprocess.run(plur + ["--home", str(home), "service", "stop"], env=env, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def run_rules(data: list[dict[str, Any]], a: int, b: int, turns: int, gap_s: float) -> dict[str, Any]:
    """Capture's own cost per turn with the rules of issue 46 (settings ``forget_requests`` and ``route_personal``)
    on against off: ``Memory.capture`` timed per turn (screen, rules, store, then the embedding the service does
    right after), into ``project:bench``, arms interleaved ABBA; and the two text checks alone per turn (the request
    detector, which every block runs too, and the personal classifier)."""
    from plur.memory import Memory
    from plur.memory.turns.forget_request import find
    from plur.memory.turns.personal import about_user, signs

    root = Path(tempfile.mkdtemp(prefix="plur-bench-capture-rules-"))
    try:
        off_home, on_home = make_homes(data[a - 1], root)
        arms = {"off": Memory(off_home, model=MODEL, forget_requests=False, route_personal=False),
                "on": Memory(on_home, model=MODEL, forget_requests=True, route_personal=True)}
        for mem in arms.values():
            mem.recall("warm up the indexes and the model", 1)
        ms: dict[str, list[float]] = {"off": [], "on": []}
        store_ms: dict[str, list[float]] = {"off": [], "on": []}
        messages = texts_of(data[b - 1])[:turns]
        for i, text in enumerate(messages):
            for name in (("off", "on") if i % 4 in (0, 3) else ("on", "off")):
                mem = arms[name]
                time.sleep(gap_s)
                t0 = time.perf_counter()
                got = mem.capture(text, session="bench-rules", turn=i, scope="project:bench", mode="user")
                store_ms[name].append((time.perf_counter() - t0) * 1e3)
                if got.stored:
                    mem.embed_queued()
                ms[name].append((time.perf_counter() - t0) * 1e3)
        checks: dict[str, list[float]] = {"detector_us": [], "classifier_us": []}
        for text in messages:
            t0 = time.perf_counter()
            find(text)
            t1 = time.perf_counter()
            signs.cache_clear()
            about_user(text)
            checks["detector_us"].append((t1 - t0) * 1e6)
            checks["classifier_us"].append((time.perf_counter() - t1) * 1e6)
        out: dict[str, Any] = {}
        for name, mem in arms.items():
            v = ms[name]
            scopes = [e.scope for e in mem.list() if isinstance(e.source, dict) and e.source.get("session") == "bench-rules"]
            out[name] = {"p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95), "mean_ms": sum(v) / len(v), "turns": len(v),
                         "store_p50_ms": pct(store_ms[name], 0.5), "store_p95_ms": pct(store_ms[name], 0.95),
                         "captured": len(scopes), "engrams_after": len(mem.list()),
                         "in_global": sum(1 for sc in scopes if sc == "global"), "ms": [round(x, 2) for x in v]}
            mem.close()
        out["p50_delta_ms"] = out["on"]["p50_ms"] - out["off"]["p50_ms"]
        out["p95_delta_ms"] = out["on"]["p95_ms"] - out["off"]["p95_ms"]
        out.update({k: {"p50": pct(v, 0.5), "p95": pct(v, 0.95)} for k, v in checks.items()})
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_cost(data: list[dict[str, Any]], a: int, b: int, turns: int, gap_s: float) -> dict[str, Any]:
    """Capture's cost per turn (``Memory.capture`` + ``embed_queued``), rules on against off (one process)."""
    from plur.memory import Memory

    root = Path(tempfile.mkdtemp(prefix="plur-bench-capture-cost-"))
    try:
        homes = dict(zip(("off", "on"), make_homes(data[a - 1], root)))
        mems = {name: Memory(home, model=MODEL, capture_rules=name == "on") for name, home in homes.items()}
        for mem in mems.values():
            mem.recall("warm up the indexes and the model", 5)
        ms: dict[str, list[float]] = {"off": [], "on": []}
        stored: dict[str, list[bool]] = {"off": [], "on": []}
        for i, text in enumerate(texts_of(data[b - 1])[:turns]):
            for name in (("off", "on") if i % 4 in (0, 3) else ("on", "off")):
                time.sleep(gap_s)
                t0 = time.perf_counter()
                got = mems[name].capture(text, session="bench-session", turn=i, scope="global", mode="user")
                mems[name].embed_queued()
                ms[name].append((time.perf_counter() - t0) * 1e3)
                stored[name].append(bool(got.stored))
        both = [i for i in range(len(ms["on"])) if stored["on"][i] and stored["off"][i]]
        out: dict[str, Any] = {}
        for name in ("off", "on"):
            v, w = ms[name], [ms[name][i] for i in both]
            out[name] = {"p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95), "mean_ms": sum(v) / len(v), "turns": len(v),
                         "stored": sum(stored[name]), "p50_both_ms": pct(w, 0.5), "p95_both_ms": pct(w, 0.95),
                         "ms": [round(x, 2) for x in v]}
            mems[name].close()
        out["both_stored"] = len(both)
        out["p50_delta_ms"] = out["on"]["p50_ms"] - out["off"]["p50_ms"]
        out["p95_delta_ms"] = out["on"]["p95_ms"] - out["off"]["p95_ms"]
        out["p50_both_delta_ms"] = out["on"]["p50_both_ms"] - out["off"]["p50_both_ms"]
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _print(door: str, res: dict[str, Any], gap_ms: float) -> None:
    if door == "cost":
        print(f"cost: Memory.capture + embed_queued per turn, {res['on']['turns']} turns per arm, gap {gap_ms:.0f} ms:")
        for name in ("off", "on"):
            r = res[name]
            print(f"  rules {name:3}: p50 {r['p50_ms']:.2f} ms  p95 {r['p95_ms']:.2f} ms  (stored {r['stored']}; "
                  f"on the {res['both_stored']} turns both stored: p50 {r['p50_both_ms']:.2f} ms  p95 {r['p95_both_ms']:.2f})")
        print(f"  on - off: p50 {res['p50_delta_ms']:+.2f} ms, on turns both stored {res['p50_both_delta_ms']:+.2f} ms")
        return
    if "skipped" in res:
        print(f"{door}: skipped, {res['skipped']}")
        return
    on, off = res["on"], res["off"]
    print(f"{door}: turn wait, {off['turns']} turns per arm, gap {gap_ms:.0f} ms:")
    for name, r in (("off", off), ("on", on)):
        extra = f"  (captured {r['captured']}, engrams after {r['engrams_after']})" if "captured" in r else ""
        print(f"  capture {name:3}: p50 {r['p50_ms']:.1f} ms  p95 {r['p95_ms']:.1f} ms  mean {r['mean_ms']:.1f} ms{extra}")
    print(f"  on - off: p50 {res['p50_delta_ms']:+.1f} ms  p95 {res['p95_delta_ms']:+.1f} ms  (target p50 <= +5 ms)")
    if "detector_us" in res:
        print(f"  capture without its embedding: off p50 {off['store_p50_ms']:.1f} ms, on p50 {on['store_p50_ms']:.1f} ms "
              f"({on['store_p50_ms'] - off['store_p50_ms']:+.1f} ms)")
        print(f"  stored in global with the rules: {on['in_global']} of {on['captured']}; request detector p50 "
              f"{res['detector_us']['p50']:.0f} us, personal classifier p50 {res['classifier_us']['p50']:.0f} us per turn")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench capture-wait", description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=LOCOMO, help=f"LoCoMo file (default {LOCOMO})")
    ap.add_argument("--conversations", default="6,7",
                    help="A,B: memory from conversation A, messages from conversation B (default 6,7)")
    ap.add_argument("--turns", type=int, default=150, help="messages per arm (default 150)")
    ap.add_argument("--gap-ms", type=float, default=300.0,
                    help="pause before each message, ms (default 300; 0 = back to back)")
    ap.add_argument("--doors", default="worker,service",
                    help="worker (RecallWorker in process), service (POST /block, capture by POST /capture), rules "
                         "(Memory.capture per turn with the issue-46 rules on against off), cost (Memory.capture per turn, "
                         "capture_rules on against off), comma-separated")
    ap.add_argument("--out", type=Path, help="write manifest and results as JSON here")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    a, b = (int(x) for x in args.conversations.split(","))
    data = json.loads(args.data.read_text(encoding="utf-8"))
    load_before = os.getloadavg()
    results: dict[str, Any] = {}
    for door in [d.strip() for d in args.doors.split(",") if d.strip()]:
        doors = {"worker": run, "service": run_service, "rules": run_rules, "cost": run_cost}
        if door not in doors:
            raise SystemExit(f"--doors {args.doors!r}: use worker, service, rules and/or cost, comma-separated")
        results[door] = doors[door](data, a, b, args.turns, args.gap_ms / 1e3)
        _print(door, results[door], args.gap_ms)
    print(f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
    if args.out:
        manifest = {**base_manifest(), "data": dataset_info(args.data), "model": MODEL, "gap_ms": args.gap_ms,
                    "conversations": [a, b], "load": [load_before, os.getloadavg()], "python": platform.python_version()}
        args.out.write_text(json.dumps({"manifest": manifest, "results": results}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
