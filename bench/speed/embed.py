"""Benchmark embedding throughput: raw ``SentenceTransformer.encode`` vs plur's embedders.

Texts: real LongMemEval-S turns from the bundled sample -- all user turns, then assistant turns
in file order until ``--n`` (default 2000; the sample holds 606 user turns, so the rest are
assistant turns; the mix is printed).

Measured on the same texts, same batch size, one process, alternating runs (best of
``--repeats``), after a warm-up batch:

* ``raw``     -- ``model.encode(texts, batch_size, normalize_embeddings=True)``;
* ``plur``    -- :class:`plur.embed.embedder.SentenceTransformerEmbedder.embed_documents` on the same model;
* ``cold``    -- :class:`plur.embed.cache.CachedEmbedder` over an empty cache (every text embedded,
  hashed and written to SQLite): the overhead the cache adds, target <= 10%;
* ``warm``    -- the same call again (every text served from the cache);
* ``onnx``    -- with ``--onnx-dir``: the same texts through the model's ONNX Runtime bundle
  (:mod:`plur.embed.onnx_bundle`, exported there once; batched by token length), the document
  path a CPU-only machine uses (setting ``embed_runtime``); ``vs raw`` is then its time ratio;
* ``int8``    -- with ``--onnx-dir``: the bundle's per-token int8 graph (setting ``embed_precision = int8``,
  :mod:`plur.embed.int8_graph`), with its cosine to the float32 vectors.

``--raw-batches 16,32,64,128`` times raw ``encode`` at each batch size and keeps its best (raw's best batch
is not plur's).

``--recall-chunks N`` embeds, instead of LongMemEval turns, the dense chunks of the first ``N`` engrams of
``bench/speed/recall.py``'s corpus as a first-time index build cuts them (32-token conversation-turn
pieces), the texts a first-time build of that store embeds.

Because end-to-end times on a shared machine drift by more than 10% between runs, the cold run
also reports its own split: time inside the model vs. time in plur's bookkeeping (hashing,
SQLite reads and writes, assembly). ``bookkeeping / model`` is the overhead free of that drift.

Tokens are counted with the model's tokenizer, truncated at ``max_seq_length`` (what the model
sees). Run:  python -m bench.speed.embed [--n 2000] [--repeats 2] [--threads 1] [--device auto]
[--onnx-dir DIR] [--recall-chunks N] [--out f.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from plur.embed.embedder import SentenceTransformerEmbedder  # noqa: E402
from plur.embed.cache import CachedEmbedder, EmbeddingCache  # noqa: E402
from plur.embed.models_lock import PACKAGED_MODEL, find_spec, load_lock  # noqa: E402

from bench.datasets.paths import SHARED_DATA  # noqa: E402

DATA = SHARED_DATA / "longmemeval" / "MuhammadNoor7__longmemeval_s__grouped_3items.json"


def load_turns(path: Path, n: int) -> tuple[list[str], int]:
    """User turns first, then assistant turns, up to ``n``; returns (texts, number of user turns)."""
    items = json.loads(path.read_text())
    user, assistant = [], []
    for item in items:
        for session in item["haystack_sessions"]:
            for turn in session:
                (user if turn.get("role") == "user" else assistant).append(turn["content"])
    texts = (user + assistant)[:n]
    return texts, min(len(user), n)


class TimedInner:
    """Delegates to an embedder and adds up the seconds spent inside ``embed_documents``."""

    def __init__(self, inner) -> None:
        self.inner, self.seconds = inner, 0.0
        self.name, self.dims, self.identity, self.max_seq_length = inner.name, inner.dims, inner.identity, inner.max_seq_length

    def embed_documents(self, texts):
        t = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - t

    def embed_query(self, text):
        return self.inner.embed_query(text)

    def chunk_texts(self, texts, max_tokens=None):
        return self.inner.chunk_texts(texts, max_tokens)

    def embed_document_chunks(self, texts):
        return self.inner.embed_document_chunks(texts)


def recall_chunks(emb, n: int) -> list[str]:
    """The dense chunks of the first ``n`` engrams of bench.speed.recall's corpus (32-token turn pieces, no speaker)."""
    from bench.speed.recall import corpus, sentence_pool

    pool, _ = sentence_pool()
    chunks, _ = emb.chunk_texts(corpus(n, pool), 32)
    return chunks


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--threads", type=int, default=0,
                    help="torch CPU threads (0 = torch's default); 1 is steadier on a busy machine")
    ap.add_argument("--with-plain", action="store_true", help="also time the uncached plur embedder")
    ap.add_argument("--onnx-dir", type=Path, default=None,
                    help="also time the ONNX Runtime bundle cached here, float32 and int8 (setting embed_precision)")
    ap.add_argument("--raw-batches", default="",
                    help="comma-separated batch sizes for raw encode; its best is the 'raw' row (default: --batch-size)")
    ap.add_argument("--recall-chunks", type=int, default=0,
                    help="embed the dense chunks of this many bench.speed.recall engrams instead of LongMemEval turns")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    spec = find_spec(load_lock(), PACKAGED_MODEL)
    emb = SentenceTransformerEmbedder(spec, args.device, args.batch_size, folder=spec.packaged_folder())
    model = emb._model  # the very same SentenceTransformer, so the comparison is like for like
    texts, n_user = load_turns(args.data, args.n) if not args.recall_chunks else (recall_chunks(emb, args.recall_chunks), 0)
    bundle = None
    if args.onnx_dir:
        from plur.embed.onnx_bundle import OnnxBundle, export_bundle
        from plur.embed.fast_query import query_layout

        bundle = OnnxBundle.open(args.onnx_dir, emb.identity)
        if bundle is None:
            export_bundle(model, emb._embed_eager, emb.identity, args.onnx_dir, query_layout(model, "", "ONNX")[1])
            bundle = OnnxBundle.open(args.onnx_dir, emb.identity)
        bundle.embed(texts[:args.batch_size], args.batch_size)  # warm-up
        from plur.embed.onnx_bundle import open_int8_bundle

        int8 = open_int8_bundle(args.onnx_dir, emb.identity)
        int8.embed(texts[:args.batch_size], args.batch_size)  # warm-up
    tok = model.tokenizer(texts, truncation=True, max_length=emb.max_seq_length)["input_ids"]
    tokens = sum(len(t) for t in tok)
    print(f"model {emb.identity} on {emb.device}; {len(texts)} texts ({n_user} user turns, "
          f"{len(texts) - n_user} assistant turns), {tokens} tokens (mean {tokens / len(texts):.0f}, truncated "
          f"at {emb.max_seq_length}), batch {args.batch_size}")
    model.encode(texts[:args.batch_size], batch_size=args.batch_size)  # warm-up

    best = {"raw": float("inf"), "cold": float("inf"), "warm": float("inf")}
    if args.with_plain:
        best["plur"] = float("inf")
    if bundle is not None:
        best["onnx"] = best["int8"] = float("inf")
    raw_batches = [int(b) for b in args.raw_batches.split(",") if b] or [args.batch_size]
    split = (float("inf"), 0.0)  # (bookkeeping/model ratio, model seconds) of the best cold run
    with tempfile.TemporaryDirectory(prefix="plur-bench-embed-") as tmp:
        for rep in range(args.repeats):
            for raw_batch in raw_batches:
                best["raw"] = min(best["raw"], timed(lambda: model.encode(
                    texts, batch_size=raw_batch, normalize_embeddings=True, convert_to_numpy=True,
                    show_progress_bar=False)))
            if args.with_plain:
                best["plur"] = min(best["plur"], timed(lambda: emb.embed_documents(texts)))
            if bundle is not None:
                best["onnx"] = min(best["onnx"], timed(lambda: bundle.embed(texts, args.batch_size)))
                np.testing.assert_allclose(bundle.embed(texts[:64]), emb.embed_documents(texts[:64]), atol=1e-5)
                best["int8"] = min(best["int8"], timed(lambda: int8.embed(texts, args.batch_size)))
            cache = EmbeddingCache(Path(tmp) / f"cache-{rep}.sqlite")
            inner = TimedInner(emb)
            cached = CachedEmbedder(inner, cache)
            cold = timed(lambda: cached.embed_documents(texts))
            best["cold"] = min(best["cold"], cold)
            split = min(split, ((cold - inner.seconds) / inner.seconds, inner.seconds))
            best["warm"] = min(best["warm"], timed(lambda: cached.embed_documents(texts)))
            assert cached.stats.misses == len(set(texts)), cached.stats
            ref = emb.embed_documents(texts[:8])
            np.testing.assert_allclose(cached.embed_documents(texts[:8]), ref, atol=1e-5)
            cache.close()

    rows = {}
    print(f"{'run':>5} {'seconds':>8} {'texts/s':>9} {'tokens/s':>9} {'vs raw':>7}")
    for name, secs in best.items():
        rows[name] = {"seconds": round(secs, 3), "texts_per_s": round(len(texts) / secs, 1),
                      "tokens_per_s": round(tokens / secs, 1), "time_vs_raw": round(secs / best["raw"], 4)}
        print(f"{name:>5} {secs:>8.2f} {len(texts) / secs:>9.1f} {tokens / secs:>9.0f} {secs / best['raw']:>7.3f}")
    if bundle is not None:
        cos = np.sum(bundle.embed(texts[:1000]) * int8.embed(texts[:1000]), axis=1)
        print(f"int8 vs float32 cosine on {len(cos)} texts: mean {cos.mean():.4f}, min {cos.min():.4f}")
        rows["int8"]["cosine_to_float32"] = {"mean": round(float(cos.mean()), 5), "min": round(float(cos.min()), 5)}
    overhead = best["cold"] / best["raw"] - 1
    print(f"cache overhead on a cold cache, end to end: {overhead * 100:+.1f}% of raw encode time (target <= +10%)")
    print(f"cache bookkeeping inside the cold run: {split[0] * 100:.2f}% of its model time ({split[1]:.1f} s)")
    meta = {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "device": emb.device, "model": emb.identity, "n_texts": len(texts), "n_user_turns": n_user,
            "tokens": tokens, "batch_size": args.batch_size, "raw_batches": raw_batches, "repeats": args.repeats,
            "torch_threads": args.threads or "default"}
    if args.out:
        args.out.write_text(json.dumps({"meta": meta, "runs": rows, "cold_overhead": overhead,
                                              "cold_bookkeeping_over_model": split[0]}, indent=2))


if __name__ == "__main__":
    main()
