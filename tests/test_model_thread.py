"""plur.embed.model_thread: every forward pass on one thread, whoever calls (see its docstring for why)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from plur.embed import model_thread


def test_calls_from_many_threads_run_on_one_thread() -> None:
    seen = set()

    def where() -> str:
        seen.add(threading.current_thread().name)
        return threading.current_thread().name

    with ThreadPoolExecutor(8) as pool:
        names = list(pool.map(lambda _: model_thread.run(where), range(32)))
    assert len(seen) == 1 and names[0].startswith(model_thread.THREAD_NAME)
    assert model_thread.run(where) == names[0]  # the main thread too


def test_reentry_runs_inline_and_errors_come_back() -> None:
    assert model_thread.run(lambda: model_thread.run(lambda: threading.current_thread().name)).startswith(
        model_thread.THREAD_NAME)
    with pytest.raises(ZeroDivisionError):
        model_thread.run(lambda: 1 / 0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_gets_its_own_thread() -> None:
    model_thread.run(lambda: None)  # the parent's thread exists
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: the parent's thread is gone; a call must still answer
        try:
            os.write(w, model_thread.run(lambda: b"ok"))
        finally:
            os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    assert os.read(r, 2) == b"ok" and status == 0


def test_queries_run_on_a_thread_of_their_own_beside_a_busy_model_thread() -> None:
    """Issue 49: a recall's ONNX query does not wait for the document batch on the model thread."""
    gate = threading.Event()
    busy = model_thread.submit(gate.wait, 120)   # a long catch-up batch holds the model thread
    try:
        name = model_thread.submit_query(lambda: threading.current_thread().name).result(timeout=120)
        assert name.startswith(model_thread.QUERY_THREAD_NAME) and not busy.done()
    finally:
        gate.set()
    assert busy.result(timeout=120)
    assert model_thread.drain(120)
