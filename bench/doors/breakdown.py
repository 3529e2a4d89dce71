"""Where one recall's time goes: wall milliseconds per stage, measured by wrapping a warm Memory's parts.

:func:`instrument` wraps (in this process only, for a benchmark) the Memory's lock, the store refresh
(``_scan``), the dense catch-up before the search and its model lock, the query embedding's wait, the BM25
and dense legs, the second stage (fusion, floor, newest-first) and the stats.db record; :func:`Breakdown.take`
returns the last recall's stages plus ``cpu`` (this thread's CPU time, ``time.thread_time``) and ``other``
(wall not in any stage). A recall whose wall far exceeds its ``cpu`` and stages waited for the CPU or the GIL
(other threads or processes running), which is what a shared 2-core machine shows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

STAGES = ("lock_wait", "refresh", "catchup", "embed_lock_wait", "query_embed_wait", "bm25", "dense",
          "second_stage", "stats")
#: parts of ``refresh`` (not added to the stages' sum): the store's own refresh (journal, listing, reading the
#: new files; its quick path, a full scan when the journal cannot be trusted, an autosave of the store manifest) and
#: the indexes taking the changed engrams (BM25 terms, context, the dense queue)
#: ``listing``/``journal``: the quick refresh's folder listing (with its new/gone passes) and journal read;
#: ``model_queue``/``model_run``: the query's wait on the model (or query) thread before it ran (a catch-up batch
#: in flight) and its run there (an LRU hit included)
PARTS = ("store_refresh", "quick_refresh", "full_scan", "manifest_save", "index_add", "listing", "journal",
         "model_queue", "model_run")


class _Lock:
    """A lock wrapper timing how long the recall thread waits to acquire."""

    def __init__(self, inner: Any, bd: Breakdown, stage: str) -> None:
        self.inner, self.bd, self.stage = inner, bd, stage

    def __enter__(self) -> Any:
        t = time.perf_counter()
        got = self.inner.__enter__()
        self.bd.add(self.stage, time.perf_counter() - t)
        return got

    def __exit__(self, *exc: Any) -> Any:
        return self.inner.__exit__(*exc)

    def acquire(self, *a: Any, **k: Any) -> Any:
        return self.inner.acquire(*a, **k)

    def release(self) -> None:
        self.inner.release()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _Future:
    def __init__(self, fut: Any, bd: Breakdown, times: list[float] | None = None) -> None:
        self.fut, self.bd, self.times = fut, bd, times

    def result(self, *a: Any) -> Any:
        t = time.perf_counter()
        try:
            return self.fut.result(*a)
        finally:
            self.bd.add("query_embed_wait", time.perf_counter() - t)
            if self.times is not None and len(self.times) == 3:
                self.bd.add("model_queue", self.times[1] - self.times[0])
                self.bd.add("model_run", self.times[2] - self.times[1])


def _timed_submit(submit: Callable[..., Any], bd: Breakdown) -> Callable[..., Any]:
    """``model_thread.submit`` noting when the call was queued, started and ended (for the recall thread)."""
    def wrapped(fn: Callable[..., Any], *a: Any, **k: Any) -> Any:
        if threading.current_thread() is not bd.thread:
            return submit(fn, *a, **k)
        times = [time.perf_counter()]

        def run(*a: Any, **k: Any) -> Any:
            times.append(time.perf_counter())
            try:
                return fn(*a, **k)
            finally:
                times.append(time.perf_counter())
        return _Future(submit(run, *a, **k), bd, times)
    return wrapped


class Breakdown:
    """Per-stage wall seconds of the recalls made on the thread that calls :meth:`start`."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.cur: dict[str, float] = {}
        self.depth: dict[str, int] = {}

    def add(self, stage: str, seconds: float) -> None:
        if threading.current_thread() is self.thread:
            self.cur[stage] = self.cur.get(stage, 0.0) + seconds

    def timed(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*a: Any, **k: Any) -> Any:
            if threading.current_thread() is not self.thread or self.depth.get(stage):
                return fn(*a, **k)
            self.depth[stage] = 1
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.depth[stage] = 0
                self.add(stage, time.perf_counter() - t)
        return wrapper

    def start(self) -> None:
        self.thread = threading.current_thread()
        self.cur = {}
        self._cpu0 = time.thread_time()
        self._t0 = time.perf_counter()

    def take(self) -> dict[str, float]:
        """The recall since :meth:`start`: ms per stage, ``cpu`` ms of this thread, ``wall`` and ``other``."""
        wall = time.perf_counter() - self._t0
        out = {s: round(self.cur.get(s, 0.0) * 1000, 2) for s in (*STAGES, *PARTS)}
        out["cpu"] = round((time.thread_time() - self._cpu0) * 1000, 2)
        out["wall"] = round(wall * 1000, 2)
        # lock waits happen inside refresh/catchup too; count the top-level stages once
        inner = out["refresh"] + out["catchup"] + out["lock_wait"] + out["embed_lock_wait"] + out["query_embed_wait"]
        inner += out["bm25"] + out["dense"] + out["second_stage"] + out["stats"]
        out["other"] = round(max(0.0, out["wall"] - inner), 2)
        return out


def instrument(mem: Any) -> Breakdown:
    """Wrap ``mem``'s parts (see the module docstring); returns the :class:`Breakdown` to start/take per recall."""
    from plur.embed import model_thread
    from plur.memory import recall as recall_mod

    bd = Breakdown()
    lock = _Lock(mem._lock, bd, "lock_wait")
    mem._lock = lock
    mem.catchup.lock = lock
    mem.catchup.embed_lock = _Lock(mem.catchup.embed_lock, bd, "embed_lock_wait")
    mem._scan = bd.timed("refresh", mem._scan)
    mem.store.refresh = bd.timed("store_refresh", mem.store.refresh)
    for part, name in (("quick_refresh", "_quick_refresh"), ("full_scan", "_scan_and_catch_up"),
                       ("manifest_save", "_autosave")):
        if hasattr(mem.store, name):
            setattr(mem.store, name, bd.timed(part, getattr(mem.store, name)))
    mem.catchup.before_search = bd.timed("catchup", mem.catchup.before_search)
    model_thread.submit = _timed_submit(model_thread.submit, bd)  # type: ignore[assignment]
    if hasattr(model_thread, "submit_query"):  # an ONNX query runs on the query thread, beside the model thread
        model_thread.submit_query = _timed_submit(model_thread.submit_query, bd)  # type: ignore[assignment]
    store = mem.store
    if hasattr(store, "_listing"):
        from plur.store.listing import Listed

        store._listing.list = bd.timed("listing", store._listing.list)
        Listed.new = bd.timed("listing", Listed.new)  # type: ignore[method-assign]
        Listed.gone = bd.timed("listing", Listed.gone)  # type: ignore[method-assign]
    if hasattr(store, "_writes"):
        store._writes.read_tail = bd.timed("journal", store._writes.read_tail)
    idx = mem._index(True)
    idx.lexical.search_scored = bd.timed("bm25", idx.lexical.search_scored)
    idx.add = bd.timed("index_add", idx.add)
    idx.remove = bd.timed("index_add", idx.remove)
    if idx.dense is not None:
        idx.dense.search = bd.timed("dense", idx.dense.search)
        idx.dense.scores_for = bd.timed("dense", idx.dense.scores_for)
    recall_mod.second_stage = bd.timed("second_stage", recall_mod.second_stage)
    mem.stats.record_recall = bd.timed("stats", mem.stats.record_recall)
    return bd


def summarise(rows: list[dict[str, float]], top_share: float = 0.01) -> dict[str, Any]:
    """Mean ms per stage over all recalls and over the slowest ``top_share`` of them (at least 5)."""
    if not rows:
        return {}
    slow = sorted(rows, key=lambda r: -r["wall"])[:max(5, int(len(rows) * top_share))]
    keys = (*STAGES, *PARTS, "cpu", "other", "wall")
    mean = {k: round(sum(r[k] for r in rows) / len(rows), 2) for k in keys}
    mean_slow = {k: round(sum(r[k] for r in slow) / len(slow), 2) for k in keys}
    return {"all_mean_ms": mean, "slowest_mean_ms": mean_slow, "slowest_n": len(slow), "slowest": slow[:5]}


__all__ = ["PARTS", "STAGES", "Breakdown", "instrument", "summarise"]
