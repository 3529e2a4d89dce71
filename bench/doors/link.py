"""How soon a linked Claude Code memory folder and plur agree (``plur link claude-code``, the service's watcher).

With a running service (BM25 only: the model is not what is measured) on a home of ``--engrams`` filler
engrams in the linked scope, ``--runs`` times each, interleaved:

* ``file_to_engram_s``: a memory file written into the folder (atomically, as an editor does) until the
  engram with its text is in the scope, seen by another process's Memory;
* ``engram_to_file_s``: an engram learned into the scope (``POST /api/v1/learn`` through the service client)
  until its line is in the folder's ``MEMORY.md``.

    python -m bench.doors.link [--engrams 200] [--runs 10] [--out bench/results/link.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SCOPE = "project:bench-link"


def _until(check, deadline_s: float = 120.0) -> float:
    start = time.perf_counter()
    while not check():
        if time.perf_counter() - start > deadline_s:
            raise TimeoutError("no agreement within the deadline")
        time.sleep(0.005)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engrams", type=int, default=200)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from plur.hosts.claude_link import Link, reconcile, save_link
    from plur.memory import Memory
    from plur.service import autostart, daemon

    tmp = Path(tempfile.mkdtemp(prefix="plur-bench-link-"))
    home, folder = tmp / "home", tmp / "memory"
    os.environ.update({"PLUR_HOME": str(home), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "0"})
    with Memory(home, model="none") as mem:
        mem.learn_many({"statement": f"Filler note {i} about component {i % 17}.", "scope": SCOPE}
                       for i in range(args.engrams))
        link = Link("claude-code", str(folder), SCOPE, None)
        save_link(home, link)
        reconcile(mem, link)
    daemon.start(home, port=0)
    client = autostart.wait(home, 120)
    reader = Memory(home, model="none")
    rows = {"file_to_engram_s": [], "engram_to_file_s": []}
    try:
        for i in range(args.runs):
            text = f"Bench memory {i}: the queue worker restarts at 0{i % 10}:00."
            tmpfile = folder / f".bench_{i}.tmp"
            tmpfile.write_text(f"---\nname: bench {i}\ndescription: bench\ntype: project\n---\n\n{text}\n")
            start = time.perf_counter()
            os.replace(tmpfile, folder / f"project_bench_{i}.md")
            _until(lambda: any(e.statement == text for e in reader.list(scope=SCOPE, status="active")))
            rows["file_to_engram_s"].append(time.perf_counter() - start)
            learned = f"Bench engram {i}: deploy window is Thursday {i}."
            start = time.perf_counter()
            client.learn(learned, scope=SCOPE)
            index = folder / "MEMORY.md"
            _until(lambda: learned[:40] in index.read_text(encoding="utf-8"))
            rows["engram_to_file_s"].append(time.perf_counter() - start)
    finally:
        reader.close()
        client.close()
        daemon.stop(home)
    summary = {k: {"p50": round(statistics.median(v), 3), "max": round(max(v), 3), "n": len(v)} for k, v in rows.items()}
    out = {"engrams": args.engrams, "runs": args.runs, "summary": summary, "rows": rows}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
