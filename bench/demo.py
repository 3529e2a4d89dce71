"""The README's main job: one real LongMemEval conversation, learned, recalled and benchmarked.

``python -m bench demo [--data FILE] [--model M]``:

1. learns every user turn of the question's haystack (a real LongMemEval-S conversation history, ~40
   sessions) into a fresh temporary store, one engram per turn, dated by its session;
2. recalls for the question and prints the hits with both legs' ranks, marking the gold evidence turns;
3. prints the memory block the prompt section would inject;
4. runs the retrieval benchmark (official LongMemEval protocol) on the same file for bm25 / dense / hybrid
   at session and turn granularity and prints the summary.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .datasets import longmemeval

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "data" / "longmemeval_sample.json"
_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2})\s*(?:\(\w+\))?\s*(\d{2}):(\d{2})")


def haystack_date(text: str) -> datetime | None:
    """``'2023/05/20 (Sat) 02:21'`` (LongMemEval's format) -> aware UTC datetime, or None."""
    m = _DATE.search(text or "")
    if not m:
        return None
    y, mo, d, h, mi = (int(x) for x in m.groups())
    return datetime(y, mo, d, h, mi, tzinfo=timezone.utc)


def _clip(text: str, n: int = 96) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def run(data: Path, model: str | None, k: int) -> dict[str, Any]:
    """Learn, recall and print; returns ``{engrams, hits, gold_found, recall_ms, learn_s}``."""
    from plur.memory import Memory
    from plur.prompt.block import build_block

    entries, _ = longmemeval.load_entries(data)
    entry = entries[0]
    question = str(entry["question"])
    with tempfile.TemporaryDirectory(prefix="plur-demo-") as home:
        overrides = {"model": model} if model else {}
        mem = Memory(home, fsync=False, **overrides)
        items = []
        for sid, date, session in zip(entry["haystack_session_ids"], entry["haystack_dates"],
                                      entry["haystack_sessions"]):
            for i, turn in enumerate(session):
                if turn.get("role") != "user" or not str(turn.get("content", "")).strip():
                    continue
                items.append({"statement": turn["content"], "type": "user", "created": haystack_date(date),
                              "source": {"kind": "longmemeval", "session": sid, "turn": i + 1,
                                         "evidence": bool(turn.get("has_answer"))}})
        t0 = time.perf_counter()
        learned = mem.learn_many(items)
        mem.recall("warm up the indexes", k=1, record=False)     # opens the indexes
        mem.catch_up(progress=False)  # a long queue is embedded in the background: wait, so "hybrid" is hybrid
        learn_s = time.perf_counter() - t0
        model_info = mem.model_resolution().as_dict()
        print(f"plur demo: question {entry['question_id']} ({entry.get('question_type')}), "
              f"{len(learned)} user turns from {len(entry['haystack_sessions'])} sessions learned and indexed "
              f"in {learn_s:.1f} s")
        print(f"model: {model_info['name']} (source: {model_info['source']}: {model_info['reason']})\n")
        print(f"Q: {question}\n")
        t0 = time.perf_counter()
        hits = mem.recall(question, k=k, agent="demo")
        recall_ms = (time.perf_counter() - t0) * 1000
        print(f"top-{k} hybrid recall in {recall_ms:.1f} ms   (* = gold evidence turn)")
        print(f"{'rank':>4} {'score':>7} {'bm25':>5} {'dense':>5}  {'session / turn':<24} statement")
        gold_found = 0
        for h in hits:
            src = h.engram.source or {}
            star = "*" if src.get("evidence") else " "
            gold_found += star == "*"
            print(f"{h.rank:>4} {h.score:7.4f} {h.bm25_rank or '-':>5} {h.dense_rank or '-':>5} {star}"
                  f"{str(src.get('session'))[:18] + '/' + str(src.get('turn')):<24} {_clip(h.engram.statement)}")
        block = build_block(hits, budget_tokens=600, pinned=mem.pinned(None))
        print(f"\nmemory block the prompt section would inject ({block.tokens} estimated tokens, budget 600):\n")
        print(block.text)
        mem.close()
    return {"engrams": len(learned), "hits": len(hits), "gold_found": gold_found, "recall_ms": recall_ms,
            "learn_s": learn_s}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench demo", description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=SAMPLE)
    ap.add_argument("--model", help="embedding model (default: plur's setting, with its loud fallback)")
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("--no-bench", action="store_true", help="skip the benchmark summary")
    args = ap.parse_args(argv)
    # A model fallback is said once, as the plur command says it (its log line), not also as a Python warning.
    warnings.filterwarnings("ignore", message="plur: embedding model")
    from plur.cli import log_to_stderr

    log_to_stderr()
    run(args.data, args.model, args.k)
    if args.no_bench:
        return 0
    from .cli import main as bench_main

    print("\n== retrieval benchmark on the same file (official LongMemEval protocol) ==\n")
    for gran in ("session", "turn"):
        code = bench_main(["longmemeval", "--data", str(args.data), "--granularity", gran,
                           "--fusion", "rrf,weighted", *(["--model", args.model] if args.model else [])])
        if code:
            return code
    return 0
