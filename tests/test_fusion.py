"""Tests for plur.index.fusion: literal inputs with hand-computed expected values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plur.errors import ValidationError
from plur.index.fusion import rrf, weighted


def close(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> bool:
    return [i for i, _ in got] == [i for i, _ in expected] and all(
        math.isclose(g, e, rel_tol=0, abs_tol=1e-12) for (_, g), (_, e) in zip(got, expected)
    )


# ----------------------------------------------------------------------------- rrf
def test_rrf_two_legs_hand_computed() -> None:
    bm25 = [("a", 9.0), ("b", 5.0), ("c", 1.0)]
    dense = [("b", 0.9), ("d", 0.8)]
    # a: 1/61; b: 1/62 + 1/61; c: 1/63; d: 1/62
    assert close(rrf([bm25, dense]), [("b", 1 / 62 + 1 / 61), ("a", 1 / 61), ("d", 1 / 62), ("c", 1 / 63)])


def test_rrf_ignores_scores_only_order_counts() -> None:
    assert rrf([[("x", 1000.0), ("y", -5.0)]]) == rrf([[("x", 0.1), ("y", 0.2)]])


def test_rrf_k_and_weights() -> None:
    got = rrf([[("a", 1.0), ("b", 1.0)], [("b", 1.0)]], k=10, weights=[1.0, 3.0])
    # a: 1/11; b: 1/12 + 3/11
    assert close(got, [("b", 1 / 12 + 3 / 11), ("a", 1 / 11)])


def test_rrf_tie_broken_by_best_single_rank_then_id() -> None:
    # k=0: z = 1/1 = 1 (rank 1), a = 2/2 = 1 (rank 2), c = 2/1 = 2
    got = rrf([[("z", 0.0)], [("c", 0.0), ("a", 0.0)]], k=0, weights=[1, 2])
    assert got == [("c", 2.0), ("z", 1.0), ("a", 1.0)]
    # equal score and equal best rank: smaller id first, whatever the input order
    assert rrf([[("b", 1.0)], [("a", 1.0)]]) == [("a", 1 / 61), ("b", 1 / 61)]
    assert rrf([[("a", 1.0)], [("b", 1.0)]]) == [("a", 1 / 61), ("b", 1 / 61)]


def test_rrf_duplicate_in_one_list_counts_once() -> None:
    assert close(rrf([[("a", 3.0), ("a", 2.0), ("b", 1.0)]]), [("a", 1 / 61), ("b", 1 / 62)])


def test_rrf_zero_weight_list_contributes_nothing() -> None:
    assert rrf([[("a", 1.0)], [("b", 1.0)]], weights=[1, 0]) == [("a", 1 / 61)]


def test_rrf_empty_inputs() -> None:
    assert rrf([]) == []
    assert rrf([[], []]) == []
    assert rrf([[], [("a", 1.0)]]) == [("a", 1 / 61)]


@pytest.mark.parametrize("bad", [{"k": -1}, {"k": float("nan")}, {"weights": [1.0]}, {"weights": [1.0, -0.5]},
                                 {"weights": [1.0, float("inf")]}])
def test_rrf_rejects_bad_arguments(bad: dict) -> None:
    with pytest.raises(ValidationError):
        rrf([[("a", 1.0)], [("b", 1.0)]], **bad)


ids = st.sampled_from("abcdefgh")
ranking = st.lists(ids, unique=True, max_size=8).map(lambda xs: [(x, 0.0) for x in xs])


@settings(max_examples=200, deadline=None)
@given(st.lists(ranking, max_size=4), st.integers(0, 100), st.data())
def test_rrf_matches_the_formula(rankings: list, k: int, data: st.DataObject) -> None:
    weights = data.draw(st.lists(st.floats(0.1, 5.0), min_size=len(rankings), max_size=len(rankings)))
    got = rrf(rankings, k=k, weights=weights)
    expected: dict[str, float] = {}
    for r, w in zip(rankings, weights):
        for rank, (doc_id, _) in enumerate(r, start=1):
            expected[doc_id] = expected.get(doc_id, 0.0) + w / (k + rank)
    assert {i for i, _ in got} == set(expected)
    for doc_id, score in got:
        assert math.isclose(score, expected[doc_id], rel_tol=1e-12)
    assert all(a[1] >= b[1] for a, b in zip(got, got[1:]))


# ------------------------------------------------------------------------ weighted
def test_weighted_min_max_hand_computed() -> None:
    bm25 = [("a", 10.0), ("b", 6.0), ("c", 2.0)]  # -> a 1, b 0.5, c 0
    dense = [("b", 0.9), ("d", 0.3)]  # -> b 1, d 0
    # a .5*1 = .5; b .5*.5 + .5*1 = .75; c 0; d 0 (d has the better best rank: 2 < 3)
    assert weighted([bm25, dense], [0.5, 0.5]) == [("b", 0.75), ("a", 0.5), ("d", 0.0), ("c", 0.0)]


def test_weighted_uneven_weights() -> None:
    got = weighted([[("a", 4.0), ("b", 2.0), ("c", 0.0)], [("c", 0.5), ("a", -0.5)]], [0.3, 0.7])
    # leg 1: a 1, b .5, c 0; leg 2: c 1, a 0  ->  a .3, b .15, c .7
    assert close(got, [("c", 0.7), ("a", 0.3), ("b", 0.15)])


def test_weighted_all_equal_scores_map_to_one() -> None:
    assert weighted([[("x", 3.0), ("y", 3.0)]], [2.0]) == [("x", 2.0), ("y", 2.0)]
    assert weighted([[("only", -7.0)]], [1.0]) == [("only", 1.0)]


def test_weighted_missing_counts_as_zero_and_zero_weight_is_ignored() -> None:
    assert weighted([[("a", 1.0), ("b", 0.0)], [("c", 5.0)]], [1.0, 0.0]) == [("a", 1.0), ("b", 0.0)]


def test_weighted_empty_inputs() -> None:
    assert weighted([], []) == []
    assert weighted([[], []], [0.5, 0.5]) == []


@pytest.mark.parametrize("weights", [[1.0], [1.0, -1.0], [1.0, float("nan")]])
def test_weighted_rejects_bad_weights(weights: list[float]) -> None:
    with pytest.raises(ValidationError):
        weighted([[("a", 1.0)], [("b", 1.0)]], weights)


def test_weighted_rejects_non_finite_scores() -> None:
    with pytest.raises(ValidationError, match="'a'"):
        weighted([[("a", float("nan"))]], [1.0])


def test_absolute_fills_a_legs_score_for_candidates_only_the_other_leg_returned():
    from plur.index.fusion import absolute

    bm25 = [("a", 10.0), ("b", 5.0)]
    dense = [("c", 0.9), ("a", 0.5)]
    plain = dict(absolute(bm25, dense, bm25_full=10.0, weights=[0.5, 0.5]))
    assert plain == {"a": 0.75, "b": 0.25, "c": 0.45}
    filled = dict(absolute(bm25, dense, bm25_full=10.0, weights=[0.5, 0.5],
                           fills=({"c": 10.0, "a": 99.0, "x": 10.0}, {"b": 0.8, "z": 1.0})))
    # c gains its BM25 unit score, b its cosine; a keeps its ranked scores; ids in neither list stay out
    assert filled == {"a": 0.75, "b": 0.65, "c": 0.95}


def test_hybrid_recall_sums_both_legs_for_every_candidate(plur_home, embedder):
    """A candidate one leg cut off still gets that leg's score (not 0): with one candidate per leg,
    the BM25 winner carries its cosine and the dense winner its BM25 score."""
    from plur.memory import Memory

    with Memory(plur_home, embedder=embedder, candidates=1, record_stats=False) as mem:
        for text in ("Invoice 7731 was paid.", "My cat sleeps on the sofa all afternoon.", "Dogs bark at the postman."):
            mem.learn(text)
        mem.catch_up(progress=False)
        query = "kitten napping on the couch invoice"
        assert mem.recall(query, k=1, mode="bm25")[0].engram.statement.startswith("Invoice")
        assert mem.recall(query, k=1, mode="dense")[0].engram.statement.startswith("My cat")
        (hit,) = mem.recall(query, k=1, mode="hybrid")
    assert (hit.bm25_rank is None) != (hit.dense_rank is None), hit   # in one leg's top 1 only
    assert hit.bm25_score is not None and hit.bm25_score > 0 and hit.dense_score is not None, hit
