"""The recall pipeline of a :class:`~plur.memory.Memory`: checks, the two legs
(:mod:`plur.memory.legs`), fusion (:func:`plur.index.recall.combine`), the second stage (date boost,
relevance floor marks, reranker, context explanations), the cut to k, and the stats.db record.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..store.engram import _check_scope, parse_time, utcnow

if TYPE_CHECKING:  # pragma: no cover
    from ..index.recall import Hit


#: Longest query recall reads, characters; a longer one is cut to its start. The dense leg reads its first
#: 512 tokens anyway; BM25 and the tokenizer cost time with every further term, and a 4 MB query held the
#: service for 5.8 s while a concurrent small recall waited (issue 38). 8,192 characters is several pages.
MAX_QUERY_CHARS = 8192


def bound_query(query: str) -> str:
    """``query`` cut to :data:`MAX_QUERY_CHARS` characters (at a word boundary when one is near the end)."""
    if len(query) <= MAX_QUERY_CHARS:
        return query
    cut = query[:MAX_QUERY_CHARS]
    space = cut.rfind(" ", MAX_QUERY_CHARS - 200)
    return cut[:space] if space > 0 else cut


def check_query(mem: Any, query: Any, k: Any, scope: str | None) -> None:
    if not isinstance(query, str):
        raise ValidationError(f"query must be text, got {type(query).__name__} {query!r:.60}")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"query is not valid Unicode text ({exc.reason} at position {exc.start}); "
                              "check the terminal's or caller's encoding (UTF-8 expected)") from None
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValidationError(f"k must be a non-negative integer, got {k!r}")
    if scope is not None:
        _check_scope(scope)


def recall(mem: Any, query: str, k: int = 10, *, scope: str | None = None, types: Sequence[str] | None = None,
           tags: Sequence[str] | None = None, mode: str = "hybrid", agent: str | None = None,
           record: bool = True, min_score: float | None = None, include_expired: bool = False,
           now: Any = None, explain: bool = False, scopes: frozenset[str] | None = None,
           required: Sequence[str] | None = None) -> list[Hit]:
    """Engrams relevant to ``query``, best first: :meth:`plur.memory.Memory.recall`, which documents it
    (``required``: tags every hit carries, its ``metadata=``)."""
    check_query(mem, query, k, scope)
    query = bound_query(query)
    from ..index.recall import check_mode, combine

    check_mode(mode)
    if min_score is not None and (isinstance(min_score, bool) or not isinstance(min_score, (int, float))
                                  or not 0.0 <= min_score <= 1.0):
        raise ValidationError(f"min_score must be a number in [0, 1] (scores are in [0, 1]), got {min_score!r}")
    if k == 0 or not query.strip():
        return []
    t0 = time.perf_counter()
    s = mem.settings
    with mem._lock:
        # Without an embedding model, dense recall degrades to BM25 (the fallback was already loud).
        mode_used = "bm25" if mode == "dense" and mem._index(mode != "bm25").dense is None else mode
        bm25, dense, top, fills = mem._legs(query, k, scope, types, tags, mode_used != "dense",
                                             mode_used != "bm25", include_expired, scopes, required)
        fuse = lambda b, d, t, f, n: combine(b, d, mode=mode_used, k=n, lookup=mem._get_or_none,  # noqa: E731
                                             fusion_method=s.fusion, rrf_k=s.rrf_k, dense_weight=s.dense_weight,
                                             bm25_full=t, fills=f)

        def parts(n: int) -> list[tuple[str, dict[str, float]]]:
            """Each question of a compound query recalled alone, as (question, {id: score}) (:mod:`plur.index.parts`)."""
            from ..index.parts import question_parts

            out = []
            for question in question_parts(query):
                legs = mem._legs(question, n, scope, types, tags, mode_used != "dense", mode_used != "bm25",
                                 include_expired, scopes, required)
                out.append((question, {h.engram.id: h.score for h in fuse(*legs, n)}))
            return out
        hits = second_stage(mem, query, k, now, explain, mode_used, lambda n: fuse(bm25, dense, top, fills, n),
                            parts=parts)
    if min_score is not None:
        hits = [h for h in hits if h.score >= min_score]
    latency_ms = (time.perf_counter() - t0) * 1000.0
    if record and s.record_stats:
        mem.stats.record_recall(agent=agent, scope=scope, query=query, mode=mode, latency_ms=latency_ms,
                                 hits=hits)
    return hits


def second_stage(mem: Any, query: str, k: int, now: Any, explain: bool, mode: str, fused: Any,
                 parts: Any = None) -> list[Hit]:
    """Date boost, relevance floor marks and reranker over the fused candidates (``fused(n)`` -> top n
    hits), then the cut to k. The floor judges the fused (and date-boosted) score, before any reranker; a hit it
    keeps out is judged again against each question of a compound query (``parts(n)`` -> ``[(question, {id:
    score})]``, :func:`plur.index.floor.clear_by_parts`)."""
    from ..index import stages
    from ..index.dates import resolve
    from ..index.floor import mark
    from ..index.updates import TOP

    s = mem.settings
    ranges = resolve(query, parse_time(now, "now") if now is not None else utcnow()) if s.date_boost else []
    reranker = mem.reranker()
    newest = s.newest_first and mode != "bm25"
    floor = relevance_floor(mem, mode)

    def marked(hits: list[Hit], n: int) -> list[Hit]:
        hits = mark(hits, floor)
        if parts is not None and floor.active and any(h.below_floor for h in hits):
            from ..index.floor import clear_by_parts

            hits = clear_by_parts(hits, parts(n), floor)
        return hits
    if not ranges and reranker is None and not newest:
        hits = marked(fused(k), k)
    else:
        # every later step sees the same candidates whatever k is, so recall(k=50)[:10] == recall(k=10)
        n = max(k, s.candidates) if ranges or reranker is not None else max(k, TOP)
        hits = stages.boost_dates(fused(n), ranges, s.date_boost, mentions=s.date_mentions)
        hits = marked(hits, n)
        if reranker is not None:
            hits = stages.rerank(hits, query, reranker, max(k, s.rerank_top_n))
        if newest:
            hits = newest_first(mem, query, hits)
        hits = hits[:k]
    return stages.explain_context(hits, query, mem._index(need_dense=False)) if explain else hits


def newest_first(mem: Any, query: str, hits: list[Hit]) -> list[Hit]:
    """Versions of one fact among ``hits``, newest first (:mod:`plur.index.updates`; setting ``newest_first``).
    Needs the dense index (each note's piece closest to the query); without one the hits are returned as they are."""
    from ..index.updates import newest_first as order

    idx = mem._indexes
    dense = idx.dense if idx is not None else None
    if dense is None or len(hits) < 2 or all(h.below_floor for h in hits):
        return hits
    qvec = idx.embedder.embed_query(query)   # memoised by the embedding cache: the legs just embedded it
    return order(hits, lambda ids: dense.closest_pieces(qvec, ids), query)


def relevance_floor(mem: Any, mode: str = "hybrid") -> Any:
    """The relevance floor recalls in ``mode`` apply: :meth:`plur.memory.Memory.relevance_floor`, which documents it."""
    from ..index.floor import resolve_floor

    idx = mem._indexes
    identity = getattr(idx.embedder, "identity", None) if idx is not None and idx.dense is not None else None
    return resolve_floor(mem.settings.relevance_floor, identity, mode)


def recall_legs(mem: Any, query: str, k: int = 10, *, scope: str | None = None, agent: str | None = None,
                record: bool = True) -> dict[str, list[Hit]]:
    """The hybrid, BM25 and dense rankings side by side: :meth:`plur.memory.Memory.recall_legs`, which documents it."""
    check_query(mem, query, k, scope)
    query = bound_query(query)
    if k == 0 or not query.strip():
        return {"hybrid": [], "bm25": [], "dense": []}
    from ..index.recall import combine

    t0 = time.perf_counter()
    s = mem.settings
    with mem._lock:
        bm25, dense, top, fills = mem._legs(query, k, scope, None, None, True, True)
        out = {m: second_stage(mem, query, k, None, True, m, lambda n, m=m: combine(
            bm25, dense, mode=m, k=n, lookup=mem._get_or_none, fusion_method=s.fusion, rrf_k=s.rrf_k,
            dense_weight=s.dense_weight, bm25_full=top, fills=fills)) for m in ("hybrid", "bm25", "dense")}
    if record and s.record_stats:
        mem.stats.record_recall(agent=agent, scope=scope, query=query, mode="hybrid",
                                 latency_ms=(time.perf_counter() - t0) * 1000.0, hits=out["hybrid"])
    return out
