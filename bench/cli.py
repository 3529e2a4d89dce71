"""``python -m bench``: run the retrieval benchmarks and write their results.

    python -m bench longmemeval [--data FILE] [--granularity session|turn] [--mode bm25,dense,hybrid]
                                [--fusion rrf,weighted] [--include-assistant] [--limit N] [--workers N] [--out DIR]
    python -m bench locomo      [--data FILE] ... (same options, no --include-assistant)
    python -m bench all         [--longmemeval-data FILE] [--locomo-data FILE] [--limit N] [--workers N] [--out DIR]

Common options: ``--conversations 1-5`` (LoCoMo split; defaults were tuned on 1-5, judged on
6-10), ``--no-full-depth`` (skip the ``<variant>@full`` extra; the plain names are the default
recall path), ``--engine ray`` (Ray tasks, ``plur[distributed]``), ``--set NAME=VALUE`` (a plur
setting for the benchmark stores, repeatable).

``--mode`` and ``--fusion`` take one value or a comma-separated list (default: every mode,
the engine's default fusion). ``all`` runs both datasets x {session, turn} x {bm25, dense,
hybrid-rrf, hybrid-weighted}, writes each run under ``<out>/<dataset>-<granularity>/`` and
refreshes the results table of docs/benchmarks.md (its figures are drawn from it at docs build) between ``<!-- bench:results:start -->`` and ``<!-- bench:results:end -->``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from plur.errors import PlurError

from .datasets import locomo, longmemeval
from .datasets.paths import SHARED_DATA
from .engine.runner import DEFAULT_PATH_K, FUSIONS, MODES, EngineConfig, default_cache_dir, make_variants, run_tasks
from .manifest import base_manifest, dataset_info
from .quality import report

REPO = Path(__file__).resolve().parent.parent
DEFAULT_LONGMEMEVAL = REPO / "tests" / "data" / "longmemeval_sample.json"
SHARED_LONGMEMEVAL = SHARED_DATA / "longmemeval" / "MuhammadNoor7__longmemeval_s__grouped_3items.json"
SHARED_LOCOMO = SHARED_DATA / "locomo" / "locomo10.json"
RESULTS = REPO / "bench" / "results"
README = REPO / "docs" / "benchmarks.md"  # the page whose bench:results table `all` refreshes
#: torch threads per process. One: the benchmark embeds one short query per recall, where
#: intra-op threading only adds overhead (measured on a shared 2-core machine: 37.6 s with 1
#: thread against 138 s with 2 for 199 LoCoMo questions x 4 variants); use --workers for parallelism.
DEFAULT_THREADS = 1


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _csv(value: str, allowed: Sequence[str], what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise argparse.ArgumentTypeError(f"{what} {value!r}: use one or more of {', '.join(allowed)}, comma-separated")
    return items


def _positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be a positive integer")
    return n


def _setting(value: str) -> tuple[str, str]:
    name, sep, raw = value.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"--set {value!r}: use NAME=VALUE, e.g. --set context_window=1")
    return name.strip(), raw.strip()


def run_dataset(dataset: str, data: Path, granularity: str, *, modes: Sequence[str], fusions: Sequence[str],
                include_assistant: bool = False, limit: int | None = None, workers: int = 1,
                out: Path, model: str | None = None, cache_dir: str | None = None,
                depth: int | None = None, threads: int | None = None, conversations: Sequence[int] | None = None,
                full_depth: bool = True, engine: str = "local",
                overrides: dict[str, Any] | None = None, capture: bool = False) -> dict[str, Any]:
    """Load, score and write one (dataset, granularity) run; returns a summary of it.

    Returns:
        ``{dataset, granularity, data, n_questions, n_tasks, aggregate, out, wall_s}``.

    Raises:
        ValidationError: bad data file or option.
    """
    t0 = time.perf_counter()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if dataset == "longmemeval":
        tasks, notes = longmemeval.load_tasks(data, granularity, include_assistant=include_assistant, limit=limit)
    else:
        tasks, notes = locomo.load_tasks(data, granularity, limit=limit, conversations=conversations)
    variants = make_variants(modes, fusions, full_depth=full_depth)
    if set(modes) == {"bm25"} and model is None:
        model = "none"  # no dense leg needed: do not load an embedding model
    config = EngineConfig(dataset=dataset, granularity=granularity, model=model,
                          cache_dir=cache_dir or str(default_cache_dir()), depth=depth,
                          torch_threads=threads or DEFAULT_THREADS, overrides=dict(overrides or {}),
                          capture=capture)
    n_questions = sum(len(t.queries) for t in tasks)
    if engine == "ray":
        from .engine.ray_engine import run_tasks_ray

        rows, model_info, settings = run_tasks_ray(tasks, variants, config, num_cpus=workers,
                                                   desc=f"{dataset} {granularity} (ray)")
    else:
        rows, model_info, settings = run_tasks(tasks, variants, config, workers=workers,
                                               desc=f"{dataset} {granularity}")
    wall = time.perf_counter() - t0
    manifest = {
        **base_manifest(), "dataset": dataset, "granularity": granularity, "started": started,
        "wall_s": round(wall, 2), "data": dataset_info(data), "model": model_info, "settings": settings,
        "options": {"modes": list(modes), "fusions": list(fusions), "include_assistant": include_assistant,
                    "limit": limit, "workers": workers, "torch_threads": config.torch_threads,
                    "depth": (f"default path: recall(k={depth or DEFAULT_PATH_K}), settings.candidates per leg; "
                              + ("'@full' variants: every engram" if full_depth else "no full-depth variants")),
                    "cache_dir": config.cache_dir, "engine": engine,
                    "conversations": list(conversations) if conversations else "all",
                    "overrides": dict(overrides or {}), "capture": capture},
        "variants": [v.name for v in variants], "n_tasks": len(tasks), "n_questions": n_questions,
        "protocol": _protocol(dataset, include_assistant), "notes": notes,
    }
    agg = report.write_run(out, manifest, rows)
    return {"dataset": dataset, "granularity": granularity, "data": manifest["data"], "n_questions": n_questions,
            "n_tasks": len(tasks), "aggregate": agg, "out": str(out), "wall_s": wall, "model": model_info,
            "settings": settings}


def _capture_counts(out: Path) -> dict[str, int]:
    """What ``--capture`` did with the turns, summed over the run's corpora (from its per-question rows)."""
    per_task: dict[Any, dict[str, int]] = {}
    with open(out / "per_question.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if "capture" in row:
                per_task[row.get("conversation", row.get("task"))] = row["capture"]
    total: dict[str, int] = {}
    for counts in per_task.values():
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    return total


def _protocol(dataset: str, include_assistant: bool) -> str:
    if dataset == "longmemeval":
        text = ("LongMemEval official retrieval protocol (xiaowu0162/LongMemEval src/retrieval/run_retrieval.py, "
                "eval_utils.py): corpus per question from its haystack; user turns only; noans relabelling; gold = "
                "ids containing 'answer'; headline average skips _abs questions.")
        if include_assistant:
            text += " NOT OFFICIAL: assistant turns included (--include-assistant)."
        return text
    return ("LoCoMo: corpus per conversation (dialog turns 'speaker: text [image: caption]', or sessions); gold = "
            "normalised evidence dia_ids; headline = categories 1-4 with evidence; category 5 separately.")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=_positive, help="only the first N questions")
    p.add_argument("--workers", type=_positive, default=1, help="parallel processes (each loads the model once)")
    p.add_argument("--out", type=Path, help="output folder (default bench/results/<name>-<UTC time>)")
    p.add_argument("--model", help="embedding model setting (default: plur's; a pinned name or a folder)")
    p.add_argument("--cache-dir", help=f"shared embedding cache folder (default {default_cache_dir()})")
    p.add_argument("--depth", type=_positive,
                   help=f"hits asked per default-path recall (default {DEFAULT_PATH_K}, the deepest cut-off scored)")
    p.add_argument("--no-full-depth", dest="full_depth", action="store_false",
                   help="skip the labelled full-depth extra (<variant>@full: every engram ranked)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local processes, or Ray tasks (plur[distributed]) on --workers CPUs")
    p.add_argument("--set", dest="overrides", action="append", type=_setting, default=[], metavar="NAME=VALUE",
                   help="a plur setting for the benchmark stores, e.g. --set context_window=1 (repeatable)")
    p.add_argument("--threads", type=_positive,
                   help=f"torch intra-op threads per process (default {DEFAULT_THREADS})")


def _conversations(value: str) -> tuple[int, ...]:
    try:
        return locomo.parse_conversations(value)
    except PlurError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m bench`` argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench", description="plur retrieval benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="the README's main job: learn, recall and benchmark one real conversation "
                                "(python -m bench demo --help)", add_help=False)
    for name, default in (("longmemeval", DEFAULT_LONGMEMEVAL), ("locomo", SHARED_LOCOMO)):
        p = sub.add_parser(name, help=f"run {name}")
        p.add_argument("--data", type=Path, default=default, help=f"data file (default {default})")
        p.add_argument("--granularity", choices=("session", "turn"), default="session")
        p.add_argument("--mode", default=",".join(MODES), type=lambda v: _csv(v, MODES, "--mode"),
                       help="bm25, dense, hybrid, or a comma list (default all three)")
        p.add_argument("--fusion", default="weighted", type=lambda v: _csv(v, FUSIONS, "--fusion"),
                       help="hybrid fusion: weighted, rrf, or rrf,weighted (default weighted, plur's default)")
        if name == "longmemeval":
            p.add_argument("--include-assistant", action="store_true",
                           help="also index assistant turns (not the official protocol; labelled)")
        else:
            p.add_argument("--conversations", type=_conversations, default=None,
                           help="1-based conversations to run, e.g. 1-5 (tuning split) or 6-10 (default all)")
            p.add_argument("--capture", action="store_true",
                           help="store each turn through Memory.capture, as a host's capture does (with "
                                "--granularity turn; bench/engine/capture_learn.py)")
        _common(p)
    p = sub.add_parser("all", help="the standard matrix; refreshes the table in docs/benchmarks.md")
    p.add_argument("--longmemeval-data", type=Path,
                   default=SHARED_LONGMEMEVAL if SHARED_LONGMEMEVAL.is_file() else DEFAULT_LONGMEMEVAL)
    p.add_argument("--locomo-data", type=Path, default=SHARED_LOCOMO)
    p.add_argument("--no-readme", action="store_true", help="do not rewrite the table in docs/benchmarks.md")
    _common(p)
    return parser


def cmd_all(args: argparse.Namespace) -> int:
    """Run the standard matrix, write ``<out>/{manifest.json,summary.md,summary.png}``, refresh docs/benchmarks.md."""
    t0 = time.perf_counter()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out = args.out or RESULTS / f"all-{_stamp()}"
    plan = [("longmemeval", args.longmemeval_data)]
    if args.locomo_data.is_file():
        plan.append(("locomo", args.locomo_data))
    else:
        print(f"note: LoCoMo file {args.locomo_data} not found; skipping LoCoMo (pass --locomo-data)", file=sys.stderr)
    runs = []
    for dataset, data in plan:
        for gran in ("session", "turn"):
            runs.append(run_dataset(dataset, data, gran, modes=MODES, fusions=FUSIONS, limit=args.limit,
                                    workers=args.workers, out=out / f"{dataset}-{gran}", model=args.model,
                                    cache_dir=args.cache_dir, depth=args.depth, threads=args.threads,
                                    full_depth=args.full_depth, engine=args.engine,
                                    overrides=dict(args.overrides)))
    wall = time.perf_counter() - t0
    manifest = {**base_manifest(), "command": "python -m bench all", "started": started, "wall_s": round(wall, 2),
                "model": runs[0]["model"], "settings": runs[0]["settings"],
                "runs": [{k: r[k] for k in ("dataset", "granularity", "data", "n_questions", "n_tasks", "out",
                                            "wall_s")} for r in runs],
                "fusion": report.fusion_comparison(runs)}
    block = report.matrix_markdown(runs, manifest)
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    (out / "summary.md").write_text("# plur retrieval benchmarks: `python -m bench all`\n\n" + block + "\n",
                                    encoding="utf-8")
    report.plot_matrix(runs, out / "summary.png")
    if not args.no_readme:
        if report.refresh_readme(README, block):
            print(f"results table refreshed ({README})")
        else:
            print(f"note: {README} or its bench:results markers are missing; table not written", file=sys.stderr)
    print(block)
    print(f"\nresults: {out}  (wall time {wall / 60:.1f} min)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (PlurError -> one line on stderr and its exit code)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        if args.command == "all":
            return cmd_all(args)
        out = args.out or RESULTS / f"{args.command}-{args.granularity}-{_stamp()}"
        run = run_dataset(args.command, args.data, args.granularity, modes=args.mode, fusions=args.fusion,
                          include_assistant=getattr(args, "include_assistant", False), limit=args.limit,
                          workers=args.workers, out=out, model=args.model, cache_dir=args.cache_dir,
                          depth=args.depth, threads=args.threads, conversations=getattr(args, "conversations", None),
                          full_depth=args.full_depth, engine=args.engine, overrides=dict(args.overrides),
                          capture=getattr(args, "capture", False))
        print((Path(run["out"]) / "summary.md").read_text(encoding="utf-8"))
        if getattr(args, "capture", False):
            print(f"capture: {_capture_counts(Path(run['out']))}")
        print(f"results: {run['out']}")
        return 0
    except PlurError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
