"""The newest fact wins (issue 46, B): written cases, LongMemEval's knowledge-update items, and the cost per turn.

    python -m bench newest cases        [--data tests/data/newest_facts.yaml]
    python -m bench newest longmemeval  [--data-dir ../shared/data/longmemeval]
    python -m bench newest cost         [--notes 10000] [--turns 200]

Each part runs with setting ``newest_first`` on and off (:mod:`plur.index.updates`), the packaged MiniLM model.

* ``cases``: each case of ``tests/data/newest_facts.yaml`` is captured turn by turn into a fresh home
  (``Memory.capture``, the hosts' path), then the memory block is selected for its question
  (:func:`plur.prompt.selection.recall_selection`). An update case passes when the newest fact's note is
  the block's first note, and every earlier version the block shows comes after it marked ``earlier than``
  (none dropped that the block showed with the rule off). A compatible case passes when its block is
  the same with the rule on and off.
* ``longmemeval``: each knowledge-update question of the LongMemEval files (turn granularity, the user
  turns of its haystack learned with their session dates as the benchmark learns them): the rank of the
  newer and the older evidence turn among the hits, and their places in the block.
* ``cost``: a home of ``--notes`` conversation notes (sentences of the LongMemEval file, sessions of 20 turns,
  one a day), then ``--turns`` user turns (the cases' turns and questions), each handled as a host does: the
  block for the turn, then its capture. The block is selected twice per turn, rule on and off back to back
  (order alternating, the query embedded before either, as a host's recall has it), so the median of the
  per-turn differences is the added cost per captured turn; the stage alone
  (:func:`plur.memory.recall.newest_first` on the hits it reads) is timed too. The rule adds nothing to capture.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..datasets.paths import REPO, SHARED_DATA

CASES = REPO / "tests" / "data" / "newest_facts.yaml"
LONGMEMEVAL = SHARED_DATA / "longmemeval"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


# -- the written cases ------------------------------------------------------------------------------

def load_cases(path: str | Path = CASES) -> list[dict[str, Any]]:
    """The cases of ``path`` (YAML list; see its header)."""
    import yaml

    return list(yaml.safe_load(Path(path).read_text(encoding="utf-8")))


def when_of(value: Any) -> str:
    """A case's turn time (a YAML date, date-time or text) as ISO-8601 UTC; a bare day is noon."""
    if isinstance(value, datetime):
        return value.isoformat() + ("" if value.tzinfo else "Z")
    if isinstance(value, date):
        return value.isoformat() + "T12:00:00Z"
    return str(value)


def note_lines(block_text: str) -> list[str]:
    """The note lines of a block (``- [...] ...``), in order."""
    return [line for line in block_text.splitlines() if line.startswith("- [")]


def capture_case(mem: Any, case: Mapping[str, Any]) -> None:
    """Capture ``case``'s turns into ``mem``, in order, one conversation."""
    for turn, (when, text) in enumerate(case["turns"]):
        mem.capture(text, session=f"case-{case['id']}", turn=turn, when=when_of(when), mode="user")


def blocks(mem: Any, question: str) -> tuple[list[str], list[str]]:
    """The block's note lines for ``question`` with the rule on and off."""
    from plur.prompt.selection import recall_selection

    keep = mem.settings
    try:
        out = []
        for on in (True, False):
            mem.settings = keep.replace(newest_first=on)
            out.append(note_lines(recall_selection(mem, question, overview=False).block.text))
        return out[0], out[1]
    finally:
        mem.settings = keep


def verdict(case: Mapping[str, Any], on: Sequence[str], off: Sequence[str]) -> str:
    """'' when the block ``on`` (rule on; ``off``: rule off) does what ``case`` asks, else why not."""
    marked = [line for line in on if "| earlier than " in line.split("] ", 1)[0]]
    if case["kind"] == "compatible":
        if marked:
            return f"marked earlier: {marked[0]}"
        return "" if list(on) == list(off) else "order changed"
    if not on or case["newest"] not in on[0].split("] ", 1)[1]:
        return f"first note is not the newest ({case['newest']!r})"
    older = list(case.get("older", ()))
    for piece in older:
        shown = [i for i, line in enumerate(on) if piece in line.split("] ", 1)[1]]
        if any(piece in line for line in off) and not shown:
            return f"earlier version {piece!r} dropped"
        if shown and on[shown[0]] not in marked:
            return f"earlier version {piece!r} not marked earlier"
    wrong = [line for line in marked if not any(p in line.split("] ", 1)[1] for p in older)]
    return f"marked earlier but not a version: {wrong[0]}" if wrong else ""


def run_cases(embedder: Any, path: str | Path = CASES) -> list[dict[str, Any]]:
    """One row per case: ``{id, kind, verdict, lead_on, lead_off}``: the verdict of the rule ('' = passes) and
    each arm's first note."""
    from plur.memory import Memory

    rows = []
    for case in load_cases(path):
        with tempfile.TemporaryDirectory(prefix="plur-bench-newest-") as home, \
                Memory(home, embedder=embedder, model=MODEL, record_stats=False, fsync=False) as mem:
            capture_case(mem, case)
            on, off = blocks(mem, case["question"])
        rows.append({"id": case["id"], "kind": case["kind"], "verdict": verdict(case, on, off),
                     "lead_on": on[0].split("] ", 1)[1] if on else "", "lead_off": off[0].split("] ", 1)[1] if off else ""})
    return rows


# -- LongMemEval knowledge-update items ---------------------------------------------------------------

def knowledge_updates(folder: Path = LONGMEMEVAL) -> list[Any]:
    """Turn-granularity tasks of the knowledge-update questions in every LongMemEval file of ``folder``."""
    from ..datasets.longmemeval import load_tasks

    tasks = []
    for path in sorted(folder.glob("*.json")):
        got, _ = load_tasks(path, "turn")
        tasks += [t for t in got if t.queries[0].extra.get("question_type") == "knowledge-update"]
    return tasks


def run_longmemeval(embedder: Any, folder: Path = LONGMEMEVAL) -> list[dict[str, Any]]:
    """Per knowledge-update question and arm: ranks of the older and newer evidence turns, and block places."""
    from plur.memory import Memory
    from plur.prompt.selection import select_block

    from ..engine.runner import Engine, EngineConfig

    engine = Engine(EngineConfig("longmemeval", "turn", model=MODEL), embedder=embedder)
    rows = []
    for task in knowledge_updates(folder):
        query = task.queries[0]
        meta = dict(zip(task.doc_ids, task.meta))
        gold = sorted(query.gold, key=lambda d: (meta[d].date or "", meta[d].turn or 0))
        with tempfile.TemporaryDirectory(prefix="plur-bench-newest-") as home, \
                Memory(home, embedder=embedder, **engine.config.settings_overrides()) as mem:
            docs = [(d, t) for d, t in zip(task.doc_ids, task.texts) if t.strip()]
            docs_of, _ = engine._learn(mem, docs, [meta[d] for d, _ in docs])
            engram_of = {d: e for e, ds in docs_of.items() for d in ds}
            for on in (True, False):
                mem.settings = mem.settings.replace(newest_first=on)
                hits = mem.recall(query.text, k=mem.settings.recall_k, record=False, now=query.now)
                ids = [h.engram.id for h in hits]
                block = select_block(hits, mem.settings.budget_tokens, now=None).block
                lines = note_lines(block.text)
                row: dict[str, Any] = {"qid": query.qid, "rule": "on" if on else "off", "question": query.text}
                for label, doc in (("older", gold[0]), ("newer", gold[-1])):
                    eid = engram_of.get(doc)
                    row[f"{label}_rank"] = ids.index(eid) + 1 if eid in ids else None
                    place = [i + 1 for i, line in enumerate(lines) if eid and line.startswith(f"- [{eid} ")]
                    row[f"{label}_in_block"] = place[0] if place else None
                    row[f"{label}_marked"] = bool(place) and "| earlier than " in lines[place[0] - 1].split("] ", 1)[0]
                rows.append(row)
    return rows


# -- cost per captured turn ----------------------------------------------------------------------------

def _home_notes(n: int) -> list[dict[str, Any]]:
    from ..speed.store import statements

    out = []
    for i, text in enumerate(statements(n)):
        day = date.fromordinal(date(2022, 1, 1).toordinal() + i // 20)
        out.append({"statement": text, "created": f"{day.isoformat()}T12:00:00Z",
                    "source": {"kind": "conversation", "format": "bench", "session": f"s{i // 20}",
                               "turn": i % 20, "role": "user"}})
    return out


def run_cost(embedder: Any, notes: int = 10_000, turns: int = 200, cache_dir: str | None = None) -> dict[str, Any]:
    """ms per captured turn: the block for the turn with the rule on and off (same text, back to back, order
    alternating, the query's embedding warm in both), then the turn's capture; and the stage alone.

    Returns:
        ``{notes, turns, block_p50_on_ms, block_p50_off_ms, added_p50_ms (median of the per-turn differences),
        added_p95_ms, capture_p50_ms, turn_p50_ms (block with the rule + capture), stage_p50_ms, stage_p95_ms}``.
    """
    from plur.index.updates import TOP
    from plur.memory import Memory
    from plur.memory.recall import newest_first
    from plur.prompt.selection import recall_selection

    texts: list[str] = []
    for case in load_cases():
        texts += [t for _, t in case["turns"]] + [case["question"]]
    texts = (texts * (turns // len(texts) + 1))[:turns]
    arms: dict[bool, list[float]] = {True: [], False: []}
    added: list[float] = []
    capture: list[float] = []
    stage: list[float] = []
    extra = {"cache_dir": cache_dir} if cache_dir else {}
    with tempfile.TemporaryDirectory(prefix="plur-bench-newest-") as home, \
            Memory(home, embedder=embedder, model=MODEL, record_stats=False, fsync=False, **extra) as mem:
        items = _home_notes(notes)
        for i in range(0, notes, 1000):
            mem.learn_many(items[i:i + 1000])
        mem.catchup.wait()
        mem.catch_up(progress=False)
        base = mem.settings
        for i, text in enumerate(texts):
            mem.settings = base.replace(newest_first=False)
            recall_selection(mem, text, overview=False)             # the query's embedding, as the host's recall has it
            took = {}
            for on in ((True, False) if i % 2 == 0 else (False, True)):
                mem.settings = base.replace(newest_first=on)
                t0 = time.perf_counter()
                recall_selection(mem, text, overview=False)
                took[on] = (time.perf_counter() - t0) * 1000.0
                arms[on].append(took[on])
            added.append(took[True] - took[False])
            mem.settings = base.replace(newest_first=False)
            hits = mem.recall(text, k=max(TOP, base.recall_k), record=False)
            t0 = time.perf_counter()
            newest_first(mem, text, hits)                           # the stage alone, on the hits it reads
            stage.append((time.perf_counter() - t0) * 1000.0)
            t0 = time.perf_counter()
            mem.capture(text, session="turns", turn=i, mode="user")
            capture.append((time.perf_counter() - t0) * 1000.0)
        mem.settings = base

    def p(xs: list[float], q: int) -> float:
        return round(statistics.quantiles(xs, n=100)[q - 1] if len(xs) > 1 else xs[0], 3)

    return {"notes": notes, "turns": turns, "block_p50_on_ms": p(arms[True], 50), "block_p50_off_ms": p(arms[False], 50),
            "added_p50_ms": p(added, 50), "added_p95_ms": p(added, 95), "capture_p50_ms": p(capture, 50),
            "turn_p50_ms": p([a + c for a, c in zip(arms[True], capture)], 50),
            "stage_p50_ms": p(stage, 50), "stage_p95_ms": p(stage, 95)}


# -- command line ----------------------------------------------------------------------------------------

def _embedder() -> Any:
    from plur.config import load_settings
    from plur.embed.resolve import resolve_embedder

    with tempfile.TemporaryDirectory() as tmp:
        res = resolve_embedder(load_settings(tmp, model=MODEL, device="cpu"))
    if res.embedder is None:
        raise SystemExit(f"no embedding model: {res.reason}")
    return res.embedder


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench newest", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    c = sub.add_parser("cases", help="the written cases")
    c.add_argument("--data", type=Path, default=CASES)
    lm = sub.add_parser("longmemeval", help="LongMemEval's knowledge-update items")
    lm.add_argument("--data-dir", type=Path, default=LONGMEMEVAL)
    co = sub.add_parser("cost", help="added cost per captured turn")
    co.add_argument("--notes", type=int, default=10_000)
    co.add_argument("--turns", type=int, default=200)
    co.add_argument("--cache-dir", help="embedding cache folder (default: the home's)")
    for p in (c, lm, co):
        p.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    emb = _embedder()
    if args.part == "cases":
        rows: Any = run_cases(emb, args.data)
        cases = {c["id"]: c for c in load_cases(args.data)}
        upd = [r for r in rows if r["kind"] != "compatible"]
        comp = [r for r in rows if r["kind"] == "compatible"]

        def leads(r: Mapping[str, Any], arm: str) -> bool:
            return cases[r["id"]]["newest"] in r[f"lead_{arm}"]

        print(f"update cases ({len(upd)}): the newest fact leads the block: rule on {sum(leads(r, 'on') for r in upd)}, "
              f"rule off {sum(leads(r, 'off') for r in upd)}; every check passes (earlier versions kept and marked): "
              f"{sum(not r['verdict'] for r in upd)}")
        print(f"compatible cases ({len(comp)}): block unchanged, nothing marked: {sum(not r['verdict'] for r in comp)}")
        for r in rows:
            if r["verdict"]:
                print(f"  FAIL {r['id']}: {r['verdict']}")
    elif args.part == "longmemeval":
        rows = run_longmemeval(emb, args.data_dir)
        print("| question | rule | older: rank / block place / marked | newer: rank / block place |")
        print("|---|---|---|---|")
        for r in rows:
            print(f"| {r['qid']} | {r['rule']} | {r['older_rank']} / {r['older_in_block']} / {r['older_marked']} | "
                  f"{r['newer_rank']} / {r['newer_in_block']} |")
    else:
        rows = run_cost(emb, args.notes, args.turns, args.cache_dir)
        print(json.dumps(rows, indent=1))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
