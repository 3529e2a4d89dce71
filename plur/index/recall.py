"""Query -> ranked :class:`Hit` list: fuse the BM25 and dense legs, keep per-leg ranks.

This module is pure: it takes the legs' ranked ``(id, score)`` lists (from
:mod:`plur.index.lexical` and :mod:`plur.index.dense`) and the engrams they name, and returns
hits. The facade (:mod:`plur.memory`) runs the legs, applies the scope filter
(an authorisation boundary) and records the recall in ``stats.db``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from dataclasses import dataclass

from . import fusion
from ..store.engram import Engram
from ..errors import ValidationError

MODES: tuple[str, ...] = ("hybrid", "bm25", "dense")
Ranking = Sequence[tuple[str, float]]
#: ``({engram id: BM25 score}, {engram id: cosine})``: a leg's score for candidates only the other leg returned.
Fills = tuple[Mapping[str, float], Mapping[str, float]]


@dataclass(frozen=True)
class Hit:
    """One recalled engram with its score and the evidence from each leg.

    Attributes:
        engram: the recalled engram.
        score: in [0, 1], higher is better, in every mode (see :func:`combine`). With the default
            ``weighted`` fusion it is absolute (it depends on the query and this engram only, never on
            the other candidates), so it is comparable across queries and ``min_score`` thresholds it:
            ``hybrid`` = ``(1 - dense_weight) * min(1, bm25/bm25_full) + dense_weight * max(0, cosine)``,
            ``bm25`` = ``min(1, bm25/bm25_full)``, ``dense`` = ``max(0, cosine)`` (``bm25_full``: the
            query's full-match score, :meth:`plur.index.lexical.BM25Index.match_score`). With ``rrf`` fusion it is the
            RRF sum divided by its maximum (1.0 = ranked first by both legs): a rank score, not
            comparable across queries.
        rank: 1-based rank in the returned list (ranks follow the score, ties by leg rank then id, except
            that a newer version of a fact is placed right before the older one: :mod:`plur.index.updates`).
        bm25_rank: 1-based rank in the BM25 leg (``None`` if it was not among that leg's candidates).
        bm25_score: raw Okapi BM25 score (>= 0, unbounded), or ``None``; in hybrid recall also filled in
            for an engram only the dense leg returned (its ``bm25_rank`` stays ``None``).
        dense_rank: 1-based rank in the dense leg, or ``None``.
        dense_score: raw cosine similarity in [-1, 1] of the best chunk, or ``None``; in hybrid recall
            also filled in for an engram only the BM25 leg returned (its ``dense_rank`` stays ``None``).
        context_matches: ``((neighbour engram id, (query term, ...)), ...)``: query terms that
            matched the BM25 document only through a neighbouring conversation turn (filled when
            recall is asked to explain; see :mod:`plur.index.context`).
        date_match: the engram's date falls in a date the query names (it got the date boost).
        below_floor: why the relevance floor keeps this hit out of the memory block ('' = it clears the
            floor, or no floor applies; :mod:`plur.index.floor`).
        earlier_than: id of a newer note among the hits that states a later version of this fact ('' = none;
            :mod:`plur.index.updates`): that note is placed before this one, and the block marks this one earlier.
        updates: id of the older note above the floor that this newer note is a later version of ('' = none);
            such a note clears the floor with it.
        answers: the question of a compound query this hit cleared the floor for, judged against that question
            alone ('' = none, or it cleared it for the whole query; :mod:`plur.index.parts`).
    """

    engram: Engram
    score: float
    rank: int
    bm25_rank: int | None = None
    bm25_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    context_matches: tuple[tuple[str, tuple[str, ...]], ...] = ()
    date_match: bool = False
    below_floor: str = ""
    earlier_than: str = ""
    updates: str = ""
    answers: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Hit":
        """The inverse of :meth:`to_dict` (a hit the service answered): ``context_matches`` back to pairs."""
        matches = data.get("context_matches") or {}
        return cls(**{**data, "engram": Engram.from_dict(data["engram"]),
                      "context_matches": tuple((i, tuple(t)) for i, t in dict(matches).items())})

    def to_dict(self) -> dict[str, object]:
        """JSON-safe form: the engram's dict plus the scores and ranks."""
        return {"rank": self.rank, "score": self.score, "bm25_rank": self.bm25_rank,
                "bm25_score": self.bm25_score, "dense_rank": self.dense_rank,
                "dense_score": self.dense_score, "engram": self.engram.to_dict(),
                "context_matches": {i: list(t) for i, t in self.context_matches}, "date_match": self.date_match,
                "below_floor": self.below_floor, "earlier_than": self.earlier_than, "updates": self.updates,
                "answers": self.answers}


def check_mode(mode: str) -> str:
    """Return ``mode`` if it is one of :data:`MODES`, else raise :class:`ValidationError`."""
    if mode not in MODES:
        raise ValidationError(f"invalid recall mode {mode!r}; use one of {', '.join(MODES)}")
    return mode


def combine(bm25: Ranking, dense: Ranking, *, mode: str, k: int, lookup: Callable[[str], Engram | None],
            fusion_method: str = "weighted", rrf_k: int = 60, dense_weight: float = 0.5,
            bm25_full: float | None = None, fills: Fills | None = None) -> list[Hit]:
    """Fuse the two legs into at most ``k`` hits, each scored in [0, 1] (higher is better).

    Scores (see :class:`Hit`): ``bm25`` mode ``min(1, bm25/bm25_full)`` (:func:`fusion.bm25_unit`); ``dense``
    mode ``max(0, cosine)`` (:func:`fusion.cosine_unit`); ``hybrid`` with ``weighted`` fusion the
    weighted sum of both (:func:`fusion.absolute`; a leg with no evidence for an engram adds 0, so a
    query no word of which matches scores at most ``dense_weight``); ``hybrid`` with ``rrf`` the RRF
    sum over its maximum ``1/(rrf_k + 1)``. Without a dense leg (no model), ``hybrid`` is ``bm25``.

    Args:
        bm25: BM25 ranking, best first, ``(engram id, score)``.
        dense: dense ranking, best first, ``(engram id, cosine)``.
        mode: ``hybrid`` fuses both; ``bm25`` / ``dense`` use one leg (the other leg's
            rank is still reported when that leg found the engram).
        k: number of hits wanted (>= 0).
        lookup: engram id -> :class:`Engram` (``None`` drops an id, e.g. forgotten meanwhile).
        fusion_method: ``weighted`` (absolute scores, the default) or ``rrf`` (Cormack et al. 2009).
        rrf_k: the RRF constant.
        dense_weight: weight of the dense leg (0..1); BM25 gets ``1 - dense_weight``.
        bm25_full: the query's BM25 full-match score (:meth:`plur.index.lexical.BM25Index.match_score`);
            ``None`` uses the best BM25 score of this list (callers without the index: tests).
        fills: ``hybrid`` + ``weighted`` only: ``(BM25 scores of engrams only the dense list holds,
            cosines of engrams only the BM25 list holds)``. Each leg returns its top ``candidates``; an
            engram the other leg ranked below its cut would count 0 there and lose to one both legs
            hold. With the fills every candidate sums both legs' scores, as a full-depth ranking
            would (LoCoMo conversations 1-5, turn level: README "Benchmark results"). A filled
            score shows in the hit's ``bm25_score`` / ``dense_score`` with its rank ``None``.

    Returns:
        Hits ranked 1..n, n <= k, scores non-increasing.
    """
    check_mode(mode)
    if k <= 0:
        return []
    b_pos = {doc: (i + 1, s) for i, (doc, s) in enumerate(bm25)}
    d_pos = {doc: (i + 1, s) for i, (doc, s) in enumerate(dense)}
    top = bm25_full if bm25_full is not None else max((s for _, s in bm25), default=0.0)
    if mode == "bm25" or (mode == "hybrid" and not dense):
        ranked: Sequence[tuple[str, float]] = [(d, fusion.bm25_unit(s, top)) for d, s in bm25]
    elif mode == "dense":
        ranked = [(d, fusion.cosine_unit(s)) for d, s in dense]
    elif fusion_method == "rrf":
        ranked = [(d, s * (rrf_k + 1) / 2.0) for d, s in fusion.rrf([bm25, dense], k=rrf_k)]
    else:
        ranked = fusion.absolute(bm25, dense, bm25_full=top, weights=[1.0 - dense_weight, dense_weight],
                                 fills=fills)
    bm25_fill, dense_fill = fills if fills is not None and mode == "hybrid" else ({}, {})
    hits: list[Hit] = []
    for doc, score in ranked:
        engram = lookup(doc)
        if engram is None:
            continue
        b = b_pos.get(doc, (None, bm25_fill.get(doc)))
        d = d_pos.get(doc, (None, dense_fill.get(doc)))
        hits.append(Hit(engram=engram, score=float(score), rank=len(hits) + 1,
                        bm25_rank=b[0], bm25_score=None if b[1] is None else float(b[1]),
                        dense_rank=d[0], dense_score=None if d[1] is None else float(d[1])))
        if len(hits) >= k:
            break
    return hits


def allowed_ids(engrams: Mapping[str, Engram], *, scope: str | None, types: Sequence[str] | None,
                tags: Sequence[str] | None, scopes: frozenset[str] | None = None) -> set[str] | None:
    """Ids an engram filter admits, or ``None`` when nothing is filtered (fast path).

    ``scope='project:a'`` admits engrams of scope ``project:a`` and ``global`` only:
    scope is authorisation, not a ranking hint. ``types`` admits any listed type;
    ``tags`` admits engrams carrying at least one listed tag. Validity (retired, expired) is
    not filtered here but by the facade, per recall (it depends on the time). ``scopes`` (a team member's
    readable scopes, :mod:`plur.service.access`) admits only engrams whose scope is in it, on top of ``scope``.
    """
    if scope is None and not types and not tags and scopes is None:
        return None
    type_set = set(types or ())
    tag_set = set(tags or ())
    out: set[str] = set()
    for eid, e in engrams.items():
        if scope is not None and e.scope not in (scope, "global"):
            continue
        if scopes is not None and e.scope not in scopes:
            continue
        if type_set and e.type not in type_set:
            continue
        if tag_set and not tag_set.intersection(e.tags):
            continue
        out.add(eid)
    return out
