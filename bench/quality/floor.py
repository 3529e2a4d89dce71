"""Choose the relevance floor from benchmark rows: ``python -m bench.quality.floor RUN_DIR [RUN_DIR...]``.

Each run folder holds a ``per_question.jsonl`` written with ``--set relevance_floor=off`` (so every
row's ``candidates`` are the unfloored top ``recall_k`` hits: ``[score, gold, line tokens, below]``).
The block of any floor is replayed offline as :func:`plur.prompt.block.build_block` builds it (hits
by score while the budget holds), and floors are compared by:

* **gold kept**: gold notes in the floored blocks / gold notes in the unfloored blocks (summed over
  questions);
* **notes cut**: 1 - notes per question with the floor / notes per question without it.

Criterion (written down before looking at the held-out split), on LoCoMo conversations 1-5, turn
level, default path (``hybrid-weighted``), floors of the form ``score >= max(min_score, top_ratio * best)``:

1. ``top_ratio``: the largest (steps of 0.02) that keeps >= 98% of the gold notes the unfloored
   block holds, i.e. the one that cuts the most notes at that cost;
2. ``min_score``: the largest (steps of 0.02) that keeps exactly as many gold notes as step 1 (the
   absolute part may only drop notes that are not gold there; it is what empties the block of a
   query nothing matches). Used as is for BM25 only; with a model LoCoMo's candidates all carry
   lexical evidence (names, dates) and this bound is loose, so the model's floor comes from
   unrelated pairs instead (:mod:`bench.quality.floor_noise`).

The chosen floor is then reported on conversations 6-10, per category, and on the LongMemEval files.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from plur.prompt.block import FENCE_CLOSE, FENCE_OPEN, HEADER, estimate_tokens

FRAME = estimate_tokens(FENCE_OPEN + "\n" + HEADER + "\n" + FENCE_CLOSE)
Rule = Callable[[float, float], bool]


def replay(cands: Sequence[Sequence[float]], keep: Rule, budget_tokens: int = 2000) -> tuple[int, int, int]:
    """``(notes, gold notes, tokens)`` of the block a floor rule ``keep(score, top)`` gives for one question."""
    top = max((c[0] for c in cands), default=0.0)
    used, notes, gold = FRAME, 0, 0
    for score, is_gold, cost, *_ in cands:
        if keep(score, top) and used + cost <= budget_tokens:
            used += cost
            notes += 1
            gold += int(is_gold)
    return notes, gold, used if notes else 0


def evaluate(rows: Iterable[Mapping[str, Any]], keep: Rule, budget_tokens: int = 2000) -> dict[str, float]:
    """Totals of one rule over rows, against no floor: notes/q, gold kept, notes cut, tokens/q, precision."""
    n = notes = gold = toks = base_notes = base_gold = 0
    prec: list[float] = []
    for r in rows:
        a = replay(r["candidates"], keep, budget_tokens)
        b = replay(r["candidates"], lambda s, t: True, budget_tokens)
        n += 1
        notes, gold, toks = notes + a[0], gold + a[1], toks + a[2]
        base_notes, base_gold = base_notes + b[0], base_gold + b[1]
        if a[0]:
            prec.append(a[1] / a[0])
    if not n:
        return {"n": 0}
    return {"n": n, "notes": notes / n, "tokens": toks / n, "gold_kept": gold / base_gold if base_gold else 1.0,
            "notes_cut": 1 - notes / base_notes if base_notes else 0.0,
            "precision": sum(prec) / len(prec) if prec else 0.0, "base_notes": base_notes / n}


def choose(rows: Sequence[Mapping[str, Any]], gold_kept: float = 0.98, budget_tokens: int = 2000
           ) -> tuple[float, float, dict[str, float]]:
    """``(min_score, top_ratio, metrics on rows)`` by the criterion of the module docstring."""
    best_r, best = 0.0, evaluate(rows, lambda s, t: True, budget_tokens)
    for r100 in range(2, 100, 2):
        r = r100 / 100
        m = evaluate(rows, lambda s, t, r=r: s >= r * t, budget_tokens)
        if m["gold_kept"] >= gold_kept and m["notes_cut"] >= best["notes_cut"]:
            best_r, best = r, m
    best_a = 0.0
    for a100 in range(2, 100, 2):
        a = a100 / 100
        m = evaluate(rows, lambda s, t, a=a: s >= a and s >= best_r * t, budget_tokens)
        if m["gold_kept"] < best["gold_kept"]:
            break
        best_a, best = a, m
    return best_a, best_r, best


def load(folders: Sequence[Path], variant: str) -> list[dict[str, Any]]:
    rows = []
    for f in folders:
        with open(Path(f) / "per_question.jsonl", encoding="utf-8") as fh:
            rows += [r for r in map(json.loads, fh) if r["variant"] == variant and "candidates" in r]
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.floor", description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders (LoCoMo first), written with relevance_floor=off")
    p.add_argument("--variant", default="hybrid-weighted")
    p.add_argument("--tune", default="1-5", help="LoCoMo conversations to choose on (default 1-5)")
    p.add_argument("--gold-kept", type=float, default=0.98, help="least share of the gold notes kept (0.98)")
    p.add_argument("--budget", type=int, default=2000)
    args = p.parse_args(argv)
    lo, _, hi = args.tune.partition("-")
    tune_set = set(range(int(lo), int(hi or lo) + 1))
    rows = load(args.runs, args.variant)
    loc = [r for r in rows if r["dataset"] == "locomo" and r["scored"]]
    tune = [r for r in loc if r.get("conversation") in tune_set]
    a, r, m = choose(tune, args.gold_kept, args.budget)

    def keep(s: float, t: float) -> bool:
        return s >= a and s >= r * t

    print(f"chosen on LoCoMo {args.tune}: min_score {a:.2f} top_ratio {r:.2f}: "
          + json.dumps({k: round(v, 4) for k, v in m.items()}))
    pops: list[tuple[str, list[dict[str, Any]]]] = [
        (f"locomo {args.tune} (tuning)", tune),
        ("locomo held out", [r for r in loc if r.get("conversation") not in tune_set])]
    for g in sorted({r["group"] for r in loc}):
        pops.append((f"locomo held out {g}", [r for r in loc if r.get("conversation") not in tune_set
                                              and r["group"] == g]))
    lme = [r for r in rows if r["dataset"] == "longmemeval"]
    if lme:
        pops += [("longmemeval headline", [r for r in lme if r["primary"]]),
                 ("longmemeval abstention", [r for r in lme if not r["primary"]])]
    for label, pop in pops:
        e = evaluate(pop, keep, args.budget)
        print(f"{label}: " + json.dumps({k: round(v, 4) for k, v in e.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
