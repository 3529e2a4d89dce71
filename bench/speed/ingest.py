"""Benchmark conversation ingest: turns/s for a 10k-turn history, re-ingest cost, and the first recall after it.

* **ingest** (turns/s): ``Memory.ingest`` of ``--turns`` user turns (plus as many assistant turns,
  parsed and skipped) in one LongMemEval-shaped entry, sessions of 20 user turns with ids and dates,
  so every turn carries the full provenance; ``fsync`` on (the default) and off.
* **re-ingest** (s): the same data again (every turn skipped by its provenance key), then with one
  more turn appended (one engram written).
* **first recall** (s): a fresh ``Memory`` on that home (BM25 only, ``model=none``) opening the
  index from the store and answering one query (the index catch-up a user sees after an ingest).

Turn texts: LongMemEval-S user turns from ``../shared/data`` when present, else synthetic; each made
unique with a counter.

Run:  python -m bench.speed.ingest [--turns 10000] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.speed.store import statements  # noqa: E402
from plur.memory import Memory  # noqa: E402

SESSION_TURNS = 20


def haystack(n_user: int) -> list[dict[str, Any]]:
    """One LongMemEval-shaped entry with ``n_user`` user turns (and as many assistant turns)."""
    texts = statements(n_user)
    sessions, ids, dates = [], [], []
    for s in range(0, n_user, SESSION_TURNS):
        turns = []
        for t in texts[s:s + SESSION_TURNS]:
            turns += [{"role": "user", "content": t}, {"role": "assistant", "content": "Noted."}]
        sessions.append(turns)
        ids.append(f"bench_{s // SESSION_TURNS}")
        dates.append(f"2023/05/{1 + (s // SESSION_TURNS) % 28:02d} (Mon) 10:00")
    return [{"question_id": "bench", "haystack_session_ids": ids, "haystack_dates": dates,
             "haystack_sessions": sessions}]


def run(n_user: int, fsync: bool) -> dict[str, float]:
    data = haystack(n_user)
    with tempfile.TemporaryDirectory(prefix="plur-bench-ingest-") as tmp:
        home = Path(tmp) / "home"
        with Memory(home, model="none", fsync=fsync) as mem:
            t0 = time.perf_counter()
            out = mem.ingest(data, progress=False)
            ingest_s = time.perf_counter() - t0
            assert len(out.added) == n_user, (len(out.added), n_user)
            t0 = time.perf_counter()
            again = mem.ingest(data, progress=False)
            reingest_s = time.perf_counter() - t0
            assert again.added == ()
            data[0]["haystack_sessions"][-1].append({"role": "user", "content": "One more turn at the end."})
            t0 = time.perf_counter()
            assert len(mem.ingest(data, progress=False).added) == 1
            append_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with Memory(home, model="none") as fresh:
            fresh.recall("weekend plans", 10, record=False)
        first_recall_s = time.perf_counter() - t0
    return {"turns": n_user, "fsync": fsync, "ingest_s": round(ingest_s, 3),
            "turns_per_s": round(n_user / ingest_s, 1), "reingest_s": round(reingest_s, 3),
            "append_one_s": round(append_s, 3), "first_recall_s": round(first_recall_s, 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=10_000, help="user turns to ingest (default 10,000)")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    rows = [run(args.turns, fsync=True), run(args.turns, fsync=False)]
    result = {"machine": {"python": platform.python_version(), "platform": platform.platform()}, "rows": rows}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
