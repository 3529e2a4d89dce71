"""``--engine ray``: score tasks as Ray tasks (``pip install 'plur[distributed]'``, Ray 2.x).

Each benchmark task (a LongMemEval question with its haystack, a LoCoMo conversation with its
questions) becomes one Ray task running :meth:`bench.engine.runner.Engine.run_task`, so a LongMemEval-M
run (500 questions x ~500 sessions) spreads over a cluster. Every worker process loads the
embedding model once (a per-process :class:`~bench.engine.runner.Engine`) and uses the same on-disk
embedding cache (``EngineConfig.cache_dir``, SQLite in WAL mode, safe for several processes), so
a text embedded by one worker is never embedded again by another on that machine; on a
multi-machine cluster point ``--cache-dir`` at a shared folder.

Results are identical to the local engine: each task runs the same code on its own temporary
store, and rows are put back in task order (``tests/test_bench_ray.py`` compares them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from plur.errors import ConfigError

from .runner import Engine, EngineConfig, Variant
from ..datasets.tasks import Task

__all__ = ["run_tasks_ray"]

_ENGINES: dict[str, Engine] = {}


def _engine(config: EngineConfig) -> Engine:
    key = repr(config)
    if key not in _ENGINES:
        _ENGINES[key] = Engine(config)
    return _ENGINES[key]


def _score(config: EngineConfig, task: Task, variants: Sequence[Variant]
           ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    engine = _engine(config)
    return engine.run_task(task, variants), engine.model_info(), engine.settings_dict()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--engine ray needs Ray: pip install 'plur[distributed]'") from None
    return ray


def run_tasks_ray(tasks: Sequence[Task], variants: Sequence[Variant], config: EngineConfig, *,
                  num_cpus: int | None = None, address: str | None = None, desc: str = "questions",
                  on_done: Callable[[int], None] | None = None
                  ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Score ``tasks`` as Ray tasks; same return value as :func:`bench.engine.runner.run_tasks`.

    Args:
        tasks: corpora with their queries.
        variants: recall configurations.
        config: engine set-up (its ``cache_dir`` is shared by every worker).
        num_cpus: CPUs of a local Ray instance started here (``None``: Ray's default, all cores);
            ignored when Ray is already initialised or ``address`` is given.
        address: an existing cluster (``"auto"``, ``"ray://host:10001"``); ``None`` starts a local one.
        desc: progress bar label (a tqdm bar over (query, variant) recalls, like the local engine's).
        on_done: called with the number of (query, variant) recalls of each finished task.

    Raises:
        ConfigError: Ray is not installed.
    """
    ray = _import_ray()
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address is not None:
            kwargs["address"] = address
        elif num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
        ray.init(**kwargs)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(_score)
        config_ref = ray.put(config)
        variants_ref = ray.put(list(variants))
        pending = {remote.remote(config_ref, task, variants_ref): i for i, task in enumerate(tasks)}
        results: dict[int, list[dict[str, Any]]] = {}
        info: dict[str, Any] = {}
        settings: dict[str, Any] = {}
        waiting = list(pending)
        from tqdm import tqdm

        with tqdm(total=sum(len(t.queries) for t in tasks) * len(variants), desc=desc, unit="recall",
                  dynamic_ncols=True) as bar:
            while waiting:
                done, waiting = ray.wait(waiting, num_returns=1)
                for ref in done:
                    i = pending[ref]
                    results[i], info, settings = ray.get(ref)
                    bar.update(len(tasks[i].queries) * len(variants))
                    if on_done is not None:
                        on_done(len(tasks[i].queries) * len(variants))
        rows = [r for i in range(len(tasks)) for r in results[i]]
        return rows, info, settings
    finally:
        if started:
            ray.shutdown()
