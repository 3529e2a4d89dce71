"""Recall scores mean one thing: [0, 1], higher is better, absolute (independent of the other candidates)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from plur.errors import ValidationError
from plur.index import fusion
from plur.index.lexical import BM25Index
from plur.index.recall import combine
from plur.memory import Memory
from plur.store.engram import Engram

IDS = st.sampled_from([f"d{i}" for i in range(12)])
BM25_LEG = st.lists(st.tuples(IDS, st.floats(0.0, 50.0)), max_size=12, unique_by=lambda p: p[0]).map(
    lambda xs: sorted(xs, key=lambda p: -p[1]))
DENSE_LEG = st.lists(st.tuples(IDS, st.floats(-1.0, 1.0)), max_size=12, unique_by=lambda p: p[0]).map(
    lambda xs: sorted(xs, key=lambda p: -p[1]))
ENGRAMS = {f"d{i}": Engram.create(f"doc {i}") for i in range(12)}


@settings(max_examples=300, deadline=None)
@given(bm25=BM25_LEG, dense=DENSE_LEG, slack=st.floats(1.0, 4.0), w=st.floats(0.0, 1.0),
       mode=st.sampled_from(["hybrid", "bm25", "dense"]), method=st.sampled_from(["weighted", "rrf"]))
def test_every_score_is_in_unit_range_and_ranks_follow_scores(bm25, dense, slack, w, mode, method) -> None:
    top = max((s for _, s in bm25), default=0.0) * slack
    hits = combine(bm25, dense, mode=mode, k=20, lookup=ENGRAMS.get, fusion_method=method, dense_weight=w,
                   bm25_full=top)
    scores = [h.score for h in hits]
    assert all(0.0 <= s <= 1.0 + 1e-12 and math.isfinite(s) for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


@settings(max_examples=300, deadline=None)
@given(bm25=BM25_LEG, dense=DENSE_LEG, extra_b=st.floats(0.0, 50.0), extra_d=st.floats(-1.0, 1.0))
def test_a_score_does_not_depend_on_the_other_candidates(bm25, dense, extra_b, extra_d) -> None:
    """What min-max destroys: adding a candidate changes no other engram's weighted score."""
    top = 100.0
    before = {h.engram.id: h.score for h in combine(bm25, dense, mode="hybrid", k=20, lookup=ENGRAMS.get,
                                                    bm25_full=top)}
    new = ("zz", extra_b)
    more = dict(ENGRAMS, zz=Engram.create("new doc"))
    after = {h.engram.id: h.score for h in combine(sorted(bm25 + [new], key=lambda p: -p[1]),
                                                   sorted(dense + [("zz", extra_d)], key=lambda p: -p[1]),
                                                   mode="hybrid", k=20, lookup=more.get, bm25_full=top)}
    if bm25 and dense:  # with both legs present the formula is the weighted sum throughout
        assert all(after[i] == pytest.approx(s) for i, s in before.items())


def test_no_lexical_match_scores_the_weighted_cosine_not_the_raw_one() -> None:
    hits = combine([], [("d1", 0.6), ("d2", -0.07)], mode="hybrid", k=5, lookup=ENGRAMS.get, dense_weight=0.5,
                   bm25_full=0.0)
    assert [(h.engram.id, h.score, h.dense_score) for h in hits] == [
        (ENGRAMS["d1"].id, 0.3, 0.6), (ENGRAMS["d2"].id, 0.0, -0.07)]
    assert fusion.cosine_unit(-0.07) == 0.0 and fusion.bm25_unit(5.0, 10.0) == 0.5


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(st.text(alphabet="abcde ", min_size=1, max_size=30), min_size=1, max_size=15),
       query=st.text(alphabet="abcde ", min_size=1, max_size=12))
def test_bm25_match_score_bounds_every_hit(docs, query) -> None:
    idx = BM25Index()
    idx.add([f"d{i}" for i in range(len(docs))], docs)
    full = idx.match_score(query)
    for _, s in idx.search(query, 50):
        assert 0.0 < s <= (idx.k1 + 1.0) * full * (1 + 1e-9)


def test_match_score_is_the_score_of_an_average_document_holding_each_term_once() -> None:
    idx = BM25Index()
    idx.add(["a", "b", "c", "d"], ["red fox jumps", "blue fox sleeps", "green owl flies", "red owl hoots"])
    full = idx.match_score("red fox")
    (top, score), *_ = idx.search("red fox", 4)
    assert top == "a" and score == pytest.approx(full)             # every document has the average length
    assert fusion.bm25_unit(score, full) == pytest.approx(1.0)
    assert idx.match_score("zebra") == 0.0 and idx.match_score("red zebra") == pytest.approx(idx.match_score("red"))


def test_real_recall_scores_are_absolute_and_min_score_filters(memory: Memory) -> None:
    for text in ["The user's dog is a border collie named Juno.", "Deploys go through the staging cluster first.",
                 "The user is allergic to peanuts.", "Tea is served at four o'clock."]:
        memory.learn(text)
    strong = memory.recall("border collie named Juno", 4)
    weak = memory.recall("quantum chromodynamics lattice", 4)
    assert all(0.0 <= h.score <= 1.0 for h in strong + weak)
    # min-max would give the best hit of any query 1.0; absolute scores keep a weak query's best hit low
    assert strong[0].score > 0.5 > weak[0].score
    w = memory.settings.dense_weight
    for h in weak:   # no lexical match: the score is the weighted, clipped cosine
        assert h.bm25_rank is None and h.score == pytest.approx(w * max(0.0, h.dense_score))
    kept = memory.recall("border collie named Juno", 4, min_score=0.5)
    assert kept and all(h.score >= 0.5 for h in kept) and memory.recall("quantum chromodynamics", 4, min_score=0.5) == []
    with pytest.raises(ValidationError, match="min_score"):
        memory.recall("x", 3, min_score=1.5)
