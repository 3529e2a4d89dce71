"""Which models serve a :class:`~plur.memory.Memory`: the embedding model (wrapped in the on-disk
embedding cache), its faster query path for a long-lived process, the second-stage reranker, and
the folders their caches live in. Each is resolved once, on first need (``plur learn`` loads none).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any


def cache_dir(mem: Any) -> Path:
    """Folder of the embedding cache (setting ``cache_dir``, default ``<home>/cache``)."""
    return Path(mem.settings.cache_dir).expanduser() if mem.settings.cache_dir else mem.home / "cache"


def graph_cache_dir(mem: Any) -> Path:
    """Folder of exported query graphs (ONNX, under ``onnx/``): setting ``cache_dir`` when set, else
    ``$XDG_CACHE_HOME/plur`` (default ``~/.cache/plur``). A graph depends only on the model and the
    library versions, not on the memories, so every home of the user shares one export.
    """
    if mem.settings.cache_dir:
        return mem.cache_dir
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "plur"


def model_resolution(mem: Any) -> Any:
    """Resolve (once) which embedding model serves the dense leg; see :func:`plur.embed.resolve.resolve_embedder`.

    Returns:
        A :class:`plur.embed.resolve.Resolution` whose ``embedder`` is wrapped in the embedding cache,
        or has ``embedder=None`` (BM25 only) with ``source`` and ``reason`` saying why.
    """
    if mem._resolution is not None:
        return mem._resolution
    # the model loads under a lock of its own, not the recall lock, so a BM25 recall on another thread
    # goes on meanwhile (the recall worker's keyword answers while it warms up, issue 26)
    with mem._resolve_lock:
        if mem._resolution is None:
            from ..embed import cache as embed_cache, resolve as embed

            if mem._explicit_embedder is not None:
                res = embed.Resolution(embedder=mem._explicit_embedder, source="path",
                                       reason="embedder passed to Memory()", requested=mem.settings.model)
            else:
                onnx_dir = mem.graph_cache_dir if mem.settings.embed_runtime != "torch" else None
                res = embed.resolve_embedder(mem.settings, onnx_dir=onnx_dir)
            if res.embedder is not None:
                cache = embed_cache.EmbeddingCache(mem.cache_dir / "embeddings.sqlite")
                if getattr(mem.store, "remote", False):  # embeddings computed once for every machine
                    from ..embed.tiered import TieredCache
                    from ..store.pg.vectors import PgVectorCache

                    cache = TieredCache(cache, PgVectorCache(mem.settings.store))
                cached = embed_cache.CachedEmbedder(res.embedder, cache)
                cached.max_chunks = mem.settings.max_embed_chunks  # bounded indexing cost per engram
                cached.chunk_tokens = mem.settings.embed_chunk_tokens or None
                if mem.settings.query_runtime in ("eager", "torchscript"):  # not the ONNX bundle's query path
                    cached.prepare_fast_queries("eager")
                res = dataclasses.replace(res, embedder=cached)
            mem._resolution = res
        return mem._resolution


def prepare_serving(mem: Any) -> bool:
    """Get a long-lived process ready to answer fast: open the indexes, load the model and give it the
    faster query path of the setting ``query_runtime`` (ONNX Runtime or TorchScript, cached under
    :attr:`graph_cache_dir`; :meth:`SentenceTransformerEmbedder.prepare_fast_queries`).

    Returns:
        True when queries are embedded on a faster path than the eager model.
    """
    mem.recall("warm up", 1, record=False)  # opens the indexes and loads the model
    embedder = mem.model_resolution().embedder
    if mem.settings.query_runtime == "eager" or embedder is None:
        return False
    prepare = getattr(embedder, "prepare_fast_queries", None)
    return bool(prepare(mem.settings.query_runtime, mem.graph_cache_dir)) if prepare is not None else False


def reranker(mem: Any) -> Any | None:
    """The second-stage :class:`~plur.embed.rerank.Reranker` (setting ``reranker``), loaded once; None when off."""
    if not mem.settings.reranker:
        return None
    with mem._lock:
        if mem._reranker is None:
            from ..embed.rerank import load_reranker

            mem._reranker = load_reranker(mem.settings.reranker, device=mem.settings.device)
        return mem._reranker
