"""Forget means gone: after ``forget`` no byte of the statement remains anywhere under ``<home>``.

The engram is first made to leave traces everywhere plur writes: the store manifest, the saved BM25
vocabulary and postings, the dense rows, the embedding cache, stats.db (recalls whose query
returned it, hit rows, feedback, injections) and a quarantined older copy. Then the whole home is
read byte by byte (binary files, SQLite WAL and free pages included) for a unique token.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from plur.memory import Memory

from conftest import PACKAGED_MODEL

TOKEN = "zqxjkvwplmarker"
STATEMENT = f"The vault code word is {TOKEN}, said the {TOKEN} keeper."


def files_holding(home: Path, needle: bytes) -> list[str]:
    """Every file under ``home`` whose bytes contain ``needle`` (case-insensitive)."""
    hits = []
    for p in home.rglob("*"):
        if p.is_file() and needle.lower() in p.read_bytes().lower():
            hits.append(str(p.relative_to(home)))
    return sorted(hits)


def _leave_traces(mem: Memory) -> str:
    e = mem.learn(STATEMENT, tags=("secret",))
    mem.learn("The user's dog is called Rex.")
    assert mem.recall(f"what is {TOKEN}?", k=5)[0].engram.id == e.id          # recalls + hits rows, index, cache
    assert mem.recall("vault code word", k=5, mode="dense")[0].engram.id == e.id
    mem.feedback(e.id, True, agent="a", query=f"{TOKEN} please")
    mem.stats.record_injection(agent="a", engram_ids=[e.id])
    mem.save()
    return e.id


def test_forget_in_process_leaves_no_trace(memory: Memory, plur_home: Path) -> None:
    eid = _leave_traces(memory)
    assert files_holding(plur_home, TOKEN.encode())  # the traces exist before
    memory.forget(eid)
    memory.close()
    assert files_holding(plur_home, TOKEN.encode()) == []
    with Memory(plur_home, model="none") as again:
        assert [e.statement for e in again.list()] == ["The user's dog is called Rex."]


def test_forget_from_a_fresh_process_leaves_no_trace(embedder, plur_home: Path) -> None:
    """`plur forget` in a process that never opened the indexes still erases the saved ones."""
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL) as mem:
        eid = _leave_traces(mem)
        # an older version of the file, quarantined, also holds the text
        mem.store.quarantine_dir.mkdir(parents=True, exist_ok=True)
        (mem.store.quarantine_dir / f"{eid}.yaml.20250101T000000.000000Z").write_text(STATEMENT, encoding="utf-8")
        (mem.store.quarantine_dir / f"{eid}.yaml.20250101T000000.000000Z.reason").write_text(
            f"original: {mem.store.root / (eid + '.yaml')}\nreason: test\nwhen: '2025-01-01T00:00:00Z'\n",
            encoding="utf-8")
    assert len(files_holding(plur_home, TOKEN.encode())) >= 4
    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": PACKAGED_MODEL, "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "plur", "forget", "-y", eid], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert files_holding(plur_home, TOKEN.encode()) == []
    r = subprocess.run([sys.executable, "-m", "plur", "recall", "dog", "--json"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "Rex" in r.stdout, r.stderr


def test_web_forget_leaves_no_trace(memory: Memory, plur_home: Path) -> None:
    pytest.importorskip("starlette")
    from plur.web.views import act

    eid = _leave_traces(memory)
    act(memory, eid, "forget", {})
    memory.close()
    assert files_holding(plur_home, TOKEN.encode()) == []
