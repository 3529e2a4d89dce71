"""The benchmark engine end to end: real temporary stores, the real model, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import cli
from bench.datasets.tasks import Query, Task
from bench.engine.runner import Engine, EngineConfig, expand, make_variants, run_tasks, with_tail
from bench_rows import comparable

DATA = Path(__file__).parent / "data"


def _task(name="t1"):
    docs = {
        "d1": "I adopted a cat named Tom last spring.",
        "d2": "My car is a red Toyota Corolla.",
        "d3": "i adopted a  cat named TOM last spring.",      # same normalised statement as d1
        "d4": "The weather in Paris was rainy all week.",
        "d5": "   ",                                          # nothing to learn
    }
    queries = (Query("q-cat", "What is the name of the cat I adopted?", frozenset({"d1"}), "pets"),
               Query("q-car", "Which car brand do I drive?", frozenset({"d2"}), "cars"))
    return Task(name, tuple(docs), tuple(docs.values()), queries)


def test_make_variants():
    assert [v.name for v in make_variants(["bm25", "dense", "hybrid"], ["rrf", "weighted"], full_depth=False)] == [
        "bm25", "dense", "hybrid-rrf", "hybrid-weighted"]
    assert [v.name for v in make_variants(["bm25", "hybrid"], ["weighted"])] == [
        "bm25", "hybrid-weighted", "bm25@full", "hybrid-weighted@full"]
    with pytest.raises(ValueError, match="mode"):
        make_variants(["fuzzy"], ["rrf"])
    with pytest.raises(ValueError, match="fusion"):
        make_variants(["hybrid"], ["max"])


def test_expand_and_tail_give_a_full_ranking_of_corpus_ids():
    from types import SimpleNamespace

    hits = [SimpleNamespace(engram=SimpleNamespace(id=e)) for e in ("E2", "E1")]
    ranked = expand(hits, {"E1": ["a", "c"], "E2": ["b"]})
    assert ranked == ["b", "a", "c"]
    assert with_tail(ranked, ["a", "b", "c", "d", "e"]) == ["b", "a", "c", "d", "e"]
    assert with_tail([], ["x", "y"]) == ["x", "y"]
    with pytest.raises(KeyError):
        expand([SimpleNamespace(engram=SimpleNamespace(id="E9"))], {})


def test_engine_scores_every_variant_and_expands_merged_duplicates(embedder, tmp_path):
    config = EngineConfig(dataset="unit", granularity="session", cache_dir=str(tmp_path / "cache"))
    engine = Engine(config, embedder=embedder)
    variants = make_variants(["bm25", "dense", "hybrid"], ["rrf", "weighted"])
    rows = engine.run_task(_task(), variants)
    assert [(r["qid"], r["variant"]) for r in rows] == [
        (q, v.name) for q in ("q-cat", "q-car") for v in variants]
    for r in rows:
        assert r["n_docs"] == 5 and r["n_engrams"] == 3          # d1/d3 merged, d5 empty
        assert r["top"][-1] == "d5" and r["n_ranked"] <= 4    # unlearned doc: in the tied tail only
        assert r["fusion"] == ("weighted" if r["variant"].startswith("hybrid-weighted") else
                               "rrf" if r["variant"].startswith("hybrid-rrf") else None)
        if r["qid"] == "q-cat":
            # the merged engram stands for both ids, adjacent and in corpus order, at its rank
            assert r["top"][:2] == ["d1", "d3"], r
            assert r["metrics"]["session"]["recall_any@1"] == 1.0
        else:
            assert r["top"][0] == "d2", r
        assert sorted(r["top"]) == ["d1", "d2", "d3", "d4", "d5"]   # full ranking, each id once
        if r["mode"] == "dense":
            assert r["n_ranked"] == 4                               # dense ranks every engram
    assert engine.model_info()["identity"] == embedder.identity
    assert (tmp_path / "cache" / "embeddings.sqlite").is_file()  # the shared embedding cache


def test_parallel_workers_give_the_same_rows(tmp_path):
    tasks = [_task("a"), _task("b"), _task("c")]
    variants = make_variants(["bm25"], ["rrf"], full_depth=False)
    config = EngineConfig(dataset="unit", granularity="session", model="none", cache_dir=str(tmp_path / "c"))
    serial, info, _ = run_tasks(tasks, variants, config, workers=1)
    parallel, pinfo, _ = run_tasks(tasks, variants, config, workers=2)

    assert comparable(serial) == comparable(parallel)
    assert [r["task"] for r in parallel] == ["a", "a", "b", "b", "c", "c"]
    assert info["source"] == pinfo["source"] == "none"


def test_cli_longmemeval_on_the_committed_sample(tmp_path, capsys):
    out = tmp_path / "run"
    code = cli.main(["longmemeval", "--mode", "bm25", "--granularity", "turn", "--out", str(out),
                     "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    assert {p.name for p in out.iterdir()} == {"manifest.json", "per_question.jsonl", "summary.json",
                                              "summary.md", "summary.png"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["data"]["sha256"] and manifest["data"]["path"].endswith("longmemeval_sample.json")
    assert manifest["n_questions"] == 1 and manifest["variants"] == ["bm25", "bm25@full"]
    assert {"git", "versions", "machine", "model", "settings", "wall_s"} <= set(manifest)
    row, full = [json.loads(x) for x in (out / "per_question.jsonl").read_text().splitlines()]
    assert full["variant"] == "bm25@full" and full["n_ranked"] >= row["n_ranked"]
    assert set(row["metrics"]) == {"turn", "session"}
    assert row["n_gold"] == 2 and row["metrics"]["turn"]["recall_any@10"] == 1.0
    assert "session (from turn ranking)" in capsys.readouterr().out


def test_cli_reports_bad_data_in_one_line(tmp_path, capsys):
    code = cli.main(["locomo", "--data", str(tmp_path / "nope.json"), "--out", str(tmp_path / "o")])
    assert code != 0
    err = capsys.readouterr().err
    assert err.startswith("error: LoCoMo file") and err.count("\n") == 1


def test_queries_are_scored_against_the_complete_dense_index(embedder, tmp_path):
    """A recall answers from the last consistent index while a long dense queue is embedded in the
    background; the benchmark must wait for every vector, or its first queries lose the dense leg and the
    figures depend on the machine's speed (found when a cold embedding cache gave 0.804 instead of 0.836)."""
    texts = [f"Note {i}: the {w} in the cupboard number {i} is {c}."
             for i, (w, c) in enumerate((w, c) for w in ("cup", "plate", "bowl", "spoon", "fork")
                                         for c in ("red", "blue", "green", "white", "black", "grey",
                                                   "pink", "gold", "teal", "plum", "navy", "rose"))]
    docs = {f"d{i}": t for i, t in enumerate(texts)}
    queries = tuple(Query(f"q{i}", f"which colour is the {w}?", frozenset({"d0"}), "x")
                    for i, w in enumerate(("cup", "plate", "bowl")))
    task = Task("big-queue", tuple(docs), tuple(docs.values()), queries)
    config = EngineConfig(dataset="unit", granularity="session", cache_dir=str(tmp_path / "cache"),
                          depth=len(docs), overrides={"recall_embed_batch": 0})
    rows = Engine(config, embedder=embedder).run_task(task, make_variants(["dense"], ["weighted"],
                                                                           full_depth=False))
    assert [r["n_ranked"] for r in rows] == [len(docs)] * len(queries)
