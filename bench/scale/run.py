"""``python -m bench scale``: plur at 10k, 100k and 1M engrams on this machine, figure by figure, with the load.

    python -m bench scale [--sizes 10000,100000,1000000] [--work DIR] [--cache-dir DIR]
                          [--conversations 1-10] [--queries 300] [--skip quality,serve,index,alone] [--out FILE]
                          [--vectors model|derived]

For each size: the kept store (built and embedded once, :mod:`bench.scale.homes`; the first build's time is
printed every run), then in fresh processes (:mod:`bench.scale.measure`) the index build from cached
embeddings and its peak RSS, a real service's start to first hybrid answer, hybrid recall p50/p99 (k=10),
capture of one more turn p50, a cold ``plur list --limit 50``, the service's peak RSS, and LoCoMo's turn
R_any@10 with the conversation hidden among the distractors against the conversation alone. Floors of
issue 49 are printed beside the figures they bind. Results go to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from ..datasets.locomo import parse_conversations
from ..engine.runner import default_cache_dir
from . import measure
from .homes import ensure_home

#: size -> {figure: (floor, "<=" | "<")}: issue 49 (1M) and its tightened 100k floors.
FLOORS: dict[int, dict[str, float]] = {
    1_000_000: {"service_peak_rss_mib": 1536, "hybrid_p50_ms": 30, "hybrid_p99_ms": 150, "index_build_s": 300,
                "start_to_first_hybrid_s": 15, "list_50_s": 1.0, "capture_p50_ms": 20},
    100_000: {"service_peak_rss_mib": 450, "index_peak_rss_mib": 450, "index_build_s": 30},
}


def _fmt(name: str, value: Any, n: int) -> str:
    floor = FLOORS.get(n, {}).get(name)
    mark = "" if floor is None else f" (floor {floor:g}: {'ok' if value <= floor else 'MISSED'})"
    return f"{name} {value}{mark}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench scale", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--work", default=str(default_cache_dir() / "scale"), help="where the built stores are kept")
    ap.add_argument("--cache-dir", default=str(default_cache_dir()), help="the embedding cache")
    ap.add_argument("--conversations", default="1-10", help="LoCoMo conversations whose questions are asked")
    ap.add_argument("--queries", type=int, default=300, help="hybrid recalls timed through the service")
    ap.add_argument("--skip", default="", help="comma-separated: index, serve, quality, alone")
    ap.add_argument("--vectors", choices=("model", "derived"), default="model",
                    help="derived: chunks the cache lacks get derived vectors, not the model's (bench/scale/derived.py)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "scale.json"))
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    convs = parse_conversations(args.conversations)
    conv_arg = ",".join(map(str, convs))
    work, cache = Path(args.work), Path(args.cache_dir)
    work.mkdir(parents=True, exist_ok=True)
    derived = args.vectors == "derived"
    if derived:
        from .derived import derived_cache

        work = work / "derived"
        cache = derived_cache(cache, work)
    result: dict[str, Any] = {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                              "started": time.strftime("%Y-%m-%d %H:%M:%S"), "sizes": {}}
    if "alone" not in skip:
        result["alone"] = measure.alone(cache, convs)
        print(f"LoCoMo conversations {args.conversations} alone: R_any@10 {result['alone']['r_any_at_10']}, "
              f"block notes/q {result['alone']['block_notes_per_q']} (load {result['alone']['load']})", flush=True)
    for n in (int(s) for s in args.sizes.split(",")):
        home, built = ensure_home(work, n, cache, derived=derived)
        row: dict[str, Any] = {"built": built}
        print(f"\n{n:,} engrams ({built['engrams']:,} in the store; first build {built['store_write_s']} s to write, "
              f"{built['first_index_s']} s to index with {built['chunks_embedded']:,} chunks embedded"
              f"{f' ({derived_n:,} of them derived vectors)' if (derived_n := built.get('chunks_derived')) else ''}, "
              f"{built['built']})",
              flush=True)
        if "index" not in skip:
            row["index"] = r = measure.child("index", home, cache)
            print("  " + ", ".join(_fmt(k, r[k], n) for k in ("store_open_s", "index_build_s", "index_peak_rss_mib"))
                  + f" (load {r['load']})", flush=True)
        if "serve" not in skip:
            row["serve"] = r = measure.serve(home, cache, args.queries)
            print("  " + ", ".join(_fmt(k, r[k], n) for k in ("start_to_first_hybrid_s", "hybrid_p50_ms", "hybrid_p99_ms"))
                  + f" (load {r['recall_load']})", flush=True)
            print("  " + ", ".join(_fmt(k, r[k], n) for k in ("capture_p50_ms", "list_50_s", "service_peak_rss_mib",
                                                             "service_rss_mib"))
                  + f" (load {r['list_load']})", flush=True)
        if "quality" not in skip:
            row["quality"] = r = measure.child("quality", home, cache, conv_arg)
            drop = ""
            if "alone" in result:
                drop = f", {100 * (r['r_any_at_10'] - result['alone']['r_any_at_10']):+.1f} points against alone"
            if built.get("chunks_derived"):
                r["approximate"] = True
                drop += " (approximate: derived vectors)"
            print(f"  LoCoMo turn R_any@10 {r['r_any_at_10']}{drop}; block notes/q {r['block_notes_per_q']}; "
                  f"in-process k=50 p50 {r['inprocess_k50_p50_ms']} ms (load {r['load']})", flush=True)
        result["sizes"][str(n)] = row
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0
