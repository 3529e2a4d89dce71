"""``--engine ray``: benchmark tasks as Ray tasks on a real local Ray (``ray.init(num_cpus=2)``).

Skipped only when Ray is not installed (``pip install 'plur[distributed]'``; scripts/setup --dev
installs it, so CI runs this).
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from bench import cli
from bench.datasets.tasks import DocMeta, Query, Task
from bench.engine.ray_engine import run_tasks_ray
from bench.engine.runner import EngineConfig, make_variants, run_tasks
from bench_rows import comparable

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'plur[distributed]'")

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _task(name: str) -> Task:
    turns = ["Melanie: What did you name your new puppy?", "Caroline: We called her Biscuit.",
             "Melanie: Where did you go on holiday in May?", "Caroline: Lisbon, we ate pastel de nata.",
             f"Caroline: my note for {name}"]
    meta = tuple(DocMeta(session=f"{name}/D1", turn=i, date="2023-05-08T13:56:00") for i in range(len(turns)))
    queries = (Query(f"{name}/q0", "What is the puppy called?", frozenset({f"{name}:1"}), "cat1",
                     now="2023-06-01T10:00:00"),
               Query(f"{name}/q1", "Where did Caroline travel in May 2023?", frozenset({f"{name}:3"}), "cat2",
                     now="2023-06-01T10:00:00"))
    return Task(name, tuple(f"{name}:{i}" for i in range(len(turns))), tuple(turns), queries, "colon", meta)


def _cached(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("select count(*) from " + conn.execute(
            "select name from sqlite_master where type='table' limit 1").fetchone()[0]).fetchone()[0]


def test_ray_engine_gives_the_local_engines_rows_and_shares_the_cache(tmp_path):
    tasks = [_task(n) for n in ("a", "b", "c")]
    variants = make_variants(["bm25", "dense", "hybrid"], ["weighted"])
    cache = tmp_path / "cache"
    config = EngineConfig(dataset="unit", granularity="turn", model=MODEL, cache_dir=str(cache),
                          overrides={"device": "cpu"}, torch_threads=1)
    local, info, settings = run_tasks(tasks, variants, config, workers=1)
    n_cached = _cached(cache / "embeddings.sqlite")
    assert n_cached > 0
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote, rinfo, rsettings = run_tasks_ray(tasks, variants, config)
        out = tmp_path / "cli-run"
        assert cli.main(["longmemeval", "--mode", "bm25", "--engine", "ray", "--no-full-depth", "--out", str(out),
                         "--cache-dir", str(cache)]) == 0
        assert json.loads((out / "manifest.json").read_text())["options"]["engine"] == "ray"
        assert ray.is_initialized()                                 # a Ray the caller started is left running
    finally:
        ray.shutdown()

    assert comparable(remote) == comparable(local)
    assert [r["task"] for r in remote][::len(variants) * 2] == ["a", "b", "c"]
    assert rinfo["identity"] == info["identity"] and rsettings == settings
    assert _cached(cache / "embeddings.sqlite") == n_cached     # every text came from the shared cache
    assert {r["variant"] for r in remote} == {v.name for v in variants}


def test_ray_engine_without_ray_names_the_extra(monkeypatch, tmp_path):
    import builtins

    from bench.engine import ray_engine
    from plur.errors import ConfigError

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(ConfigError, match=r"plur\[distributed\]"):
        ray_engine.run_tasks_ray([], [], EngineConfig(dataset="unit", granularity="turn", model="none",
                                                      cache_dir=str(tmp_path)))
