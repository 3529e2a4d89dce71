"""The cosine of unrelated text for a model: ``python -m bench.quality.floor_noise [--model NAME]``.

Where the relevance floor's absolute part comes from (:mod:`plur.index.floor`): LoCoMo questions of
conversations 1-2 embedded as queries against turns of conversations 3-5 (``speaker: text``), pairs
whose answer is not in that history, all within the tuning split. Prints the percentiles of their
cosines and ``dense_weight * p99``, the hybrid score a note with no lexical evidence needs to be more
similar than 99% of unrelated pairs. Seeded sample (150 questions x 400 turns).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path

from ..datasets.paths import SHARED_DATA


def _turns(conv: dict) -> list[str]:
    c = conv["conversation"]
    return [f"{t['speaker']}: {t['text']}" for k, v in c.items() if k.startswith("session_") and isinstance(v, list)
            for t in v]


def main(argv: Sequence[str] | None = None) -> int:
    import numpy as np

    from plur.config import load_settings
    from plur.embed.resolve import resolve_embedder

    p = argparse.ArgumentParser(prog="python -m bench.quality.floor_noise", description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=SHARED_DATA / "locomo" / "locomo10.json")
    p.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    p.add_argument("--dense-weight", type=float, default=0.6)
    args = p.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    rng = random.Random(0)
    questions = rng.sample([qa["question"] for conv in data[:2] for qa in conv["qa"]], 150)
    turns = rng.sample([t for conv in data[2:5] for t in _turns(conv)], 400)
    res = resolve_embedder(load_settings(Path(".no-home"), model=args.model, device="cpu", allow_fallback=False))
    if res.embedder is None:
        print(f"model {args.model!r} not available: {res.reason}")
        return 1
    emb = res.embedder
    q = np.stack([emb.embed_query(x) for x in questions])
    cos = q @ emb.embed_documents(turns).T
    p50, p90, p99 = (float(x) for x in np.percentile(cos, [50, 90, 99]))
    print(f"{emb.identity}: unrelated question/turn cosines p50 {p50:.3f} p90 {p90:.3f} p99 {p99:.3f}; "
          f"min_score = {args.dense_weight} x p99 = {args.dense_weight * p99:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
