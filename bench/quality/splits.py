"""LoCoMo by conversation split: tuning (1-5), held out (6-10) and all, per variant, level and category.

Every new default of issue 12 was chosen on conversations 1-5 only; the held-out split 6-10 is
what the choice is judged on. Pure functions over per-question rows (each LoCoMo row carries its
1-based ``conversation`` number).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .metrics import mean_metrics

SPLITS: tuple[tuple[str, frozenset[int] | None], ...] = (
    ("1-5 (tuning)", frozenset(range(1, 6))), ("6-10 (held out)", frozenset(range(6, 11))), ("all", None))
METRICS: tuple[str, ...] = ("recall_any@5", "ndcg_any@5", "recall_any@10", "ndcg_any@10")


def split_means(rows: Sequence[Mapping[str, Any]], level: str, variant: str, split: frozenset[int] | None,
                group: str | None = None) -> tuple[dict[str, float], int]:
    """Mean metrics of headline rows (``primary``) of one variant/level in a split (and group)."""
    pick = [r for r in rows if r["variant"] == variant and r["primary"] and level in r["metrics"]
            and (split is None or r.get("conversation") in split) and (group is None or r["group"] == group)]
    return mean_metrics(r["metrics"][level] for r in pick)


def split_markdown(rows: Sequence[Mapping[str, Any]], granularity: str) -> list[str]:
    """Markdown tables: headline by split, then per category by split (R_any@10 and NDCG@5)."""
    if not rows or not all("conversation" in r for r in rows):
        return []
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    levels = [lvl for lvl in ("turn", "session") if any(lvl in r["metrics"] for r in rows)]
    groups = sorted({r["group"] for r in rows if r["primary"]})
    out = ["## By conversation split (defaults tuned on 1-5 only)", ""]
    for level in levels:
        title = f"{level} (from turn ranking)" if granularity == "turn" and level == "session" else level
        out += [f"### {title}", "", "| variant | split | n | " + " | ".join(METRICS) + " |",
                "|" + "---|" * (3 + len(METRICS))]
        for v in variants:
            for name, split in SPLITS:
                means, n = split_means(rows, level, v, split)
                if not n:
                    continue
                out.append(f"| {v} | {name} | {n} | " + " | ".join(f"{means.get(m, 0):.3f}" for m in METRICS) + " |")
        out += ["", f"{title}, per category (R_any@10 / NDCG@5):", "",
                "| variant | split | " + " | ".join(groups) + " |", "|" + "---|" * (2 + len(groups))]
        for v in variants:
            for name, split in SPLITS:
                if not split_means(rows, level, v, split)[1]:
                    continue
                cells = []
                for g in groups:
                    means, n = split_means(rows, level, v, split, g)
                    cells.append(f"{means.get('recall_any@10', 0):.3f} / {means.get('ndcg_any@5', 0):.3f} (n={n})")
                out.append(f"| {v} | {name} | " + " | ".join(cells) + " |")
        out.append("")
    return out
