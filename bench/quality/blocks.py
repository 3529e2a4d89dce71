"""What the memory block injects per question: notes, gold notes, tokens (beside the ranking metrics).

The block is built exactly as a host gets it: the recall's top ``recall_k`` hits go through
:func:`plur.prompt.selection.select_block` (relevance floor, then :func:`plur.prompt.block.build_block`
at ``budget_tokens``), the selection every host path makes, with the overview of what memory holds
(:mod:`plur.prompt.overview`) when no hit clears the floor or the question asks about the user as a whole
(its tokens count in ``tokens``, the notes it lists in ``notes``). Each per-question row gets::

    "block":         {"notes", "gold_notes", "gold_ids", "tokens", "kept_out"}   # with the floor
    "block_nofloor": {"notes", "gold_notes", "gold_ids", "tokens"}               # same hits, no floor
    "candidates":    [[score, gold 0/1, line tokens, below_floor 0/1, cosine, date_match 0/1, bm25], ...]
                                                                                 # the top recall_k hits
    "scores":        [score, ...]                                                # every hit of the recall

``gold_notes``: notes (engrams) in the block that stand for at least one gold corpus id;
``gold_ids``: gold corpus ids the block covers (an engram may stand for duplicates). Block
precision = gold_notes / notes (questions with an empty block left out of its mean), block
recall = gold_ids / n_gold. ``candidates`` lets :mod:`bench.quality.floor` replay any floor offline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from plur.prompt.block import engram_line, estimate_tokens


def _when(now: str | None) -> datetime:
    if not now:
        return datetime.now(timezone.utc)
    t = datetime.fromisoformat(now.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _count(block: Any, docs_of: Mapping[str, Sequence[str]], gold: Collection[str]) -> dict[str, int]:
    gold_set = set(gold)
    ids = [d for e in block.engram_ids for d in docs_of.get(e, ())]
    return {"notes": len(block.engram_ids),
            "gold_notes": sum(1 for e in block.engram_ids if gold_set.intersection(docs_of.get(e, ()))),
            "gold_ids": len(gold_set.intersection(ids)), "tokens": block.tokens}


def block_fields(hits: Sequence[Any], docs_of: Mapping[str, Sequence[str]], gold: Collection[str], *,
                 recall_k: int, budget_tokens: int, now: str | None,
                 overview: Callable[[Sequence[Any]], tuple[Sequence[str], Sequence[str]]] | None = None
                 ) -> dict[str, Any]:
    """The ``block``, ``block_nofloor`` and ``candidates`` fields of one question's row (see module doc).

    Args:
        hits: the recall's hits, best first, floor marked (``Memory.recall``).
        docs_of: engram id -> the corpus ids it stands for.
        gold: gold corpus ids.
        recall_k: hits a host's block is built from (setting ``recall_k``).
        budget_tokens: the block budget (setting ``budget_tokens``).
        now: the question's date (ISO-8601), for validity windows.
        overview: the top hits -> the overview's ``(lines, engram ids)`` a host's block would end with
            (:func:`plur.prompt.selection.overview_lines`; empty when it carries none), or ``None``.
    """
    from plur.prompt.selection import select_block

    top = list(hits[:recall_k])
    when = _when(now)
    sel = select_block(top, budget_tokens, when, overview=overview(top) if overview is not None else ((), ()))
    bare = select_block([dataclasses.replace(h, below_floor="") for h in top], budget_tokens, when)
    gold_set = set(gold)
    cands = [[round(float(h.score), 5), int(bool(gold_set.intersection(docs_of.get(h.engram.id, ())))),
              estimate_tokens(engram_line(h.engram) + "\n"), int(bool(h.below_floor)),
              None if h.dense_score is None else round(float(h.dense_score), 4), int(h.date_match),
              None if h.bm25_score is None else round(float(h.bm25_score), 4)] for h in top]
    return {"block": {**_count(sel.block, docs_of, gold), "kept_out": len(sel.kept_out),
                      "overview": int(sel.block.overview)},
            "block_nofloor": _count(bare.block, docs_of, gold), "candidates": cands,
            "scores": [round(float(h.score), 4) for h in hits]}


def block_means(rows: Sequence[Mapping[str, Any]], key: str = "block") -> dict[str, float]:
    """Means over rows carrying ``key``: notes, tokens, gold notes per question, block precision and recall.

    Returns:
        ``{"n", "notes", "tokens", "gold_notes", "precision", "recall", "empty"}``: ``precision`` over
        questions with a non-empty block, ``recall`` over questions with gold, ``empty`` the share of
        questions whose block is empty; ``{"n": 0}`` without such rows.
    """
    got = [r for r in rows if key in r]
    if not got:
        return {"n": 0}
    blocks = [r[key] for r in got]
    nonempty = [b for b in blocks if b["notes"]]
    with_gold = [(b, r["n_gold"]) for b, r in zip(blocks, got) if r["n_gold"]]
    n = len(blocks)
    return {"n": n, "notes": sum(b["notes"] for b in blocks) / n, "tokens": sum(b["tokens"] for b in blocks) / n,
            "gold_notes": sum(b["gold_notes"] for b in blocks) / n,
            "precision": (sum(b["gold_notes"] / b["notes"] for b in nonempty) / len(nonempty)) if nonempty else 0.0,
            "recall": (sum(b["gold_ids"] / g for b, g in with_gold) / len(with_gold)) if with_gold else 0.0,
            "empty": sum(1 for b in blocks if not b["notes"]) / n}


def block_markdown(rows: Sequence[Mapping[str, Any]], groups: Sequence[tuple[str, Any]]) -> list[str]:
    """Markdown: for each (label, row filter), the block without and with the floor, and the gold kept.

    Args:
        rows: per-question rows of one variant (default path).
        groups: ``(label, predicate(row) -> bool)`` pairs, e.g. splits and categories.
    """
    head = ["population", "n", "notes/q", "tokens/q", "precision", "recall", "empty",
            "notes/q floor", "tokens/q floor", "precision floor", "recall floor", "empty floor",
            "gold kept", "notes cut"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, pred in groups:
        pick = [r for r in rows if pred(r) and "block" in r]
        if not pick:
            continue
        a, b = block_means(pick, "block_nofloor"), block_means(pick, "block")
        gold_a = sum(r["block_nofloor"]["gold_notes"] for r in pick)
        gold_b = sum(r["block"]["gold_notes"] for r in pick)
        kept = f"{gold_b / gold_a:.3f}" if gold_a else "-"
        cut = f"{1 - b['notes'] / a['notes']:.3f}" if a["notes"] else "-"
        out.append(f"| {label} | {a['n']} | " + " | ".join(
            f"{m[k]:.3f}" if k != "tokens" else f"{m[k]:.1f}"
            for m in (a, b) for k in ("notes", "tokens", "precision", "recall", "empty")) + f" | {kept} | {cut} |")
    return out


def summary_markdown(rows: Sequence[Mapping[str, Any]], dataset: str) -> list[str]:
    """The ``summary.md`` section on the block: per variant, by split (LoCoMo), population and group.

    Populations: the headline questions; the questions whose answer is not in the history
    (LoCoMo category 5, LongMemEval ``_abs``), where an ideal block is empty; every group.
    """
    variants = [v for v in dict.fromkeys(r["variant"] for r in rows) if any("block" in r and r["variant"] == v
                                                                               for r in rows)]
    if not variants:
        return []
    out = ["## The memory block (default path: top recall_k hits at budget_tokens, without / with the "
           "relevance floor)", "",
           "notes/q and tokens/q: what the block injects per question; precision: gold notes / notes (questions "
           "with a non-empty block); recall: gold ids in the block / gold ids; empty: share of empty blocks; "
           "gold kept: gold notes with the floor / without it; notes cut: 1 - notes with / without. "
           "`no answer in history`: LoCoMo category 5, LongMemEval `_abs` (an ideal block is empty there).", ""]
    groups = sorted({r["group"] for r in rows if r["scored"]})
    for v in variants:
        vrows = [r for r in rows if r["variant"] == v]
        pops: list[tuple[str, Any]] = []
        if dataset == "locomo":
            for label, lo, hi in (("1-5", 1, 5), ("6-10", 6, 10), ("all", 1, 10)):
                pops.append((f"{label} headline", lambda r, lo=lo, hi=hi: r["primary"] and lo <= r.get("conversation", 0) <= hi))
                pops.append((f"{label} no answer in history (cat5)",
                             lambda r, lo=lo, hi=hi: r.get("category") == 5 and lo <= r.get("conversation", 0) <= hi))
                pops += [(f"{label} {g}", lambda r, g=g, lo=lo, hi=hi: r["scored"] and r["group"] == g
                          and lo <= r.get("conversation", 0) <= hi) for g in groups if g != "cat5"]
        else:
            pops.append(("headline", lambda r: r["primary"]))
            pops.append(("no answer in history (_abs)", lambda r: not r["primary"]))
            pops += [(g, lambda r, g=g: r["group"] == g) for g in groups]
        out += [f"### {v}", ""] + block_markdown(vrows, pops) + [""]
    return out
