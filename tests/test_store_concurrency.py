"""The store across processes: concurrent writers, dedup between processes, SIGKILL mid-write, fresh readers."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from plur.store.engram import Engram
from plur.store.store import EngramStore

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


def _learn_distinct(home: str, worker: int, n: int, start: mp.Event) -> None:
    # fsync off: this checks locking and dedup, not durability (the SIGKILL test runs with fsync on)
    store = EngramStore(home, fsync=False)
    start.wait(30)
    for i in range(n):
        store.add(Engram.create(f"worker {worker} remembers fact number {i}", tags=[f"w{worker}"]))


def _learn_same(home: str, n: int, start: mp.Event) -> None:
    store = EngramStore(home, fsync=False)
    start.wait(30)
    for i in range(n):
        store.add(Engram.create(f"shared fact number {i}"))


def _run_workers(target, args_per_worker: list[tuple]) -> None:
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=target, args=(*args, start)) for args in args_per_worker]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(240)
    assert [p.exitcode for p in procs] == [0] * len(procs)


def test_eight_processes_200_distinct_engrams_each(tmp_path: Path) -> None:
    _run_workers(_learn_distinct, [(str(tmp_path), w, 200) for w in range(8)])
    files = sorted((tmp_path / "engrams").glob("*/*.yaml"))  # in month folders (issue 49)
    assert len(files) == 1600
    statements = set()
    for f in files:  # every file valid and named after its id
        e = Engram.from_yaml(f.read_text(encoding="utf-8"))
        assert f.name == f"{e.id}.yaml"
        statements.add(e.statement)
    assert statements == {f"worker {w} remembers fact number {i}" for w in range(8) for i in range(200)}
    assert not list((tmp_path / "engrams").glob(".tmp-*"))
    store = EngramStore(tmp_path)
    assert store.count() == 1600 and store.quarantined() == []


def test_eight_processes_learning_the_same_facts_deduplicate(tmp_path: Path) -> None:
    _run_workers(_learn_same, [(str(tmp_path), 50) for _ in range(8)])
    store = EngramStore(tmp_path)
    assert sorted(e.statement for e in store.all()) == sorted(f"shared fact number {i}" for i in range(50))


WRITER = textwrap.dedent("""
    import sys
    from plur.store.engram import Engram
    from plur.store.store import EngramStore
    store = EngramStore(sys.argv[1], fsync=True)
    e, _ = store.add(Engram.create("A" * 900_000))
    print(e.id, flush=True)
    i = 0
    while True:
        i += 1
        store.put(store.get(e.id).replace(statement=chr(ord("A") + i % 26) * 900_000))
        store.add(Engram.create(f"small fact {i} " + "z" * 200_000))
""")


def test_writer_killed_mid_write_leaves_no_partial_engram(tmp_path: Path) -> None:
    rng = random.Random(7)
    for round_ in range(4):
        home = tmp_path / f"home{round_}"
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(home)], stdout=subprocess.PIPE, text=True,
                                cwd=REPO)
        big_id = proc.stdout.readline().strip()
        assert big_id.startswith("ENG-")
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        for f in (home / "engrams").glob("*/*.yaml"):  # whatever is there is whole
            if f.name.startswith("."):  # the killed writer's temp file: scans skip it, the next write removes it
                continue
            e = Engram.from_yaml(f.read_text(encoding="utf-8"))
            assert f.name == f"{e.id}.yaml"
        store = EngramStore(home)
        big = store.get(big_id).statement
        assert len(big) == 900_000 and len(set(big)) == 1
        assert store.quarantined() == []
        assert all(e.statement.startswith(("small fact", big[0])) for e in store.all())
        store.add(Engram.create("the store still takes writes"))  # and cleans any temp file left behind
        assert not list((home / "engrams").glob(".tmp-*"))


def test_engram_saved_by_one_process_is_listed_by_a_fresh_process(tmp_path: Path) -> None:
    store = EngramStore(tmp_path)
    e, _ = store.add(Engram.create("Saved here, listed there.", scope="project:x"))
    assert store.refresh().added == {e.id}  # own writes are reported once, too
    env = {**os.environ, "PLUR_HOME": str(tmp_path), "PLUR_MODEL": "none"}
    out = subprocess.run([sys.executable, "-m", "plur.cli", "list", "--json"], capture_output=True, text=True,
                         env=env, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    assert [(d["id"], d["statement"], d["scope"]) for d in listed] == [(e.id, e.statement, "project:x")]
    # and the other way round: a fresh process writes, this instance sees it on refresh
    out = subprocess.run([sys.executable, "-m", "plur", "learn", "Written by the other process.", "--json"],
                         capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    new_id = json.loads(out.stdout)["engram"]["id"]
    assert store.refresh().added == {new_id}
