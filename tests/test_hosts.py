"""Hosts: the generic section registry, and a real pydantic-ai Agent driven through 60 turns.

The pydantic-ai test uses the real ``Agent`` with its ``FunctionModel`` (no LLM, no network):
the model function records exactly what pydantic-ai hands a model on each request.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from plur.errors import ValidationError
from plur.hosts.registry import PromptRegistry
from plur.memory import Memory
from plur.prompt.block import FENCE_CLOSE, FENCE_OPEN, estimate_tokens
from plur.prompt.section import MemorySection
from plur.prompt.worker import RecallWorker

WAIT_S = 30.0
ID_RE = re.compile(r"ENG-\d{4}-\d\d-\d\d-[0-9a-f]{6}")
TOPICS = ["kubernetes", "postgres", "espresso", "marathon", "violin", "bonsai", "sourdough", "telescope",
          "origami", "kayaking", "chess", "pottery", "beekeeping", "calligraphy", "snowboard", "aquarium",
          "woodwork", "falconry", "karaoke", "juggling"]


@pytest.fixture
def mem(plur_home: Path) -> Iterator[Memory]:
    m = Memory(plur_home, model="none", fsync=False, turn_wait_s=WAIT_S)  # a turn's first request waits for its recall
    yield m
    m.close()


@pytest.fixture
def topic_ids(mem: Memory) -> dict[str, str]:
    return {t: mem.learn(f"Remembered detail: {t} matters to this person ({i}).", scope="project:demo").id
            for i, t in enumerate(TOPICS)}


# -- generic registry ------------------------------------------------------------------------------

def test_registry_renders_sections_in_order_per_request(mem: Memory, topic_ids: dict[str, str]) -> None:
    registry = PromptRegistry()
    calls: list[Any] = []
    registry.add("footer", "Answer briefly.", order=200)
    registry.add("persona", "You are a careful assistant.", order=10)
    registry.add("clock", lambda a: calls.append(a) or f"turn {len(calls)}", order=10)  # tie: registration order
    with RecallWorker(mem) as worker:
        remove = registry.add(MemorySection(worker))
        assert [s.name for s in registry.sections()] == ["persona", "clock", "plur:memory", "footer"]
        assert registry.render({"agent_id": "A"}) == "You are a careful assistant.\n\nturn 1\n\nAnswer briefly."
        worker.warm("A", "espresso", scope="project:demo")
        parts = registry.render_parts({"agent_id": "A"})
        assert [n for n, _ in parts] == ["persona", "clock", "plur:memory", "footer"]
        assert topic_ids["espresso"] in parts[2][1] and calls == [{"agent_id": "A"}, {"agent_id": "A"}]
        assert "plur:memory" not in dict(registry.render_parts(None))  # no agent: section absent
        remove()
        remove()
        assert "plur:memory" not in [s.name for s in registry.sections()]


def test_registry_refuses_duplicate_names(mem: Memory) -> None:
    registry = PromptRegistry()
    with RecallWorker(mem) as worker:
        registry.add(MemorySection(worker))
        with pytest.raises(ValidationError, match="already registered"):
            registry.add(MemorySection(worker))  # per-agent registration would leak blocks between agents
    with pytest.raises(ValidationError, match="needs text"):
        registry.add("x")
    with pytest.raises(ValidationError, match="non-empty name"):
        registry.add("", "text")


# -- pydantic-ai ---------------------------------------------------------------------------------------

@dataclass
class Seen:
    """What the model received on one request."""

    instructions: str
    contents: list[str]        # text of every message part sent (user prompts, replies)
    part_kinds: list[str]


def _drive(mem: Memory, turns: int, keep_history: bool) -> tuple[list[Seen], list[str], str]:
    import pydantic_ai
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from plur.hosts.pydantic_ai import attach

    seen: list[Seen] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        contents, kinds = [], []
        for m in messages:
            for p in m.parts:
                kinds.append(p.part_kind)
                if isinstance(getattr(p, "content", None), str):
                    contents.append(p.content)
        seen.append(Seen(info.instructions or "", contents, kinds))
        return ModelResponse(parts=[TextPart("Noted.")])

    static = "You are a test assistant."
    agent = pydantic_ai.Agent(FunctionModel(model), instructions=static)
    questions = [f"What do you remember about {TOPICS[t % len(TOPICS)]}?" for t in range(turns)]
    with RecallWorker(mem, k=3, budget_tokens=600) as worker:
        attach(agent, MemorySection(worker), agent_id="agent-1", scope="project:demo")
        history: list[Any] = []
        for q in questions:
            result = agent.run_sync(q, message_history=history if keep_history else None)
            history = result.all_messages()
            assert worker.wait_idle(WAIT_S)  # the user's think time: the off-turn recall lands
    return seen, questions, static


@pytest.mark.parametrize("keep_history", [False, True], ids=["fresh-runs", "with-history"])
def test_pydantic_ai_agent_gets_a_fresh_bounded_block_every_turn(mem: Memory, topic_ids: dict[str, str],
                                                                 keep_history: bool) -> None:
    seen, questions, static = _drive(mem, 60, keep_history)
    assert len(seen) == 60
    memory_sizes = []
    for turn in range(60):
        got = seen[turn]
        assert got.instructions.startswith(static + "\n\n" + FENCE_OPEN)   # present from turn 1
        block = got.instructions[len(static) + 2:]
        assert block.endswith(FENCE_CLOSE) and block.count(FENCE_OPEN) == 1
        assert estimate_tokens(block) <= 600
        # reflects the question this request answers: the run's first request waited for its recall
        assert ID_RE.findall(block)[0] == topic_ids[TOPICS[turn % len(TOPICS)]], (turn, block)
        # the block lives only in the instructions: never in the message history
        assert not any(FENCE_OPEN in c or "ENG-" in c for c in got.contents)
        assert not any("instruction" in k for k in got.part_kinds)
        memory_sizes.append(len(block))
    assert max(memory_sizes) - min(memory_sizes) <= 8  # topic names differ by a few characters

    totals = [len(s.instructions) + sum(len(c) for c in s.contents) for s in seen[1:]]
    if keep_history:
        # the conversation grows by the questions and replies alone; the memory part does not
        conversation = [sum(len(q) for q in questions[:t + 1]) + t * len("Noted.") for t in range(1, 60)]
        non_conversation = [tot - conv for tot, conv in zip(totals, conversation)]
        assert max(non_conversation) - min(non_conversation) <= 8
        assert max(non_conversation) <= len(static) + 2 + max(memory_sizes)
    else:
        assert max(totals) - min(totals) <= 16  # flat: turn 60 costs what turn 2 costs


def test_pydantic_ai_agent_id_from_deps_keeps_agents_apart_and_survives_a_closed_worker(mem: Memory) -> None:
    import pydantic_ai
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from plur.hosts.pydantic_ai import attach

    a = mem.learn("Alpha team deploys with helm.", scope="project:a")
    b = mem.learn("Beta team deploys with terraform.", scope="project:b")
    received: list[str] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        received.append(info.instructions or "")
        return ModelResponse(parts=[TextPart("ok")])

    agent = pydantic_ai.Agent(FunctionModel(model), deps_type=dict)
    worker = RecallWorker(mem)
    attach(agent, MemorySection(worker), agent_id=lambda ctx: ctx.deps.get("agent"),
           scope=lambda ctx: ctx.deps.get("scope"))
    users = {"A": {"agent": "A", "scope": "project:a"}, "B": {"agent": "B", "scope": "project:b"}}
    for _ in range(2):
        for deps in users.values():
            agent.run_sync("how does the team deploy?", deps=deps)
            assert worker.wait_idle(WAIT_S)
    agent.run_sync("how does the team deploy?", deps={})          # no agent: no block, nothing submitted
    assert [ID_RE.findall(r) for r in received[:4]] == [[a.id], [b.id], [a.id], [b.id]]
    assert received[4] == "" and worker.stats()["agents"] == 2
    worker.close()
    agent.run_sync("still there?", deps=users["A"])               # a closed worker never breaks a turn
    assert ID_RE.findall(received[5]) == [a.id]
