"""Retrieval metrics: pure functions over a ranking of corpus ids.

These reproduce LongMemEval's official scorer, ``src/retrieval/eval_utils.py`` of
xiaowu0162/LongMemEval (commit 6a92d1ab), line for line in behaviour:

* ``recall_any@k`` = 1 if any gold id is among the top-k ranked ids, else 0;
* ``recall_all@k`` = 1 if every gold id is among the top-k, else 0 (so an *empty* gold
  set scores 1: Python's ``all([]) is True``; such questions are left out of averages
  by the callers, as the official script does);
* ``ndcg_any@k`` = DCG@k / ideal DCG@k with binary relevance, where the DCG is the
  original Järvelin & Kekäläinen form used by the official code:
  ``rel_1 + sum_{i=2..k} rel_i / log2(i)`` (ranks 1 and 2 both weigh 1), and the ideal
  ranking puts *every* relevant corpus entry first (the ideal counts entries of
  ``corpus_ids``, so duplicated ids count once per entry). Ideal DCG 0 -> 0.
* turn -> session: strip the last ``_<n>`` from turn ids and grow k until the top
  ``effective_k`` turns cover k distinct sessions (or the corpus is exhausted).

A *ranking* here is a sequence of corpus ids, best first. The official code indexes
``corpus_ids`` by position; a ranking of ids is the same thing provided ids are unique
in the corpus (they are, in both LongMemEval and LoCoMo). A ranking may be shorter than
the corpus (documents the engine did not return are simply unranked) and may be empty.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

#: Cut-offs of the official LongMemEval scorer (run_retrieval.py: ``for k in [1, 3, 5, 10, 30, 50]``).
KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
#: Metric families, in report order.
METRICS: tuple[str, ...] = ("recall_any", "recall_all", "ndcg_any")


def dcg(relevances: Sequence[float], k: int) -> float:
    """Discounted cumulative gain of the first ``k`` relevances.

    ``rel_1 + sum_{i=2..k} rel_i / log2(i)`` (Järvelin & Kekäläinen 2002, the form in
    LongMemEval's eval_utils.py). Empty input or ``k <= 0`` -> 0.0.
    """
    rel = list(relevances)[: max(k, 0)]
    if not rel:
        return 0.0
    return float(rel[0]) + sum(float(r) / math.log2(i) for i, r in enumerate(rel[1:], start=2))


def ndcg_any(ranking: Sequence[str], gold: Collection[str], corpus_ids: Sequence[str], k: int) -> float:
    """Normalised DCG@k with binary relevance (an id is relevant iff it is in ``gold``).

    Args:
        ranking: corpus ids, best first (may be shorter than the corpus, or empty).
        gold: relevant ids.
        corpus_ids: every entry of the corpus, for the ideal ranking.
        k: cut-off (>= 1).

    Returns:
        A float in [0, 1]; 0.0 when no corpus entry is relevant.
    """
    gold_set = set(gold)
    ideal = sorted((1 if c in gold_set else 0 for c in corpus_ids), reverse=True)
    ideal_dcg = dcg(ideal, k)
    if ideal_dcg == 0:
        return 0.0
    return dcg([1 if r in gold_set else 0 for r in ranking[:k]], k) / ideal_dcg


def evaluate_retrieval(ranking: Sequence[str], gold: Collection[str], corpus_ids: Sequence[str],
                       k: int) -> tuple[float, float, float]:
    """``(recall_any@k, recall_all@k, ndcg_any@k)`` of one ranking (each in [0, 1]).

    Gold ids absent from ``ranking`` count as misses; gold ids absent from the corpus
    cannot be retrieved and make ``recall_all`` 0 (the official code never has those:
    its gold is derived from the corpus ids). ``k`` larger than the ranking is allowed.
    """
    top = set(ranking[:k])
    recall_any = float(any(g in top for g in gold))
    recall_all = float(all(g in top for g in gold))
    return recall_any, recall_all, ndcg_any(ranking, gold, corpus_ids, k)


def strip_turn_id(doc_id: str) -> str:
    """Session id of a turn id: everything before the last ``_`` (``'s_1_3' -> 's_1'``)."""
    return "_".join(doc_id.split("_")[:-1])


def strip_dia_turn(doc_id: str) -> str:
    """LoCoMo session of a dialog id: ``'D3:7' -> 'D3'``."""
    return doc_id.split(":")[0]


def evaluate_turn2session(ranking: Sequence[str], gold: Collection[str], corpus_ids: Sequence[str],
                          k: int, session_of: Callable[[str], str] = strip_turn_id) -> tuple[float, float, float]:
    """Session-level ``(recall_any, recall_all, ndcg_any)`` of a turn-level ranking.

    Turn ids map to their session (``session_of``, default :func:`strip_turn_id`); the
    cut-off grows from ``k`` until the top ``effective_k`` turns cover ``k`` distinct
    sessions or it passes the corpus size, then :func:`evaluate_retrieval` runs on the
    mapped ids (eval_utils.py ``evaluate_retrieval_turn2session``). NDCG therefore
    counts turn positions: the ideal puts every turn of a gold session first.
    """
    gold_s = {session_of(g) for g in gold}
    corpus_s = [session_of(c) for c in corpus_ids]
    ranking_s = [session_of(r) for r in ranking]
    effective_k = k
    while effective_k <= len(corpus_s) and len(set(ranking_s[:effective_k])) < k:
        effective_k += 1
    return evaluate_retrieval(ranking_s, gold_s, corpus_s, effective_k)


def score_ranking(ranking: Sequence[str], gold: Collection[str], corpus_ids: Sequence[str],
                  ks: Iterable[int] = KS, *, session_of: Callable[[str], str] | None = None) -> dict[str, float]:
    """All metrics of one ranking: ``{'recall_any@5': 1.0, 'recall_all@5': 0.0, 'ndcg_any@5': 0.61, ...}``.

    Args:
        ranking: corpus ids, best first.
        gold: relevant ids.
        corpus_ids: every corpus entry.
        ks: cut-offs.
        session_of: if given, score at session level via :func:`evaluate_turn2session` with
            this turn -> session map.
    """
    out: dict[str, float] = {}
    for k in ks:
        if session_of is None:
            ra, rl, nd = evaluate_retrieval(ranking, gold, corpus_ids, k)
        else:
            ra, rl, nd = evaluate_turn2session(ranking, gold, corpus_ids, k, session_of)
        out[f"recall_any@{k}"], out[f"recall_all@{k}"], out[f"ndcg_any@{k}"] = ra, rl, nd
    return out


def rank_by_score(scores: Mapping[str, float]) -> list[str]:
    """Ids sorted by score, highest first; ties keep the mapping's (corpus) order.

    A deterministic tie-break: the official BM25 path uses ``np.argsort(scores)[::-1]``,
    whose tie order is unspecified, so tied documents may be ordered differently there.
    """
    order = {doc: i for i, doc in enumerate(scores)}
    return sorted(scores, key=lambda d: (-scores[d], order[d]))


def mean_metrics(rows: Iterable[Mapping[str, float]]) -> tuple[dict[str, float], int]:
    """Per-key arithmetic mean over metric dicts; returns ``(means, n)``. ``n == 0`` -> ``({}, 0)``.

    Keys missing from some rows are averaged over the rows that have them.
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    n = 0
    for row in rows:
        n += 1
        for key, value in row.items():
            sums[key] = sums.get(key, 0.0) + float(value)
            counts[key] = counts.get(key, 0) + 1
    return {key: sums[key] / counts[key] for key in sums}, n
