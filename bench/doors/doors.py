"""The out-of-process doors against issue 26's floors, in one run (ratios travel between machines).

Measured on a home of ``--engrams`` statements (the ten facts of tests/test_doors.py plus filler):

* ``mcp_first_recall_s``: with a warm service, a fresh ``plur mcp`` (stdio, the ``mcp`` package's
  client): the first ``tools/call recall`` round trip, and ``mcp_spawn_to_first_recall_s`` from
  spawning the process to that answer. Floor: first recall <= 1 s.
* ``mcp_rss_mib``: peak RSS (VmHWM) of that ``plur mcp`` process after the calls. Floor: <= 150 MiB.
* ``hook_ms`` / ``python_pass_ms``: median of ``--runs`` runs each, interleaved, of ``plur hook
  claude-code`` (the console script the README's settings run; UserPromptSubmit on stdin, warm
  service) and ``python -c pass``. Floor: ratio <= 2.5. plur is byte-compiled first, as an install
  leaves it (:mod:`bench.doors.bytecode`).
  ``inject_request_ms``: the same ``/inject`` request sent from this process (the service's recall time),
  and ``hook_ratio_without_service_time``: the hook process's own cost against ``python -c pass``.
* ``cold_mcp_first_answer_s``: no service, auto-start on: spawning ``plur mcp`` to its first recall
  answer (keyword, while the service starts). Floor: <= 10 s on a 2-core machine.

    python -m bench.doors.doors [--engrams 1000] [--runs 15] [--out bench/results/doors.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def env_for(home: Path, autostart: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    return {**env, "PLUR_HOME": str(home), "PLUR_MODEL": MODEL, "HF_HUB_OFFLINE": "1",
            "PLUR_AUTOSTART_SERVICE": "1" if autostart else "0",
            "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def seed(home: Path, n: int) -> None:
    from plur.memory import Memory
    from test_doors import FACTS

    with Memory(home, model="none", fsync=False) as mem:
        texts = [s for s, _ in FACTS] + [f"Filler note {i}: meeting {i % 97} moved to room {i % 13}."
                                         for i in range(max(0, n - len(FACTS)))]
        mem.learn_many([{"statement": t} for t in texts])


async def mcp_first_recall(home: Path, autostart: bool) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "plur", "mcp"], env=env_for(home, autostart))
    t0 = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as c:
        t1 = time.perf_counter()
        got = await c.call_tool("recall", {"query": "what is my dog called?", "k": 5})
        t2 = time.perf_counter()
        status = (await c.call_tool("status", {})).structured_content
        pid = status["process"]["pid"]
        rss = {k: int(line.split()[1]) / 1024 for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               for k in ("VmRSS", "VmHWM") if line.startswith(k + ":")}
    return {"first_recall_s": t2 - t1, "spawn_to_first_recall_s": t2 - t0, "rss_mib": rss["VmRSS"],
            "hwm_mib": rss["VmHWM"], "torch_loaded": status["process"]["torch_loaded"],
            "note": got.structured_content.get("note"), "top": got.structured_content["hits"][0]["engram"]["statement"]}


def timed(cmd: list[str], env: dict[str, str], stdin: str | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engrams", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "doors.json")
    args = ap.parse_args()
    from plur.service import autostart, daemon

    from bench.doors.bytecode import precompile

    out: dict[str, Any] = {"engrams": args.engrams, "cpus": os.cpu_count(),
                           "load_avg": os.getloadavg(), "bytecode": precompile()}
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"
        seed(warm, args.engrams)
        os.environ.update(env_for(warm, False))
        t = time.perf_counter()
        daemon.start(warm, port=0)
        out["service_start_s"] = time.perf_counter() - t
        try:
            out["warm_mcp"] = asyncio.run(mcp_first_recall(warm, False))
            env = env_for(warm, False)
            event = json.dumps({"session_id": "bench", "hook_event_name": "UserPromptSubmit",
                                "prompt": "what is my dog called?"})
            hook, base = [], []
            # What the README's .claude/settings.json runs: the `plur` console script (python -m plur
            # when this interpreter has none).
            script = Path(sys.executable).with_name("plur")
            plur_cmd = [str(script)] if script.exists() else [sys.executable, "-m", "plur"]
            for i in range(args.runs):
                base.append(timed([sys.executable, "-c", "pass"], env))
                ev = json.dumps({**json.loads(event), "session_id": f"bench-{i}"})
                hook.append(timed(plur_cmd + ["hook", "claude-code"], env, ev))
            from plur.hooks.claude_code import _service_info, post

            info = _service_info(str(warm))
            rtt = []
            for i in range(args.runs):   # the service's share: the same /inject request, from this process
                t = time.perf_counter()
                post(info, "/inject", {"query": "what is my dog called?", "exclude": []}, 30)
                rtt.append(time.perf_counter() - t)
            out["inject_request_ms"] = statistics.median(rtt) * 1000
            out["hook_ms"] = statistics.median(hook) * 1000
            out["hook_minus_request_ms"] = out["hook_ms"] - out["inject_request_ms"]
            out["python_pass_ms"] = statistics.median(base) * 1000
            out["hook_ratio"] = out["hook_ms"] / out["python_pass_ms"]
            out["hook_ratio_without_service_time"] = out["hook_minus_request_ms"] / out["python_pass_ms"]
        finally:
            daemon.stop(warm)
        cold = Path(tmp) / "cold"
        seed(cold, args.engrams)
        try:
            out["cold_mcp"] = asyncio.run(mcp_first_recall(cold, True))
            c = autostart.wait(cold, 600)
            if c is not None:
                c.close()
        finally:
            daemon.stop(cold)
    floors = {"warm first MCP recall <= 1 s": out["warm_mcp"]["first_recall_s"] <= 1.0,
              "plur mcp RSS <= 150 MiB": out["warm_mcp"]["hwm_mib"] <= 150,
              "hook <= 2.5x python -c pass": out["hook_ratio"] <= 2.5,
              "no service: first MCP answer <= 10 s": out["cold_mcp"]["spawn_to_first_recall_s"] <= 10}
    out["floors"] = floors
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
