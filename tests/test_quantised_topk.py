"""The quantised dense index answers the same top 10 as exact float32 search (issue 49), on a fixed set.

plur's dense leg finds candidates in a usearch HNSW graph over 1-bit (``b1``, the default) or int8 (``i8``) vectors
(:mod:`plur.index.graph`) and re-scores them with the exact float32 rows (:mod:`plur.index.dense_search`). The
fixed set is ``tests/data/minilm_vectors.npz`` (``scripts/minilm_vectors.py``): 2,000 real all-MiniLM-L6-v2
vectors of distractor notes as the corpus and 100 more as queries, with the settings' HNSW parameters (M 16,
ef_construction 96, ef_search 128). Measured (deterministic: one build thread):

==========================================================  ============  ==================
the top 10 against exact float32 search                      mean overlap  lowest of a query
==========================================================  ============  ==================
the index, b1 graph (256 candidates re-scored)               0.997         0.8
the b1 graph's own top 40 (its sign-bit Hamming distances)   0.932         0.5
the b1 graph's own top 10                                    0.648         0.1
the b1 graph, centre moved off the data (a broken centring)  0.612 (@40)   0.0
the index, i8 graph (64 candidates re-scored)                0.999         0.9
the i8 graph's own top 10                                    0.964         0.8
the i8 graph over 1-bit vectors (a broken quantiser)         0.74          0.4
==========================================================  ============  ==================

Tolerances stated here: the index's top 10 overlaps the exact one by at least 0.97 on average and 0.8
for every query, and each id both return carries the exact cosine (to 1e-6), for either kind; the graph's own
answer is held too, since the re-scoring hides a coarse quantiser: the i8 graph's top 10 by at least 0.9 on
average and 0.6 for every query, the b1 graph's top 40 (4 k, a sixth of the candidates the index re-scores) by at
least 0.9 and 0.4. :func:`test_a_broken_quantiser_fails_the_tolerance` keeps each tolerance able to tell.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from plur.config import Settings
from plur.errors import MissingDependencyError
from plur.index import graph as graph_mod
from plur.index.dense import DenseIndex

FIXTURE = Path(__file__).resolve().parent / "data" / "minilm_vectors.npz"
K = 10
#: (mean, lowest) overlap@10 with exact float32 search, for the index's answer and the graph's own.
INDEX_TOLERANCE = (0.97, 0.8)
#: kind -> (candidates of the graph's own answer, mean, lowest overlap@10 of them with the exact top 10)
GRAPH_TOLERANCE = {"i8": (K, 0.9, 0.6), "b1": (4 * K, 0.9, 0.4)}


def _unit(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.float32)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def fixed_set() -> tuple[np.ndarray, np.ndarray, list[str]]:
    # through plur's loader, never `import usearch` here: usearch loaded first breaks a later onnxruntime import
    # in the same process (SIGSEGV; plur.index.graph._usearch), which a module-level importorskip did to the suite
    try:
        graph_mod._usearch()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    data = np.load(FIXTURE)
    corpus, queries = _unit(data["corpus"]), _unit(data["queries"])
    assert corpus.shape == (2000, 384) and queries.shape == (100, 384)
    return corpus, queries, [f"ENG-2026-01-01-{i:06x}" for i in range(len(corpus))]


def _overlaps(corpus: np.ndarray, queries: np.ndarray, ids: list[str],
              kind: str) -> tuple[list[float], list[float]]:
    s = Settings(home=Path("unused"))  # the defaults: hnsw_m, hnsw_ef_construction, hnsw_ef_search
    quantised = DenseIndex(384, m=s.hnsw_m, ef_construction=s.hnsw_ef_construction, ef_search=s.hnsw_ef_search,
                           exact_threshold=0, quantisation=kind)
    exact = DenseIndex(384, exact_threshold=10**9)
    quantised.add(ids, corpus)
    exact.add(ids, corpus)
    quantised.build()
    assert quantised.uses_hnsw and not exact.uses_hnsw and quantised._graph.quantisation == kind
    index, graph = [], []
    for q in queries:
        truth = dict(exact.search(q, K))
        got = quantised.search(q, K)
        assert len(got) == K and len(truth) == K
        for i, score in got:  # re-scored exactly: a shared hit's cosine is the float one
            if i in truth:
                assert score == pytest.approx(truth[i], abs=1e-6)
        index.append(len(truth.keys() & {i for i, _ in got}) / K)
        own = quantised._graph.search(q, GRAPH_TOLERANCE[kind][0])  # the quantised distances alone, not re-scored
        graph.append(len(truth.keys() & {ids[r] for r in own.tolist()}) / K)
    return index, graph


@pytest.mark.parametrize("kind", ["b1", "i8"])
def test_the_quantised_index_answers_the_float32_top_10(fixed_set, kind: str) -> None:
    index, graph = _overlaps(*fixed_set, kind)
    assert float(np.mean(index)) >= INDEX_TOLERANCE[0] and min(index) >= INDEX_TOLERANCE[1], (np.mean(index), min(index))
    _, mean, lowest = GRAPH_TOLERANCE[kind]
    assert float(np.mean(graph)) >= mean and min(graph) >= lowest, (np.mean(graph), min(graph))


def test_new_graphs_store_sign_bits_by_default() -> None:
    assert graph_mod.QUANTISATION == "b1" == Settings(home=Path("unused")).hnsw_quantisation
    assert DenseIndex(384).quantisation == "b1"


def _one_bit(real):
    def add(self, labels, vectors, threads=1):  # an i8 graph given signs only
        return real(self, labels, np.sign(vectors).astype(np.float32) / np.sqrt(vectors.shape[1]), threads)
    return add


def _off_centre(real):
    def init(self, *args, centre=None, **kwargs):  # a b1 graph centred away from the data
        if centre is not None:
            centre = centre + 0.2 * np.random.default_rng(1).standard_normal(centre.shape).astype(np.float32)
        real(self, *args, centre=centre, **kwargs)
    return init


@pytest.mark.parametrize(("kind", "attribute", "breaker"), [("i8", "add", _one_bit), ("b1", "__init__", _off_centre)])
def test_a_broken_quantiser_fails_the_tolerance(fixed_set, monkeypatch: pytest.MonkeyPatch, kind: str,
                                                attribute: str, breaker) -> None:
    """The tolerance can tell: an i8 graph given 1-bit vectors, or a b1 graph whose centre is off, falls below it."""
    monkeypatch.setattr(graph_mod.Graph, attribute, breaker(getattr(graph_mod.Graph, attribute)))
    _, graph = _overlaps(*fixed_set, kind)
    _, mean, lowest = GRAPH_TOLERANCE[kind]
    assert float(np.mean(graph)) < mean or min(graph) < lowest, (np.mean(graph), min(graph))
