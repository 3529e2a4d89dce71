"""The peer bench's sets summed up: per-set ratios plur / peer with their p10/p50/p90, and each side's figures.

A *set* is one conversation with every arm run once (order rotating): ``{"conversation", "order",
"load", "<side>": {"ingest": {...}, "recall": {...}}}``. Ratios are taken per set (both sides under the
same load), then summarised; ``pooled`` is the sum over sets of plur's figure over the sum of the peer's.
Below 1: plur took less.
"""

from __future__ import annotations

from typing import Any

#: (label, phase, key) of the figures compared: ingest wall and CPU seconds, the cold recall (spawn to
#: first answer; its CPU seconds, interpreter start included) and the warm recall's median.
METRICS = (("ingest s", "ingest", "s"), ("ingest cpu s", "ingest", "cpu_s"),
           ("recall cold s", "recall", "cold_s"), ("recall cold cpu s", "recall", "cpu_s"),
           ("recall warm p50 s", "recall", "warm_p50_s"))


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, linear between order statistics (nan when empty)."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def spread(values: list[float]) -> dict[str, float]:
    """``{p10, p50, p90}`` of ``values``."""
    return {"p10": pct(values, 0.1), "p50": pct(values, 0.5), "p90": pct(values, 0.9)}


def figure(row: dict[str, Any], side: str, phase: str, key: str) -> float | None:
    """One side's figure in a set, or None when that arm did not run."""
    value = row.get(side, {}).get(phase, {}).get(key)
    return None if value is None else float(value)


def ratio(sets: list[dict[str, Any]], mine: str, peer: str, phase: str, key: str) -> dict[str, float] | None:
    """``{p10, p50, p90, pooled, sets}`` of ``mine / peer`` over the sets where both have the figure."""
    pairs = [(a, b) for row in sets if (a := figure(row, mine, phase, key)) is not None
             and (b := figure(row, peer, phase, key)) is not None and b > 0]
    if not pairs:
        return None
    return {**spread([a / b for a, b in pairs]), "pooled": sum(a for a, _ in pairs) / sum(b for _, b in pairs),
            "sets": len(pairs)}


def summarise(sets: list[dict[str, Any]], sides: list[str]) -> dict[str, Any]:
    """Ratios of plur (and capture, for ingest) over each peer, and each side's medians.

    Args:
        sets: the sets, as the module docstring says.
        sides: the arms run, e.g. ``["plur", "txtai", "mempalace", "capture"]``.
    """
    peers = [s for s in sides if s not in ("plur", "capture")]
    out: dict[str, Any] = {"sets": len(sets), "ratios": {}, "sides": {}}
    for mine in ("plur", "capture"):
        if mine not in sides:
            continue
        for peer in peers:
            for label, phase, key in METRICS:
                r = ratio(sets, mine, peer, phase, key)
                if r is not None:
                    out["ratios"][f"{mine}/{peer} {label}"] = r
    for side in sides:
        one: dict[str, Any] = {}
        for label, phase, key in METRICS:
            values = [v for row in sets if (v := figure(row, side, phase, key)) is not None]
            if values:
                one[label] = spread(values)
        turns = sum(row[side]["ingest"]["turns"] for row in sets if side in row)
        seconds = sum(row[side]["ingest"]["s"] for row in sets if side in row)
        one["turns_per_s"] = turns / seconds if seconds else float("nan")
        found = [row[side]["recall"]["found"] for row in sets if "recall" in row.get(side, {})]
        if found:
            one["evidence_found"] = sum(found) / len(found)
        runtimes = {row[side][phase]["runtime"] for row in sets for phase in ("ingest", "recall")
                    if "runtime" in row.get(side, {}).get(phase, {})}
        one["runtime"] = sorted(runtimes)
        out["sides"][side] = one
    loads = [v for row in sets for v in row.get("load", ())]
    out["load"] = {"min": min(loads), "max": max(loads)} if loads else None
    return out


def markdown(summary: dict[str, Any], title: str) -> str:
    """The summary as a few lines of text (ratio lines, then one line per side)."""
    lines = [f"{title}, {summary['sets']} sets, arms interleaved with rotating order (ratios below 1: plur took less)"]
    if summary["load"]:
        lines[0] += f"; 1-min load {summary['load']['min']:.2f}-{summary['load']['max']:.2f} across the sets"
    for name, r in summary["ratios"].items():
        faster = f"  ({1 / r['p50']:.1f}x)" if r["p50"] > 0 else ""
        lines.append(f"  {name:34} p10 {r['p10']:.3f}  p50 {r['p50']:.3f}  p90 {r['p90']:.3f}  "
                     f"pooled {r['pooled']:.3f}{faster}")
    for side, one in summary["sides"].items():
        parts = "  ".join(f"{label} p50 {v['p50']:.3f}" for label, v in one.items() if isinstance(v, dict))
        found = f"  evidence in top k {one['evidence_found']:.2f}" if "evidence_found" in one else ""
        lines.append(f"  {side:9} {one['turns_per_s']:.0f} turns/s; {parts}{found}")
        for rt in one["runtime"]:
            lines.append(f"  {'':9} runtime: {rt}")
    return "\n".join(lines)
