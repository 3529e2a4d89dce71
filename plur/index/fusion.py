"""Pure functions that fuse ranked lists of ``(id, score)`` into one ranking.

Each input list is one retriever's output (a "leg": BM25, dense...), best first.
Both functions return ``[(id, fused_score), ...]`` with higher = better, over the
union of the ids, and break ties deterministically: the better best single rank
in any leg first, then the smaller id. Within one list only the first (best)
occurrence of an id counts. A list with weight 0 contributes nothing, not even
its ids.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..errors import ValidationError

__all__ = ["absolute", "bm25_unit", "cosine_unit", "rrf", "weighted"]

Ranking = Sequence[tuple[str, float]]


def _check_weights(rankings: Sequence[Ranking], weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValidationError(
            f"got {len(weights)} weights for {len(rankings)} rankings; pass one weight per ranking"
        )
    out = []
    for w in weights:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValidationError(f"fusion weight must be a finite number >= 0, got {w!r}")
        out.append(float(w))
    return out


def _order(scores: dict[str, float], best_rank: dict[str, int]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], best_rank[item[0]], item[0]))


def rrf(rankings: Sequence[Ranking], k: int = 60,
        weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """Reciprocal Rank Fusion (Cormack, Clarke & Buettcher, SIGIR 2009).

    ``score(d) = sum_i w_i / (k + rank_i(d))`` over the lists ``i`` that contain
    ``d``, with ``rank_i`` 1-based. Only the order of each list matters; its scores
    are ignored, so legs with incomparable score scales fuse without tuning.

    Args:
        rankings: lists of ``(id, score)``, each ordered best first.
        k: the RRF constant, >= 0 (60 in the paper); larger k flattens the
            advantage of top ranks.
        weights: one weight >= 0 per list; ``None`` gives every list weight 1.

    Returns:
        ``(id, fused score)`` best first; scores lie in ``(0, sum(weights) / (k + 1)]``.
        ``[]`` when every list is empty.

    Raises:
        ValidationError: if ``k`` < 0 or the weights are malformed.
    """
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k < 0:
        raise ValidationError(f"RRF k must be a finite number >= 0, got {k!r}; the paper uses 60")
    ws = _check_weights(rankings, weights)
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for ranking, w in zip(rankings, ws):
        if w == 0:
            continue
        seen: set[str] = set()
        rank = 0
        for doc_id, _score in ranking:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            rank += 1
            scores[doc_id] = scores.get(doc_id, 0.0) + w / (k + rank)
            if rank < best_rank.get(doc_id, rank + 1):
                best_rank[doc_id] = rank
    return _order(scores, best_rank)


def weighted(rankings: Sequence[Ranking], weights: Sequence[float]) -> list[tuple[str, float]]:
    """Weighted sum of min-max normalised scores (CombSUM with min-max; Fox & Shaw, TREC-2 1994).

    Each list's scores are mapped to [0, 1] by ``(s - min) / (max - min)`` over that
    list; a list whose scores are all equal maps every entry to 1.0. An id missing
    from a list gets 0 there. ``fused(d) = sum_i w_i * norm_i(d)``.

    Args:
        rankings: lists of ``(id, score)``, higher score = better, each ordered best first
            (the order only breaks ties).
        weights: one weight >= 0 per list, e.g. ``(1 - dense_weight, dense_weight)``.

    Returns:
        ``(id, fused score)`` best first, scores in ``[0, sum(weights)]``; ``[]`` when
        every list is empty.

    Raises:
        ValidationError: if the weights are malformed or a score is not finite.
    """
    ws = _check_weights(rankings, weights)
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for ranking, w in zip(rankings, ws):
        if w == 0 or not ranking:
            continue
        first: dict[str, float] = {}
        for doc_id, score in ranking:
            if not math.isfinite(score):
                raise ValidationError(f"score of {doc_id!r} is {score!r}; fusion needs finite scores")
            first.setdefault(doc_id, float(score))
        lo, hi = min(first.values()), max(first.values())
        span = hi - lo
        for rank, (doc_id, score) in enumerate(first.items(), start=1):
            norm = (score - lo) / span if span > 0 else 1.0
            scores[doc_id] = scores.get(doc_id, 0.0) + w * norm
            if rank < best_rank.get(doc_id, rank + 1):
                best_rank[doc_id] = rank
    return _order(scores, best_rank)


def bm25_unit(score: float, full_score: float) -> float:
    """A BM25 score on the absolute scale [0, 1]: ``min(1, score / full_score)``.

    ``full_score`` is the query's full-match score (:meth:`plur.index.lexical.BM25Index.match_score`):
    what a document of average length holding each query term once scores. 1.0 means "at least as much
    lexical evidence as a full match", 0.5 half of it. Unlike min-max it does not depend on the other
    candidates: the best hit of a weak query stays low. Capping at 1 leaves the order among strong
    lexical matches to the dense leg; measured on LoCoMo (turn level, 1,536 questions) it ranks on a
    par with per-query min-max, while an uncapped ``score / ((k1 + 1) * full_score)`` lost 5 points of
    Recall@5 (0.545 against 0.599).
    0.0 when ``full_score <= 0`` (nothing can match).
    """
    if full_score <= 0 or not math.isfinite(score):
        return 0.0
    return min(1.0, max(0.0, score / full_score))


def cosine_unit(cosine: float) -> float:
    """A cosine similarity on the absolute scale [0, 1]: ``max(0, cosine)``.

    Sentence-embedding cosines at or below 0 mean "unrelated"; clipping keeps 0 as "no evidence"
    on both legs, so a hybrid score of 0 means neither leg found anything.
    """
    return min(1.0, max(0.0, float(cosine))) if math.isfinite(cosine) else 0.0


def absolute(bm25: Ranking, dense: Ranking, *, bm25_full: float, weights: Sequence[float],
             fills: tuple[Mapping[str, float], Mapping[str, float]] | None = None) -> list[tuple[str, float]]:
    """Weighted sum of absolute per-leg scores (plur's hybrid score).

    ``score(d) = w_bm25 * bm25_unit(bm25(d), bm25_full) + w_dense * cosine_unit(cos(d))``, a leg with
    no score for ``d`` (not returned, not in ``fills``) contributing 0 (the convention of CombSUM, Fox &
    Shaw, TREC-2 1994). Each
    leg's value depends only on the query and the document, never on the other candidates (min-max
    normalisation maps every query's best hit to 1 and its worst to 0, so a threshold on it means
    nothing), which makes scores comparable across queries and ``min_score`` a real threshold.

    Args:
        bm25: BM25 ranking ``(id, Okapi score)``, best first.
        dense: dense ranking ``(id, cosine)``, best first.
        bm25_full: the query's BM25 full-match score (see :func:`bm25_unit`).
        weights: ``(w_bm25, w_dense)``, each >= 0; with weights summing to 1 scores lie in [0, 1].
        fills: ``({id: BM25 score}, {id: cosine})`` for ids a leg did not return (its score below the
            leg's cut): they add their unit score for that leg instead of 0. Ids in neither ranking are
            ignored (fills add evidence to candidates, never candidates).

    Returns:
        ``(id, score)`` best first; ties by best single-leg rank, then id. ``[]`` for two empty legs.

    Raises:
        ValidationError: malformed weights.
    """
    ws = _check_weights([bm25, dense], weights)
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    units = (lambda x: bm25_unit(x, bm25_full), cosine_unit)
    seen: tuple[set[str], set[str]] = (set(), set())
    for ranking, w, unit, leg_seen in zip((bm25, dense), ws, units, seen):
        if w == 0:
            continue
        for rank, (doc_id, score) in enumerate(ranking, start=1):
            if doc_id in leg_seen:
                continue
            leg_seen.add(doc_id)
            scores[doc_id] = scores.get(doc_id, 0.0) + w * unit(score)
            if rank < best_rank.get(doc_id, rank + 1):
                best_rank[doc_id] = rank
    for fill, w, unit, leg_seen in zip(fills or (), ws, units, seen):
        for doc_id, score in fill.items():
            if w and doc_id in scores and doc_id not in leg_seen:
                scores[doc_id] += w * unit(score)
    return _order(scores, best_rank)
