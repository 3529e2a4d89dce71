"""First-time embedding cost of conversation turns: 96-token chunks vs the turn layout (issue 12).

Texts: real LoCoMo turns (``"<speaker>: <text> [image: caption]"``, conversations 6-10 of
``../shared/data/locomo/locomo10.json``), the first ``--n``. Each layout embeds them through a
:class:`plur.embed.cache.CachedEmbedder` over an empty cache (every chunk reaches the model), in
alternating runs, best of ``--repeats``:

* ``96``          -- what every engram got before: chunks of ``embed_chunk_tokens`` = 96 tokens;
* ``turn layout`` -- chunks of ``turn_chunk_tokens`` (32), each starting with ``"<speaker>: "``
  (:mod:`plur.index.chunking`).

The issue's floor is index build time at most 1.5x; embedding is the build's dominant cost.

    python -m bench.speed.turn_chunks [--n 1500] [--repeats 2] [--tokens 32]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCOMO = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
sys.path.insert(0, str(REPO))


def turns(n: int) -> tuple[list[str], list[str]]:
    """The first ``n`` turn texts of conversations 6-10 and their ``"<speaker>: "`` headers."""
    from bench.datasets.locomo import sessions, turn_text

    texts, heads = [], []
    for sample in json.loads(LOCOMO.read_text(encoding="utf-8"))[5:10]:
        for _, session in sessions(sample["conversation"]):
            for t in session:
                texts.append(turn_text(t))
                heads.append(f"{t.get('speaker', '')}: ")
    return texts[:n], heads[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=32, help="turn_chunk_tokens of the turn layout")
    args = ap.parse_args(argv)

    from plur.config import Settings
    from plur.embed import resolve
    from plur.embed.cache import CachedEmbedder, EmbeddingCache

    texts, heads = turns(args.n)
    with tempfile.TemporaryDirectory() as home:
        inner = resolve.resolve_embedder(Settings(home=Path(home))).embedder
    if inner is None:
        print("no embedding model could be loaded", file=sys.stderr)
        return 1
    inner.embed_documents(texts[:64])  # warm-up
    layouts = {"96": (None, None), "turn layout": ([args.tokens] * len(texts), heads)}
    best: dict[str, float] = {}
    chunks_of: dict[str, int] = {}
    for rep in range(args.repeats):
        for name, (tokens, headers) in layouts.items():
            with tempfile.TemporaryDirectory() as d, EmbeddingCache(Path(d) / "c.sqlite") as cache:
                cached = CachedEmbedder(inner, cache)
                cached.chunk_tokens, cached.max_chunks = 96, 40
                chunks_of[name] = len(cached.document_chunks(texts, tokens, headers)[0])
                t0 = time.perf_counter()
                cached.embed_document_chunks(texts, tokens, headers)
                dt = time.perf_counter() - t0
            best[name] = min(best.get(name, dt), dt)
            print(f"run {rep + 1} {name:<11} {len(texts)} turns  {chunks_of[name]:>5} chunks  {dt:6.1f} s", flush=True)
    ratio = best["turn layout"] / best["96"]
    print(json.dumps({"turns": len(texts), "chunks": chunks_of, "best_s": {k: round(v, 2) for k, v in best.items()},
                      "ratio": round(ratio, 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
