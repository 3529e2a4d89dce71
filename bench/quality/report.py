"""Turn per-question rows into averages, ``summary.md``, ``summary.png`` and the README results table.

Averaging populations (each labelled wherever it is printed):

* ``headline``: rows with ``primary`` set: LongMemEval without abstention questions
  (n=470 on the full LongMemEval-S, as the official README and print_retrieval_metrics.py);
  LoCoMo categories 1-4 with evidence.
* ``all``: every ``scored`` row: LongMemEval including abstention questions (the
  recall_any@5 figure many systems publish); LoCoMo categories 1-5 with evidence.
* ``with_target`` (LongMemEval only): headline rows with a user-side ``has_answer`` turn, as
  the later official run_retrieval.py (commit b60a5b7) averages.
* per group: ``scored`` rows by ``group`` (question type, ``abstention``, LoCoMo ``catN``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .metrics import KS, mean_metrics

README_START = "<!-- bench:results:start -->"
README_END = "<!-- bench:results:end -->"
LEVEL_LABEL = {"session": "session", "turn": "turn"}
#: Columns of the headline table: (metric key, header).
HEADLINE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("recall_any@1", "R_any@1"), ("recall_any@5", "R_any@5"), ("recall_all@5", "R_all@5"),
    ("ndcg_any@5", "NDCG@5"), ("recall_any@10", "R_any@10"), ("recall_all@10", "R_all@10"),
    ("ndcg_any@10", "NDCG@10"), ("recall_any@50", "R_any@50"),
)


def variants_in(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Variant names in first-seen order."""
    return list(dict.fromkeys(r["variant"] for r in rows))


def levels_in(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Metric levels present (``turn`` before ``session``)."""
    seen = {lvl for r in rows for lvl in r["metrics"]}
    return [lvl for lvl in ("turn", "session") if lvl in seen]


def _population(rows: Sequence[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    if name == "headline":
        return [r for r in rows if r["primary"]]
    if name == "all":
        return [r for r in rows if r["scored"]]
    if name == "with_target":
        return [r for r in rows if r["primary"] and r.get("has_target", True)]
    raise ValueError(f"unknown population {name!r}")


def aggregate(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean metrics per variant, level and population.

    Returns:
        ``{variant: {level: {"headline": {"n": int, "metrics": {...}}, "all": ..., "with_target": ...,
        "groups": {group: {"n", "metrics"}}}}}`` (``with_target`` only when rows carry ``has_target``).
    """
    out: dict[str, Any] = {}
    has_target = any("has_target" in r for r in rows)
    pops = ("headline", "all", "with_target") if has_target else ("headline", "all")
    for variant in variants_in(rows):
        vrows = [r for r in rows if r["variant"] == variant]
        out[variant] = {}
        for level in levels_in(vrows):
            entry: dict[str, Any] = {}
            for pop in pops:
                means, n = mean_metrics(r["metrics"][level] for r in _population(vrows, pop))
                entry[pop] = {"n": n, "metrics": means}
            groups: dict[str, Any] = {}
            for group in sorted({r["group"] for r in vrows if r["scored"]}):
                means, n = mean_metrics(r["metrics"][level] for r in vrows if r["scored"] and r["group"] == group)
                groups[group] = {"n": n, "metrics": means}
            entry["groups"] = groups
            out[variant][level] = entry
    return out


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return lines


def level_title(granularity: str, level: str) -> str:
    """``'session'``, ``'turn'`` or ``'session (from turn ranking)'``."""
    return f"{level} (from turn ranking)" if granularity == "turn" and level == "session" else level


def headline_table(agg: Mapping[str, Any], level: str, population: str = "headline") -> list[str]:
    """Markdown rows: one per variant, :data:`HEADLINE_COLUMNS`."""
    body = []
    for variant, levels in agg.items():
        if level not in levels:
            continue
        pop = levels[level][population]
        body.append([variant, str(pop["n"])] + [_f(pop["metrics"].get(k)) for k, _ in HEADLINE_COLUMNS])
    return _table(["variant", "n"] + [h for _, h in HEADLINE_COLUMNS], body)


def group_table(agg: Mapping[str, Any], level: str, metric: str = "recall_any@5") -> list[str]:
    """Markdown rows: one per group, one column per variant (``metric``), with n."""
    variants = [v for v in agg if level in agg[v]]
    groups = sorted({g for v in variants for g in agg[v][level]["groups"]})
    body = []
    for g in groups:
        n = max(agg[v][level]["groups"].get(g, {"n": 0})["n"] for v in variants)
        body.append([g, str(n)] + [_f(agg[v][level]["groups"].get(g, {"metrics": {}})["metrics"].get(metric))
                                   for v in variants])
    return _table(["group", "n"] + variants, body)


def summary_markdown(manifest: Mapping[str, Any], agg: Mapping[str, Any]) -> str:
    """The ``summary.md`` of one run (dataset + granularity)."""
    ds, gran = manifest["dataset"], manifest["granularity"]
    model = manifest.get("model") or {}
    data = manifest.get("data") or {}
    lines = [f"# plur retrieval benchmark: {ds}, {gran} granularity", ""]
    lines += [f"- data: `{data.get('path')}` (sha256 `{str(data.get('sha256'))[:16]}...`, {data.get('bytes')} bytes)",
              f"- model: {model.get('name')} (`{model.get('identity')}`; source: {model.get('source')}; "
              f"{model.get('reason')})",
              f"- questions: {manifest.get('n_questions')}; corpora: {manifest.get('n_tasks')}; "
              f"wall time: {manifest.get('wall_s', 0):.1f} s",
              f"- options: {json.dumps(manifest.get('options', {}), sort_keys=True)}", ""]
    for w in model.get("warnings") or []:  # its first clause: the whole message was said once, and is in manifest.json
        head = w.split(" (", 1)[0].split(";", 1)[0]
        lines.append(f"> model warning: {head} (the whole message: manifest.json, model.warnings)")
    if model.get("warnings"):
        lines.append("")
    head_label = {"longmemeval": "abstention questions excluded (the official n=470 protocol)",
                  "locomo": "categories 1-4 with evidence; category 5 (adversarial) separately below"}.get(ds, "")
    first_variant = next(iter(agg.values()), {})
    for level in first_variant:
        title = level_title(gran, level)
        lines += [f"## {title}: headline ({head_label})", ""] + headline_table(agg, level) + [""]
        if ds == "longmemeval":
            lines += ["All questions, abstention included (labelled; the figure other systems often publish):", ""]
            lines += _table(["variant", "n", "recall_any@5"],
                            [[v, str(agg[v][level]["all"]["n"]), _f(agg[v][level]["all"]["metrics"].get("recall_any@5"))]
                             for v in agg if level in agg[v]]) + [""]
            lines += ["Only questions with a user-side `has_answer` turn (later official run_retrieval.py):", ""]
            lines += headline_table(agg, level, "with_target") + [""]
        lines += [f"### {title}: recall_any@5 per group", ""] + group_table(agg, level, "recall_any@5") + [""]
        lines += [f"### {title}: ndcg_any@5 per group", ""] + group_table(agg, level, "ndcg_any@5") + [""]
    notes = manifest.get("notes") or []
    if notes:
        lines += ["## Data notes", ""] + [f"- {n}" for n in notes[:50]]
        if len(notes) > 50:
            lines.append(f"- ... {len(notes) - 50} more in manifest.json")
        lines.append("")
    return "\n".join(lines)


def plot_curves(agg: Mapping[str, Any], path: str | Path, title: str) -> None:
    """``recall_any@k`` and ``ndcg_any@k`` against k, one line per variant, one row per level (PNG, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = list(next(iter(agg.values()), {}).keys()) or ["session"]
    fig, axes = plt.subplots(len(levels), 2, figsize=(10, 3.6 * len(levels)), squeeze=False)
    for row, level in enumerate(levels):
        for col, metric in enumerate(("recall_any", "ndcg_any")):
            ax = axes[row][col]
            for variant, lv in agg.items():
                if level not in lv:
                    continue
                m = lv[level]["headline"]["metrics"]
                ys = [m.get(f"{metric}@{k}") for k in KS]
                if all(y is not None for y in ys):
                    ax.plot(KS, ys, marker="o", label=variant)
            ax.set_xscale("log")
            ax.set_xticks(KS, [str(k) for k in KS])
            ax.set_ylim(0, 1.02)
            ax.set_xlabel("k")
            ax.set_ylabel(f"{metric}@k")
            ax.set_title(f"{level}: {metric}@k")
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_run(out: str | Path, manifest: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Write ``manifest.json``, ``per_question.jsonl``, ``summary.json``, ``summary.md``, ``summary.png``.

    Returns:
        The aggregate (see :func:`aggregate`).
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    agg = aggregate(rows)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    with open(folder / "per_question.jsonl", "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    (folder / "summary.json").write_text(json.dumps(agg, indent=2) + "\n", encoding="utf-8")
    text = summary_markdown(manifest, agg)
    if manifest.get("dataset") == "locomo":
        from .splits import split_markdown

        text += "\n" + "\n".join(split_markdown(rows, manifest["granularity"])) + "\n"
    from .blocks import summary_markdown as block_summary

    text += "\n" + "\n".join(block_summary(rows, str(manifest.get("dataset")))) + "\n"
    (folder / "summary.md").write_text(text, encoding="utf-8")
    if agg:
        plot_curves(agg, folder / "summary.png",
                    f"{manifest['dataset']} ({manifest['granularity']}), headline population")
    return agg


# -- the `all` matrix ---------------------------------------------------------------------
def matrix_rows(runs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """README/summary rows: dataset, granularity, level, variant, n, then @5 and @10 metrics (headline)."""
    body = []
    for run in runs:
        for variant, levels in run["aggregate"].items():
            for level, entry in levels.items():
                pop = entry["headline"]
                m = pop["metrics"]
                body.append([run["dataset"], run["granularity"], level_title(run["granularity"], level), variant,
                             str(pop["n"])] + [_f(m.get(k)) for k in
                                               ("recall_any@5", "recall_all@5", "ndcg_any@5", "recall_any@10",
                                                "ndcg_any@10")])
    return body


MATRIX_HEADER = ["dataset", "granularity", "level", "variant", "n", "recall_any@5", "recall_all@5", "ndcg_any@5",
                 "recall_any@10", "ndcg_any@10"]


def fusion_comparison(runs: Sequence[Mapping[str, Any]], metric: str = "ndcg_any@5") -> dict[str, Any]:
    """Compare hybrid-rrf with hybrid-weighted on ``metric`` (headline), run by run and on average.

    Returns:
        ``{"metric", "pairs": [{dataset, granularity, level, rrf, weighted, diff}], "mean_diff", "winner"}``;
        ``diff = weighted - rrf``, ``winner`` by the mean difference (``"tie"`` at 0, None with no pairs).
    """
    pairs = []
    for run in runs:
        agg = run["aggregate"]
        if "hybrid-rrf" not in agg or "hybrid-weighted" not in agg:
            continue
        for level in agg["hybrid-rrf"]:
            a = agg["hybrid-rrf"][level]["headline"]["metrics"].get(metric)
            b = agg["hybrid-weighted"].get(level, {}).get("headline", {}).get("metrics", {}).get(metric)
            if a is not None and b is not None:
                pairs.append({"dataset": run["dataset"], "granularity": run["granularity"], "level": level,
                              "rrf": a, "weighted": b, "diff": b - a})
    if not pairs:
        return {"metric": metric, "pairs": [], "mean_diff": None, "winner": None}
    mean = sum(p["diff"] for p in pairs) / len(pairs)
    winner = "weighted" if mean > 0 else "rrf" if mean < 0 else "tie"
    return {"metric": metric, "pairs": pairs, "mean_diff": mean, "winner": winner}


def matrix_markdown(runs: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any]) -> str:
    """The README block (and top-level summary.md body) for ``python -m bench all``."""
    model = manifest.get("model") or {}
    lines = [f"Produced by `{manifest.get('command', 'python -m bench all')}` on {manifest.get('started')} "
             f"(wall time {manifest.get('wall_s', 0) / 60:.1f} min, {manifest.get('machine', {}).get('cpu_count')} "
             f"CPU cores). Model: **{model.get('name')}** (`{model.get('identity')}`, source: {model.get('source')}).",
             ""]
    seen: set[str] = set()
    for run in runs:
        if run["dataset"] in seen:
            continue
        seen.add(run["dataset"])
        d = run.get("data") or {}
        lines.append(f"- {run['dataset']}: `{Path(str(d.get('path'))).name}` ({run['n_questions']} questions, "
                     f"sha256 `{str(d.get('sha256'))[:12]}`)")
    lines += ["", "Headline populations: LongMemEval without abstention questions (official protocol; n=470 on the "
              "full LongMemEval-S); LoCoMo categories 1-4 with evidence (category 5 and per-category tables in each "
              "run's summary.md). `session (from turn ranking)` is the official turn-to-session metric; its NDCG "
              "counts every turn of a gold session in the ideal ranking, as the official code does, so it is not "
              "comparable with session-granularity NDCG.", "",
              "Depth: a plain variant name is the **default path**, what `Memory.recall` with default settings "
              "returns (each leg's `candidates` = 100 best, then fusion and the date boost; scored from "
              "`recall(k=50)`, whose top 10 equals `recall(k=10)`). `<variant>@full` asks for every engram "
              "(each leg ranks the whole corpus, as the official scorer does): a labelled extra, not the headline.",
              ""]
    lines += _table(MATRIX_HEADER, matrix_rows(runs))
    cmp_ = fusion_comparison(runs)
    if cmp_["winner"]:
        lines += ["", f"Fusion: **{cmp_['winner']}** wins on mean {cmp_['metric']} over {len(cmp_['pairs'])} "
                      f"(dataset, level) pairs, weighted - rrf = {cmp_['mean_diff']:+.4f}."]
    lme = [r for r in runs if r["dataset"] == "longmemeval"]
    if lme and any(r["n_questions"] < 500 for r in lme):
        lines += ["", "LongMemEval numbers here come from the small real sample available offline, not the full "
                      "500-question LongMemEval-S: run `python scripts/fetch_longmemeval.py` then "
                      "`python -m bench all --longmemeval-data ~/.cache/plur/data/longmemeval/longmemeval_s_cleaned.json` "
                      "for figures comparable with published ones."]
    return "\n".join(lines)


def refresh_readme(readme: str | Path, block: str) -> bool:
    """Replace the text between :data:`README_START` and :data:`README_END` with ``block``.

    Returns:
        True if the README was rewritten; False if it or its markers are missing (nothing written).
    """
    p = Path(readme)
    if not p.is_file():
        return False
    text = p.read_text(encoding="utf-8")
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        return False
    new = text[: start + len(README_START)] + "\n" + block.rstrip("\n") + "\n" + text[end:]
    if new != text:
        p.write_text(new, encoding="utf-8")
    return True


def plot_matrix(runs: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """One panel per (dataset, granularity, level): recall_any@k per variant (PNG, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(run, level) for run in runs for level in next(iter(run["aggregate"].values()), {})]
    if not panels:
        return
    cols = min(3, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.6 * nrows), squeeze=False)
    for ax, (run, level) in zip([a for row in axes for a in row], panels):
        for variant, lv in run["aggregate"].items():
            if level in lv:
                m = lv[level]["headline"]["metrics"]
                ax.plot(KS, [m.get(f"recall_any@{k}", float("nan")) for k in KS], marker="o", label=variant)
        ax.set_xscale("log")
        ax.set_xticks(KS, [str(k) for k in KS])
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{run['dataset']} {run['granularity']}: {level}", fontsize=9)
        ax.set_xlabel("k")
        ax.set_ylabel("recall_any@k")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    for ax in [a for row in axes for a in row][len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
