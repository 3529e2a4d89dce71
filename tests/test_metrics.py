"""bench.quality.metrics against hand-computed values and an index-based transcription of LongMemEval's scorer."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.quality import metrics as M

CORPUS = ["a", "b", "c", "d", "e"]


def test_dcg_uses_the_official_form_where_ranks_one_and_two_weigh_the_same():
    # rel_1 + sum_{i>=2} rel_i / log2(i): [1, 1, 1] -> 1 + 1/1 + 1/log2(3)
    assert M.dcg([1, 1, 1], 3) == pytest.approx(2 + 1 / math.log2(3))
    assert M.dcg([0, 1], 2) == pytest.approx(1.0)
    assert M.dcg([], 5) == 0.0
    assert M.dcg([1, 1], 0) == 0.0


@pytest.mark.parametrize("k, expected", [
    (1, (0.0, 0.0, 0.0)),                 # top-1 = {a}: no gold
    (3, (1.0, 0.0, 0.5)),                 # rel [0,1,0] -> dcg 1; ideal [1,1,0] -> 2
    (5, (1.0, 1.0, 0.75)),                # k past the ranking: rel [0,1,0,1] -> 1 + 1/2; ideal 2
])
def test_evaluate_retrieval_hand_computed(k, expected):
    got = M.evaluate_retrieval(["a", "b", "c", "d"], {"b", "d"}, CORPUS, k)
    assert got == pytest.approx(expected)


def test_second_rank_hit_scores_full_ndcg_as_in_the_official_code():
    # the official DCG gives rank 2 weight 1, so a single gold doc at rank 2 still has NDCG 1
    assert M.ndcg_any(["x", "g"], {"g"}, ["x", "g"], 2) == pytest.approx(1.0)
    assert M.ndcg_any(["x", "y", "g"], {"g"}, ["x", "y", "g"], 3) == pytest.approx(1 / math.log2(3))


def test_gold_missing_from_corpus_scores_zero_everywhere():
    assert M.evaluate_retrieval(["a", "b"], {"z"}, ["a", "b"], 5) == (0.0, 0.0, 0.0)


def test_empty_gold_follows_python_any_all_like_the_official_code():
    # any([]) is False, all([]) is True, ideal DCG 0 -> NDCG 0; callers keep such rows out of averages
    assert M.evaluate_retrieval(["a", "b"], set(), ["a", "b"], 5) == (0.0, 1.0, 0.0)


def test_empty_ranking():
    assert M.evaluate_retrieval([], {"a"}, CORPUS, 10) == (0.0, 0.0, 0.0)
    scores = M.score_ranking([], {"a"}, CORPUS)
    assert set(scores) == {f"{m}@{k}" for m in M.METRICS for k in M.KS}
    assert all(v == 0.0 for v in scores.values())


def test_ties_are_ranked_in_corpus_order_and_scored_by_position():
    ranking = M.rank_by_score({"a": 1.0, "b": 2.0, "c": 2.0, "d": 0.5})
    assert ranking == ["b", "c", "a", "d"]
    # the tied pair b, c: gold c sits at rank 2, which the official DCG weighs like rank 1
    assert M.evaluate_retrieval(ranking, {"c"}, ["a", "b", "c", "d"], 1) == (0.0, 0.0, 0.0)
    assert M.evaluate_retrieval(ranking, {"c"}, ["a", "b", "c", "d"], 2) == pytest.approx((1.0, 1.0, 1.0))


def test_turn2session_grows_k_until_k_sessions_are_covered():
    corpus = ["s1_1", "s1_2", "s2_1", "s3_1", "s3_2"]
    ranking = ["s1_1", "s1_2", "s2_1", "s3_2", "s3_1"]
    gold = {"s3_2"}
    # k=2 -> effective 3 turns ({s1, s2}): gold session s3 missed
    assert M.evaluate_turn2session(ranking, gold, corpus, 2) == (0.0, 0.0, 0.0)
    # k=3 -> effective 4 turns ({s1, s2, s3}); rel [0,0,0,1] -> 1/log2(4); ideal counts both s3 turns: 2
    assert M.evaluate_turn2session(ranking, gold, corpus, 3) == pytest.approx((1.0, 1.0, 0.25))


def test_turn2session_with_colon_ids():
    corpus = ["D1:1", "D1:2", "D2:1"]
    assert M.evaluate_turn2session(["D2:1", "D1:1"], {"D1:2"}, corpus, 1, M.strip_dia_turn) == (0.0, 0.0, 0.0)
    got = M.evaluate_turn2session(["D2:1", "D1:1"], {"D1:2"}, corpus, 2, M.strip_dia_turn)
    assert got[:2] == (1.0, 1.0)


def test_strip_turn_id_keeps_underscores_inside_session_ids():
    assert M.strip_turn_id("answer_3a6f1e82_1_3") == "answer_3a6f1e82_1"
    assert M.strip_turn_id("sharegpt_FYhsZ0Q_0_12") == "sharegpt_FYhsZ0Q_0"


def test_mean_metrics():
    means, n = M.mean_metrics([{"r@1": 1.0, "x": 0.5}, {"r@1": 0.0}])
    assert n == 2 and means == {"r@1": 0.5, "x": 0.5}
    assert M.mean_metrics([]) == ({}, 0)


# -- an independent, index-based transcription of eval_utils.py (LongMemEval) ---------------
def _ref_dcg(rel, k):
    rel = list(rel)[:k]
    return 0.0 if not rel else rel[0] + sum(r / math.log2(i + 1) for i, r in enumerate(rel[1:], start=1))


def _ref_eval(order, correct, ids, k):
    got = {ids[i] for i in order[:k]}
    rel = [1 if x in correct else 0 for x in ids]
    ideal = _ref_dcg(sorted(rel, reverse=True), k)
    nd = 0.0 if ideal == 0 else _ref_dcg([rel[i] for i in order[:k]], k) / ideal
    return float(any(c in got for c in correct)), float(all(c in got for c in correct)), nd


def _ref_turn2session(order, correct, ids, k):
    def strip(x):
        return "_".join(x.split("_")[:-1])
    correct = list({strip(c) for c in correct})
    ids = [strip(x) for x in ids]
    eff = k
    while eff <= len(ids) and len({ids[i] for i in order[:eff]}) < k:
        eff += 1
    return _ref_eval(order, correct, ids, eff)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_matches_index_based_reference(data):
    n_sess = data.draw(st.integers(1, 5))
    ids = [f"s{s}_{t}" for s in range(n_sess) for t in range(1, data.draw(st.integers(1, 4)) + 1)]
    order = data.draw(st.permutations(range(len(ids))))
    order = order[: data.draw(st.integers(0, len(ids)))]            # rankings may be truncated
    correct = {ids[i] for i in data.draw(st.sets(st.integers(0, len(ids) - 1), max_size=3))}
    k = data.draw(st.sampled_from(M.KS))
    ranking = [ids[i] for i in order]
    assert M.evaluate_retrieval(ranking, correct, ids, k) == pytest.approx(_ref_eval(order, correct, ids, k))
    assert M.evaluate_turn2session(ranking, correct, ids, k) == pytest.approx(
        _ref_turn2session(order, correct, ids, k))
