"""The first stage of recall: the BM25 and dense legs run side by side (the query embedded on the
model thread while BM25 scores), filtered, and the fills that let fusion sum both legs' evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..index.recall import Fills


def legs(mem: Any, query: str, k: int, scope: str | None, types: Sequence[str] | None,
          tags: Sequence[str] | None, need_bm25: bool, need_dense: bool, include_expired: bool = False,
          scopes: frozenset[str] | None = None, required: Sequence[str] | None = None
          ) -> tuple[list[tuple[str, float]], list[tuple[str, float]], float, Fills]:
    """The two legs' rankings (validity-filtered), the query's BM25 full-match score and the fills.

    Fills (both legs run): ``({id: BM25 score} of dense-only candidates, {id: cosine} of BM25-only
    candidates)``, so that fusion sums both legs' evidence for every candidate; see
    :func:`plur.index.recall.combine`. ``scopes``: admit only engrams in these scopes (``None``: no limit);
    ``required``: only engrams carrying every one of these tags.
    """
    idx = mem._index(need_dense)
    mem._scan()
    allowed = mem._allowed(scope, types, tags, scopes, required)
    if allowed is not None and not allowed:
        return [], [], 0.0, ({}, {})
    n = max(k, mem.settings.candidates)
    blocked = mem._blocked(include_expired)
    if len(blocked) > 4 * n:  # many retired/expired: filter before the top-n cut instead of over-fetching
        allowed = (set(mem._by_id()) if allowed is None else allowed) - blocked
        blocked = set()
    fetch = n + len(blocked)

    def keep(ranking: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
        return [p for p in ranking if p[0] not in blocked][:n] if blocked else list(ranking)

    dense: list[tuple[str, float]] = []
    use_dense = need_dense and idx.dense is not None
    if use_dense:
        # A short queue is embedded now; a longer one by a background thread while this recall answers
        # from the last consistent dense index (BM25 finds the queued engrams), see plur.index.catchup.
        mem.catchup.before_search(idx)
        use_dense = bool(len(idx.dense))
    # the query is embedded on the model thread while this thread runs the BM25 leg; no lock is taken for it:
    # a background catch-up batch runs whole on the model thread too (plur.index.catchup), so the query waits
    # at most for the one small batch in flight (it waited for the model lock around the batch, issue 49).
    # A query embedded before is taken from the embedder's memo here, not queued behind that batch.
    qvec, known = None, None
    if use_dense:
        from ..embed import model_thread

        peek = getattr(idx.embedder, "cached_query", None)
        known = peek(query) if peek is not None else None
        if known is None:  # an ONNX query needs no model thread: on the query thread, not behind a batch
            beside = getattr(idx.embedder, "queries_beside_model", False)
            qvec = (model_thread.submit_query if beside else model_thread.submit)(idx.embedder.embed_query, query)
    bm25: list[tuple[str, float]] = []
    fills: Fills = ({}, {})
    if need_bm25:
        ranking, bm25_of = idx.lexical.search_scored(query, fetch, allowed)
        bm25 = keep(ranking)
    bm25_full = idx.lexical.match_score(query) if need_bm25 else 0.0
    if qvec is not None or known is not None:
        vector = known if known is not None else qvec.result()
        dense = keep(idx.dense.search(vector, fetch, allowed))
        if bm25 and mem.settings.fusion == "weighted":  # rrf fuses ranks, not scores
            in_bm25 = {i for i, _ in bm25}
            in_dense = {i for i, _ in dense}
            fills = (bm25_of(i for i in in_dense if i not in in_bm25),
                     idx.dense.scores_for(vector, (i for i in in_bm25 if i not in in_dense)))
    return bm25, dense, bm25_full, fills
