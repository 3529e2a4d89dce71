"""Capture at the worker: each submitted message is learned after its recall (the setting ``capture``, on by
default), through Memory.capture (screen, trivial filter, ingest path), deduplicated, with provenance."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from plur.memory import Memory
from plur.prompt.section import MemorySection
from plur.prompt.worker import RecallWorker

from conftest import wait_for

WAIT_S = 30.0


@pytest.fixture
def mem(plur_home: Path) -> Iterator[Memory]:
    m = Memory(plur_home, model="none", fsync=False)
    yield m
    m.close()


def test_capture_follows_the_setting(plur_home: Path) -> None:
    for mode, kept in (("off", []), ("user", ["My locker number is 118."])):
        with Memory(plur_home / mode, model="none", fsync=False, capture=mode) as m:
            with RecallWorker(m) as worker:
                worker.warm("a", "My locker number is 118.")
                assert worker.wait_idle(WAIT_S)
            assert [e.statement for e in m.list()] == kept


def test_each_message_is_learned_after_its_recall_with_provenance(mem: Memory) -> None:
    with RecallWorker(mem, capture=True) as worker:
        block = worker.warm("agent-7", "My locker number is 118.", scope="project:gym")
        assert "118" not in block                 # never recalled into its own block
        assert worker.wait_idle(WAIT_S)
        worker.warm("agent-7", "Which locker is mine?", scope="project:gym")
        assert "My locker number is 118." in MemorySection(worker).text("agent-7")
        assert worker.wait_idle(WAIT_S)
        assert worker.stats()["captured"] == 2
    got = {e.statement: e for e in mem.list()}
    e = got["My locker number is 118."]
    assert e.scope == "global" and e.type == "user"     # about the user: kept for every project (route_personal)
    assert e.source == {"kind": "conversation", "format": "capture", "session": worker.session, "turn": 0,
                        "role": "user", "agent": "agent-7", "capture": True}
    assert "Which locker is mine?" not in got        # handed to capture (turn 1), which stores no question


def test_captures_are_deduplicated_and_never_coalesced(mem: Memory) -> None:
    with RecallWorker(mem, capture=True) as worker:
        for text in ["one thing", "two things", "one thing", "three things"]:   # a burst: one recall
            worker.submit("a", text, session="s-1")
        assert worker.wait_idle(WAIT_S)
    assert sorted(e.statement for e in mem.list()) == ["one thing", "three things", "two things"]
    assert {e.scope for e in mem.list()} == {"agent:a"}       # unscoped captures stay with their agent


def test_per_submit_override_and_close_learns_what_is_left(mem: Memory) -> None:
    worker = RecallWorker(mem, capture=False)
    worker.submit("a", "not captured")
    worker.submit("a", "captured on purpose", capture=True)
    worker.close()
    assert [e.statement for e in mem.list()] == ["captured on purpose"]


def test_pydantic_ai_attach_passes_capture_through(mem: Memory) -> None:
    import pydantic_ai
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from plur.hosts.pydantic_ai import attach

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("ok")])

    agent = pydantic_ai.Agent(FunctionModel(model))
    with RecallWorker(mem, capture=False) as worker:
        attach(agent, MemorySection(worker), agent_id="host-1", capture=True, session=lambda ctx: "chat-42")
        agent.run_sync("I prefer window seats on trains.")
        assert worker.wait_idle(WAIT_S)
    (e,) = mem.list()
    assert e.statement == "I prefer window seats on trains."
    assert e.source["agent"] == "host-1" and e.source["session"] == "chat-42" and e.source["turn"] == 0


def test_a_captured_message_is_embedded_between_turns(memory: Memory) -> None:
    """Capture stays off the turn path: the worker embeds what it captured right after publishing the
    block, so the next turn's recall has nothing to embed first (bench: python -m bench capture-wait)."""
    memory.learn("The team meets on Thursdays.")
    with RecallWorker(memory, capture=True) as worker:
        worker.warm("a", "When does the team meet?")
        assert worker.wait_idle(WAIT_S)
        worker.submit("a", "My sister Lena moved to Vienna last spring.")
        assert worker.wait_idle(WAIT_S)
        assert worker.stats()["captured"] == 2
        state = memory.index_state()
        assert state["open"] and state["pending_dense"] == 0, state


class ColdModelMemory(Memory):
    """The real Memory whose warm-up recall (a cold process's model load) waits on ``gate``; every other
    recall's (query, mode) is logged in ``calls``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.calls: list[tuple[str, str]] = []

    def recall(self, query: str, k: int = 10, **kwargs: Any):  # type: ignore[override]
        if query == "warm up":
            assert self.gate.wait(WAIT_S), "test never opened the gate"
        else:
            self.calls.append((query, kwargs.get("mode", "hybrid")))
        return super().recall(query, k, **kwargs)


def test_a_cold_warm_gets_its_hybrid_recall_with_capture_on_and_captures_once(plur_home: Path) -> None:
    """warm() in a cold process: the keyword-only first recall is followed by a hybrid one once the model is
    ready, with capture on (the default) as with it off; the message is captured once, after that last
    recall, and is not recalled into its own block (warm skipped the hybrid recall whenever capture was on)."""
    for capture in ("user", "off"):
        m = ColdModelMemory(plur_home / capture, model="none", fsync=False, capture=capture)
        m.learn("The user's dog is called Rex.", scope="project:a")
        text = "what is my dog called"
        try:
            with RecallWorker(m) as worker:
                got: list[str] = []
                warming = threading.Thread(target=lambda: got.append(worker.warm("A", text, scope="project:a")))
                warming.start()
                wait_for(lambda: worker.stats()["keyword"] == 1, "the keyword recall of the cold worker")
                assert [c.statement for c in m.list(scope="project:a")] == ["The user's dog is called Rex."]
                m.gate.set()
                warming.join(WAIT_S)
                assert not warming.is_alive()
                assert worker.wait_idle(WAIT_S)
                assert m.calls == [(text, "bm25"), (text, "hybrid")], (capture, m.calls)
                assert "Rex" in got[0] and text not in got[0]
                assert worker.stats()["captured"] == (capture == "user")
            statements = [e.statement for e in m.list()]
            assert sorted(statements) == sorted(["The user's dog is called Rex."] + [text] * (capture == "user"))
        finally:
            m.gate.set()
            m.close()


class GatedCaptureMemory(Memory):
    """The real Memory whose capture, once entered (``entered`` set), waits on ``gate`` before the real one runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def capture(self, text: str, **kwargs: Any):  # type: ignore[override]
        self.entered.set()
        assert self.gate.wait(WAIT_S), "test never opened the gate"
        return super().capture(text, **kwargs)


@pytest.fixture
def gated(plur_home: Path) -> Iterator[GatedCaptureMemory]:
    m = GatedCaptureMemory(plur_home, model="none", fsync=False)
    m.learn("The team meets on Thursdays.")
    yield m
    m.gate.set()
    m.close()


def test_a_recall_is_never_queued_behind_a_capture(gated: GatedCaptureMemory) -> None:
    """Capture stays off the turn path: while the previous message is being captured, the next message's
    recall publishes its block (before, the worker captured on its recall thread: the block waited)."""
    with RecallWorker(gated, capture=True) as worker:
        worker.submit("a", "My sister Lena moved to Vienna last spring.")
        assert gated.entered.wait(WAIT_S)                       # its capture is in progress, held
        gen = worker.submit("a", "When does the team meet?", capture=False)
        assert worker.wait_for("a", gen, WAIT_S)
        assert "Thursdays" in worker.read("a") and worker.stats()["captured"] == 0
        assert not worker.wait_idle(0.1)                         # idle means the captures are learned too
        gated.gate.set()
        assert worker.wait_idle(WAIT_S)
        assert worker.stats()["captured"] == 1
        assert "My sister Lena moved to Vienna last spring." in {e.statement for e in gated.list()}


def test_close_learns_the_captures_still_waiting(gated: GatedCaptureMemory) -> None:
    worker = RecallWorker(gated, capture=True)
    worker.submit("a", "My sister Lena moved to Vienna last spring.")
    assert gated.entered.wait(WAIT_S)
    gen = worker.submit("a", "Our build server runs Debian twelve.")
    assert worker.wait_for("a", gen, WAIT_S)                     # recalled; its capture waits behind the first
    gated.gate.set()
    worker.close()
    assert worker.stats()["captured"] == 2
    assert {e.statement for e in gated.list()} == {"The team meets on Thursdays.",
                                                  "My sister Lena moved to Vienna last spring.",
                                                  "Our build server runs Debian twelve."}


def test_a_capture_does_not_sort_the_whole_store(plur_home: Path, monkeypatch) -> None:
    """Issue 49: each captured turn carried the provenance map over its own write by counting the store with
    ``len(store.all())``, which sorts every engram again after the add (231 of a capture's 255 ms at 100k
    engrams, load ~1). A capture into a warm store now sorts nothing."""
    mem = Memory(plur_home, model="none", fsync=False, capture="user")
    mem.learn_many([{"statement": f"Lesson {i} of the pottery class was about glazes.",
                     "source": {"kind": "conversation", "session": "s1", "turn": i, "role": "user"}}
                    for i in range(30)])
    mem.capture("I bought a new kiln for the studio.", session="s2", turn=0, role="user", scope="global")
    sorts: list[int] = []
    real = type(mem.store).all
    monkeypatch.setattr(type(mem.store), "all", lambda self: (sorts.append(1), real(self))[1])
    for turn in range(1, 4):
        got = mem.capture(f"My kiln reached {1000 + turn} degrees today.", session="s2", turn=turn, role="user",
                          scope="global")
        assert got.stored
    assert sorts == []
    mem.close()


def test_a_capture_carries_the_provenance_map_without_copying_it(plur_home: Path, monkeypatch) -> None:
    """Issue 49: each captured turn copied its scope's whole provenance map (every stored turn's key) to add its own
    key, and ingest copied it again into the map it reads: O(n) a turn, ~5 ms at 100k engrams and ~50 at a million.
    The map built once is now shared by every later capture (new keys go to a small map in front of it, merged
    into a new one every ``OVERLAY_MAX`` keys), and a turn captured again is still found as stored."""
    from plur.memory import ingest

    monkeypatch.setattr(ingest, "OVERLAY_MAX", 3)                 # merges too, within the test
    mem = Memory(plur_home, model="none", fsync=False, capture="user")
    mem.learn_many([{"statement": f"Lesson {i} of the pottery class was about glazes.",
                     "source": {"kind": "conversation", "format": "capture", "session": "s1", "turn": i,
                                "role": "user"}} for i in range(30)])
    assert mem.capture("I bought a new kiln for the studio.", session="s2", turn=0, role="user", scope="global").stored
    base = ingest._provenance(mem, "global").maps[-1]                  # built at the first capture
    assert len(base) == 30
    for turn in range(1, 3):
        assert mem.capture(f"My kiln reached {1000 + turn} degrees today.", session="s2", turn=turn, role="user",
                           scope="global").stored
        now = ingest._provenance(mem, "global")
        assert now.maps[-1] is base and len(now) == len(base) + turn + 1  # shared, not copied
    for turn in range(3, 6):                                           # past OVERLAY_MAX: merged into a new map
        assert mem.capture(f"My kiln reached {1000 + turn} degrees today.", session="s2", turn=turn, role="user",
                           scope="global").stored
    for turn in range(0, 6):                                           # every turn still known as stored
        again = mem.capture("I bought a new kiln for the studio." if turn == 0 else
                            f"My kiln reached {1000 + turn} degrees today.", session="s2", turn=turn, role="user",
                            scope="global")
        assert not again.stored and again.skipped == "known"
    assert mem.store.count() == 36
    mem.close()
