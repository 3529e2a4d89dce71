"""After fusion: the date boost, the optional reranker, and the context explanation of hits.

Pure functions over :class:`~plur.index.recall.Hit` lists (the facade supplies the candidates,
the query's date ranges and the context bookkeeping):

* :func:`boost_dates`: a query that names a date (:func:`plur.index.dates.resolve`) lifts the
  candidates dated in it by ``boost`` times the best candidate's fused score, then re-ranks.
  Scale-free, so it means the same under weighted fusion (scores in [0, 1]) and RRF.
* :func:`rerank`: a :class:`~plur.embed.rerank.Reranker` reorders the top candidates.
* :func:`explain_context`: fills :attr:`Hit.context_matches` from the conversation context.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from .dates import DateRange, mentioned
from .recall import Hit

__all__ = ["boost_dates", "explain_context", "rerank"]


def _reranked(hits: Sequence[Hit], scores: Sequence[float], flags: Sequence[bool] | None = None,
              cap: float | None = None) -> list[Hit]:
    """Sort by ``scores`` (ties: the given order); the reported score is capped at ``cap`` when given."""
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    out = []
    for rank, i in enumerate(order, start=1):
        extra = {} if flags is None else {"date_match": flags[i]}
        score = float(scores[i]) if cap is None else min(cap, float(scores[i]))
        out.append(dataclasses.replace(hits[i], score=score, rank=rank, **extra))
    return out


def boost_dates(hits: Sequence[Hit], ranges: Sequence[DateRange], boost: float, *,
                mentions: bool = False) -> list[Hit]:
    """Lift hits whose engram date (``created``) falls in any of ``ranges``, or (``mentions``) whose text
    names a date in them ("yesterday" in a turn of 17 March 2022 is 16 March 2022: :func:`~plur.index.dates.mentioned`).

    Those hits rank by ``score + boost * max(score)``; others keep their score. The reported score is
    capped at 1, so scores stay in [0, 1] and ranks still follow them (a lifted hit may tie at 1.0 with
    the one it overtook). Ties keep the fused order. ``ranges == []`` or ``boost == 0`` returns the hits unchanged.

    Args:
        hits: fused candidates, best first.
        ranges: the date ranges the query names.
        boost: share of the best fused score added (>= 0; setting ``date_boost``).
        mentions: also match the dates each hit's statement names, resolved against its ``created``
            (setting ``date_mentions``).

    Returns:
        The same hits re-ranked (``rank`` renumbered, ``date_match`` set).
    """
    if not hits or not ranges or boost <= 0:
        return list(hits)
    top = max(h.score for h in hits)
    lift = boost * (top if top > 0 else 1.0)
    flags = [_dated_in(h, ranges, mentions) for h in hits]
    if not any(flags):
        return list(hits)
    return _reranked(hits, [h.score + lift if f else h.score for h, f in zip(hits, flags)], flags, cap=1.0)


def _dated_in(hit: Hit, ranges: Sequence[DateRange], mentions: bool) -> bool:
    created = hit.engram.created
    if any(r.contains(created) for r in ranges):
        return True
    return mentions and any(r.overlaps(m) for m in mentioned(hit.engram.statement, created) for r in ranges)


def rerank(hits: Sequence[Hit], query: str, reranker: Any, top_n: int) -> list[Hit]:
    """Reorder the first ``top_n`` hits by ``reranker.score(query, statements)``; the rest follow.

    The reranked hits' ``score`` becomes the reranker's score (higher is better; its range is the
    reranker's, e.g. a cross-encoder logit); hits after ``top_n`` keep their order below them.
    """
    head, tail = list(hits[:top_n]), list(hits[top_n:])
    if len(head) < 2:
        return list(hits)
    scores = [float(s) for s in reranker.score(query, [h.engram.statement for h in head])]
    if len(scores) != len(head):
        raise ValueError(f"reranker returned {len(scores)} scores for {len(head)} passages")
    out = _reranked(head, scores)
    return out + [dataclasses.replace(h, rank=len(out) + i + 1) for i, h in enumerate(tail)]


def explain_context(hits: Sequence[Hit], query: str, index: Any) -> list[Hit]:
    """Fill each hit's ``context_matches``: query terms its BM25 document matched only in neighbours.

    Args:
        hits: recalled hits.
        query: the query.
        index: the :class:`~plur.index.indexes.IndexSet` (its ``context`` and ``tokenizer``).
    """
    out = []
    for h in hits:
        m = index.context.matches(index.tokenizer, query, h.engram.id, h.engram.statement)
        out.append(dataclasses.replace(h, context_matches=m) if m else h)
    return out
