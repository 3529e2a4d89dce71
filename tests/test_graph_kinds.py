"""The graph's kind (setting ``hnsw_quantisation``): saved i8 graphs of the older code still load and answer, new
graphs store centred sign bits (b1), and a bad value is one clear error (issue 49).

``tests/data/dense_i8_v2`` was saved by the code before b1 graphs (main at f394d20, ``tests/data/README.md``):
150 real all-MiniLM-L6-v2 corpus vectors of ``minilm_vectors.npz``, M 8, ef 32, an int8 graph and no centre in
``meta.json``, row 7's id removed after the graph was built.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from plur.config import load_settings
from plur.errors import ConfigError, MissingDependencyError, StoreError, ValidationError
from plur.index import graph as graph_mod
from plur.index.dense import DenseIndex

DATA = Path(__file__).resolve().parent / "data"
OLD = DATA / "dense_i8_v2"
IDS = [f"ENG-2026-01-01-{i:06x}" for i in range(150)]


@pytest.fixture(scope="module")
def vectors() -> tuple[np.ndarray, np.ndarray]:
    try:  # through plur's loader: usearch imported first breaks a later onnxruntime import (plur.index.graph)
        graph_mod._usearch()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    data = np.load(DATA / "minilm_vectors.npz")
    corpus = data["corpus"][:150].astype(np.float32)
    queries = data["queries"][:20].astype(np.float32)
    return corpus / np.linalg.norm(corpus, axis=1, keepdims=True), queries


def _exact(corpus: np.ndarray) -> DenseIndex:
    exact = DenseIndex(384, exact_threshold=10**9)
    exact.add([i for n, i in enumerate(IDS) if n != 7], np.delete(corpus, 7, axis=0))
    return exact


def test_an_i8_graph_saved_by_the_older_code_loads_and_answers(vectors, tmp_path: Path) -> None:
    corpus, queries = vectors
    folder = tmp_path / "dense"
    shutil.copytree(OLD, folder)
    assert "centre" not in json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    index = DenseIndex.load(folder, dims=384)
    assert index._graph.quantisation == "i8" and index._graph.centre is None and index.uses_hnsw
    assert index.quantisation == "b1"  # what its next graph stores
    exact = _exact(corpus)
    for q in queries:  # 64 candidates of 149 re-scored exactly: the exact answer, cosines included
        assert [i for i, _ in index.search(q, 10)] == [i for i, _ in exact.search(q, 10)]
    assert IDS[7] not in {i for q in queries for i, _ in index.search(q, 149)}
    index.add(["ENG-2026-01-02-000000"], queries[:1])  # inserts go into the loaded i8 graph
    assert index.search(queries[0], 1)[0][0] == "ENG-2026-01-02-000000"
    index.save(folder)  # saved again, still i8 and without a centre: it loads again
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    assert (meta["quantisation"], meta["centre"]) == ("i8", None)
    again = DenseIndex.load(folder, dims=384)
    assert again._graph.quantisation == "i8" and again.search(queries[0], 1)[0][0] == "ENG-2026-01-02-000000"


def test_an_old_i8_graph_becomes_b1_at_its_next_rebuild(vectors, tmp_path: Path) -> None:
    corpus, queries = vectors
    shutil.copytree(OLD, tmp_path / "dense")
    index = DenseIndex.load(tmp_path / "dense", dims=384)
    index._compact()  # what a bulk remove or a forget's rebuild does: the graph is rebuilt on next use
    index.build()
    assert index._graph.quantisation == "b1"
    centre = index._graph.centre
    assert np.allclose(centre, np.delete(corpus, 7, axis=0).mean(axis=0), atol=1e-6)
    index.save(tmp_path / "dense")
    meta = json.loads((tmp_path / "dense" / "meta.json").read_text(encoding="utf-8"))
    assert meta["quantisation"] == "b1" and np.array_equal(np.asarray(meta["centre"], dtype=np.float32), centre)
    loaded = DenseIndex.load(tmp_path / "dense", dims=384)
    assert loaded._graph.quantisation == "b1" and np.array_equal(loaded._graph.centre, centre)
    exact = _exact(corpus)
    for q in queries:  # 149 rows, 256 candidates: every row re-scored, the exact answer
        got, want = loaded.search(q, 10), exact.search(q, 10)
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)


def test_an_i8_setting_keeps_building_i8_graphs(vectors, tmp_path: Path) -> None:
    corpus, _ = vectors
    shutil.copytree(OLD, tmp_path / "dense")
    index = DenseIndex.load(tmp_path / "dense", dims=384, quantisation="i8")
    index._compact()
    index.build()
    assert index._graph.quantisation == "i8" and index._graph.centre is None


def test_a_b1_graph_without_its_centre_is_a_store_error(vectors, tmp_path: Path) -> None:
    corpus, _ = vectors
    index = DenseIndex(384, exact_threshold=0)
    index.add(IDS, corpus)
    index.save(tmp_path / "dense")
    meta_path = tmp_path / "dense" / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["centre"] = None
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(StoreError, match="centre.*plur reindex"):
        DenseIndex.load(tmp_path / "dense", dims=384)


def test_a_bad_quantisation_names_the_value_and_the_fix(plur_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings(plur_home, hnsw_quantisation="I8").hnsw_quantisation == "i8"
    with pytest.raises(ConfigError, match="hnsw_quantisation.*'f16'.*b1, i8"):
        load_settings(plur_home, hnsw_quantisation="f16")
    monkeypatch.setenv("PLUR_HNSW_QUANTISATION", "bits")
    with pytest.raises(ConfigError, match="'bits'.*PLUR_HNSW_QUANTISATION.*b1, i8|PLUR_HNSW_QUANTISATION.*'bits'.*b1, i8"):
        load_settings(plur_home)
    with pytest.raises(ValidationError, match="'f16'.*b1 or i8.*hnsw_quantisation"):
        DenseIndex(384, quantisation="f16")
