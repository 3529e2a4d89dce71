"""Which models serve a :class:`~plur.memory.Memory`: the embedding model (wrapped in the on-disk
embedding cache), its faster query path for a long-lived process, the second-stage reranker, and
the folders their caches live in. Each is resolved once, on first need (``plur learn`` loads none).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any


def fallback_warnings(mem: Any) -> list[str]:
    """The loud lines of the resolved embedding model (a fallback to the packaged model or to BM25 only, int8
    not in use), ``[]`` before it resolves: never waits for the model. The service adds them to its answers so
    a command answered there says what one answered in-process says (``plur.cli``'s stderr handler)."""
    res = getattr(mem, "_resolution", None)  # a team member's view has none of its own: nothing to say
    return [w for w in getattr(res, "warnings", ()) if w.startswith("plur:")] if res is not None else []


def cache_dir(mem: Any) -> Path:
    """Folder of the embedding cache: :attr:`plur.memory.Memory.cache_dir`, which documents it."""
    return Path(mem.settings.cache_dir).expanduser() if mem.settings.cache_dir else mem.home / "cache"


def graph_cache_dir(mem: Any) -> Path:
    """Folder of exported query graphs: :attr:`plur.memory.Memory.graph_cache_dir`, which documents it."""
    if mem.settings.cache_dir:
        return mem.cache_dir
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "plur"


def model_resolution(mem: Any) -> Any:
    """Resolve (once) the embedding model: :meth:`plur.memory.Memory.model_resolution`, which documents it."""
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


def warm_model(mem: Any) -> Any:
    """Load ``mem``'s model and open a deferred ONNX bundle (issue 49: opened at first need, so a warm-up that
    embeds nothing, an empty store's, left the session to the first query); returns the embedder or None."""
    resolve = getattr(mem, "model_resolution", None)
    embedder = getattr(resolve(), "embedder", None) if resolve is not None else None
    getattr(getattr(embedder, "inner", None), "bundle", None)
    return embedder


def prepare_serving(mem: Any) -> bool:
    """Get a long-lived process ready to answer fast: :meth:`plur.memory.Memory.prepare_serving`, which documents it."""
    mem.recall("warm up", 1, record=False)  # opens the indexes and loads the model
    embedder = warm_model(mem)
    if mem.settings.query_runtime == "eager" or embedder is None:
        return False
    prepare = getattr(embedder, "prepare_fast_queries", None)
    return bool(prepare(mem.settings.query_runtime, mem.graph_cache_dir)) if prepare is not None else False


def reranker(mem: Any) -> Any | None:
    """The second-stage reranker, loaded once: :meth:`plur.memory.Memory.reranker`, which documents it."""
    if not mem.settings.reranker:
        return None
    with mem._lock:
        if mem._reranker is None:
            from ..embed.rerank import load_reranker

            mem._reranker = load_reranker(mem.settings.reranker, device=mem.settings.device)
        return mem._reranker
