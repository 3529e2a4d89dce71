"""Query -> ranked :class:`Hit` list: fuse the BM25 and dense legs, keep per-leg ranks.

This module is pure: it takes the legs' ranked ``(id, score)`` lists (from
:mod:`plur.index.lexical` and :mod:`plur.index.dense`) and the engrams they name, and returns
hits. The facade (:mod:`plur.memory`) runs the legs, applies the scope filter
(an authorisation boundary) and records the recall in ``stats.db``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from . import fusion
from ..store.engram import Engram
from ..errors import ValidationError

MODES: tuple[str, ...] = ("hybrid", "bm25", "dense")
Ranking = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class Hit:
    """One recalled engram with its fused score and the evidence from each leg.

    Attributes:
        engram: the recalled engram.
        score: fused score, higher is better. RRF: ``sum 1/(k + rank)``, in (0, 2/(k+1)];
            weighted: in [0, 1]; single-leg modes: that leg's raw score.
        rank: 1-based rank in the returned list.
        bm25_rank: 1-based rank in the BM25 leg (``None`` if BM25 did not return it).
        bm25_score: Okapi BM25 score (>= 0, unbounded), or ``None``.
        dense_rank: 1-based rank in the dense leg, or ``None``.
        dense_score: cosine similarity in [-1, 1] of the best chunk, or ``None``.
        context_matches: ``((neighbour engram id, (query term, ...)), ...)``: query terms that
            matched the BM25 document only through a neighbouring conversation turn (filled when
            recall is asked to explain; see :mod:`plur.index.context`).
        date_match: the engram's date falls in a date the query names (it got the date boost).
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

    def to_dict(self) -> dict[str, object]:
        """JSON-safe form: the engram's dict plus the scores and ranks."""
        return {"rank": self.rank, "score": self.score, "bm25_rank": self.bm25_rank,
                "bm25_score": self.bm25_score, "dense_rank": self.dense_rank,
                "dense_score": self.dense_score, "engram": self.engram.to_dict(),
                "context_matches": {i: list(t) for i, t in self.context_matches}, "date_match": self.date_match}


def check_mode(mode: str) -> str:
    """Return ``mode`` if it is one of :data:`MODES`, else raise :class:`ValidationError`."""
    if mode not in MODES:
        raise ValidationError(f"invalid recall mode {mode!r}; use one of {', '.join(MODES)}")
    return mode


def combine(bm25: Ranking, dense: Ranking, *, mode: str, k: int, lookup: Callable[[str], Engram | None],
            fusion_method: str = "rrf", rrf_k: int = 60, dense_weight: float = 0.5) -> list[Hit]:
    """Fuse the two legs into at most ``k`` hits.

    Args:
        bm25: BM25 ranking, best first, ``(engram id, score)``.
        dense: dense ranking, best first, ``(engram id, cosine)``.
        mode: ``hybrid`` fuses both; ``bm25`` / ``dense`` use one leg (the other leg's
            rank is still reported when that leg found the engram).
        k: number of hits wanted (>= 0).
        lookup: engram id -> :class:`Engram` (``None`` drops an id, e.g. forgotten meanwhile).
        fusion_method: ``rrf`` (Cormack et al. 2009) or ``weighted`` (min-max normalised sum).
        rrf_k: the RRF constant.
        dense_weight: weight of the dense leg in weighted fusion; BM25 gets ``1 - dense_weight``.

    Returns:
        Hits ranked 1..n, n <= k.
    """
    check_mode(mode)
    if k <= 0:
        return []
    b_pos = {doc: (i + 1, s) for i, (doc, s) in enumerate(bm25)}
    d_pos = {doc: (i + 1, s) for i, (doc, s) in enumerate(dense)}
    if mode == "bm25":
        ranked: Sequence[tuple[str, float]] = bm25
    elif mode == "dense":
        ranked = dense
    elif not dense:
        ranked = bm25
    elif not bm25:
        ranked = dense
    elif fusion_method == "weighted":
        ranked = fusion.weighted([bm25, dense], weights=[1.0 - dense_weight, dense_weight])
    else:
        ranked = fusion.rrf([bm25, dense], k=rrf_k)
    hits: list[Hit] = []
    for doc, score in ranked:
        engram = lookup(doc)
        if engram is None:
            continue
        b = b_pos.get(doc, (None, None))
        d = d_pos.get(doc, (None, None))
        hits.append(Hit(engram=engram, score=float(score), rank=len(hits) + 1,
                        bm25_rank=b[0], bm25_score=None if b[1] is None else float(b[1]),
                        dense_rank=d[0], dense_score=None if d[1] is None else float(d[1])))
        if len(hits) >= k:
            break
    return hits


def allowed_ids(engrams: Mapping[str, Engram], *, scope: str | None, types: Sequence[str] | None,
                tags: Sequence[str] | None) -> set[str] | None:
    """Ids an engram filter admits, or ``None`` when nothing is filtered (fast path).

    ``scope='project:a'`` admits engrams of scope ``project:a`` and ``global`` only:
    scope is authorisation, not a ranking hint. ``types`` admits any listed type;
    ``tags`` admits engrams carrying at least one listed tag. Retired engrams are
    never indexed, so they need no filter here.
    """
    if scope is None and not types and not tags:
        return None
    type_set = set(types or ())
    tag_set = set(tags or ())
    out: set[str] = set()
    for eid, e in engrams.items():
        if scope is not None and e.scope not in (scope, "global"):
            continue
        if type_set and e.type not in type_set:
            continue
        if tag_set and not tag_set.intersection(e.tags):
            continue
        out.add(eid)
    return out
