"""The memory block in real agent frameworks, each driven by its own fake model (no LLM, no network).

Frameworks: the OpenAI Agents SDK (``agents.testing.ScriptedModel``), LangChain ``create_agent`` and
langgraph-prebuilt ``create_react_agent`` (``GenericFakeChatModel``, the prompt read by a callback
handler at ``on_chat_model_start``), Google ADK (a ``BaseLlm`` subclass run by ``InMemoryRunner``).
Every driver returns what the model itself received on each call: the system prompt and the text of
every other message. The same assertions hold for all: from turn 1 on, a block that reflects the question
the request answers (the host waits for that recall, ``turn_wait_s``), one block (replaced, never appended), bounded and flat prompt
length over 20+ turns, agents with different scopes isolated, base instructions only without an agent.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from plur.errors import MissingDependencyError
from plur.memory import Memory
from plur.prompt.block import FENCE_CLOSE, FENCE_OPEN, estimate_tokens
from plur.prompt.section import MemorySection
from plur.prompt.worker import RecallWorker

REPO = Path(__file__).resolve().parents[1]  # the checkout: plur installs from it (errors.install_hint)

WAIT_S = 30.0
TURNS = 24
BUDGET = 600
BASE = "You are a test assistant."
ID_RE = re.compile(r"ENG-\d{4}-\d\d-\d\d-[0-9a-f]{6}")
TOPICS = ["kubernetes", "postgres", "espresso", "marathon", "violin", "bonsai", "sourdough", "telescope",
          "origami", "kayaking", "chess", "pottery", "beekeeping", "calligraphy", "snowboard", "aquarium",
          "woodwork", "falconry", "karaoke", "juggling"]
#: prompt lengths per framework over the 24-turn run, printed at the end (for the closing note)
LENGTHS: dict[str, list[int]] = {}


@dataclass
class Seen:
    """One model call: the system prompt and the text of every other message the model got."""

    system: str
    others: list[str]


#: A driver runs ``questions`` through the framework: (worker, agent_id source, scope source, base,
#: questions, keep_history, contexts) -> one Seen per model call.
Driver = Callable[..., list[Seen]]


@pytest.fixture
def mem(plur_home: Path) -> Iterator[Memory]:
    # BM25 only: the framework seam is the point here; a wait generous enough for a loaded machine (a turn's
    # first request waits for its recall, returning as soon as it lands)
    m = Memory(plur_home, model="none", fsync=False, turn_wait_s=WAIT_S)
    yield m
    m.close()


@pytest.fixture
def topic_ids(mem: Memory) -> dict[str, str]:
    return {t: mem.learn(f"Remembered detail: {t} matters to this person ({i}).", scope="project:demo").id
            for i, t in enumerate(TOPICS)}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(c.get("text", "") if isinstance(c, dict) else c) for c in content)
    return str(content)


# -- OpenAI Agents SDK ------------------------------------------------------------------------------

def drive_openai_agents(worker: RecallWorker, agent_id: Any, scope: Any, base: str | None,
                        questions: list[str], keep_history: bool, contexts: list[Any] | None = None) -> list[Seen]:
    from agents import Agent, RunConfig, Runner
    from agents.testing import ScriptedModel, assistant_message

    from plur.hosts.openai_agents import instructions

    model = ScriptedModel([[assistant_message("Noted.")] for _ in questions])
    agent = Agent(name="tester", model=model,
                  instructions=instructions(MemorySection(worker), agent_id=agent_id, scope=scope, base=base))
    history: list[Any] = []
    for i, q in enumerate(questions):
        items = history + [{"role": "user", "content": q}] if keep_history else q
        result = Runner.run_sync(agent, items, context=contexts[i] if contexts else None,
                                 run_config=RunConfig(tracing_disabled=True))
        history = result.to_input_list()
        assert worker.wait_idle(WAIT_S)
    out = []
    for call in model.calls:
        items = call.input if isinstance(call.input, list) else [{"role": "user", "content": call.input}]
        out.append(Seen(call.system_instructions or "",
                        [_text(it.get("content", "")) if isinstance(it, dict) else str(it) for it in items]))
    return out


# -- LangChain / LangGraph ------------------------------------------------------------------------------

def _langchain_recorder() -> tuple[Any, list[Seen]]:
    from langchain_core.callbacks import BaseCallbackHandler

    seen: list[Seen] = []

    class Recorder(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: list[list[Any]], **kwargs: Any) -> None:
            msgs = messages[0]
            system = [m for m in msgs if m.type == "system"]
            assert len(system) <= 1
            seen.append(Seen(_text(system[0].content) if system else "",
                             [_text(m.content) for m in msgs if m.type != "system"]))

    return Recorder(), seen


def _fake_chat_model(n: int) -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    return GenericFakeChatModel(messages=iter([AIMessage(content="Noted.") for _ in range(n)]))


def _run_langgraph(graph: Any, questions: list[str], keep_history: bool, worker: RecallWorker,
                   recorder: Any, invoke_kw: Callable[[int], dict[str, Any]]) -> None:
    from langchain_core.messages import HumanMessage

    history: list[Any] = []
    for i, q in enumerate(questions):
        kw = invoke_kw(i)
        kw["config"] = {"callbacks": [recorder]} | kw.get("config", {})
        state = graph.invoke({"messages": (history if keep_history else []) + [HumanMessage(q)]}, **kw)
        history = state["messages"]
        assert worker.wait_idle(WAIT_S)


def drive_langchain(worker: RecallWorker, agent_id: Any, scope: Any, base: str | None, questions: list[str],
                    keep_history: bool, contexts: list[Any] | None = None) -> list[Seen]:
    from langchain.agents import create_agent

    from plur.hosts.langchain import memory_middleware

    recorder, seen = _langchain_recorder()
    agent = create_agent(_fake_chat_model(len(questions)), system_prompt=base,
                         middleware=[memory_middleware(MemorySection(worker), agent_id=agent_id, scope=scope)],
                         context_schema=dict if contexts else None)
    _run_langgraph(agent, questions, keep_history, worker, recorder,
                   lambda i: {"context": contexts[i]} if contexts else {})
    return seen


def drive_langgraph_react(worker: RecallWorker, agent_id: Any, scope: Any, base: str | None,
                          questions: list[str], keep_history: bool, contexts: list[Any] | None = None
                          ) -> list[Seen]:
    import warnings

    from plur.hosts.langchain import react_prompt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated upstream; still shipped and used
        from langgraph.prebuilt import create_react_agent

        recorder, seen = _langchain_recorder()
        graph = create_react_agent(_fake_chat_model(len(questions)), tools=[],
                                   prompt=react_prompt(MemorySection(worker), agent_id=agent_id, scope=scope,
                                                       base=base))
    _run_langgraph(graph, questions, keep_history, worker, recorder,
                   lambda i: {"config": {"configurable": contexts[i]}} if contexts else {})
    return seen


# -- Google ADK ---------------------------------------------------------------------------------------

def drive_adk(worker: RecallWorker, agent_id: Any, scope: Any, base: str | None, questions: list[str],
              keep_history: bool, contexts: list[Any] | None = None) -> list[Seen]:
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from plur.hosts.adk import content_text, instruction_provider

    seen: list[Seen] = []

    class RecordingLlm(BaseLlm):
        model: str = "plur-test-model"

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            system = _text(llm_request.config.system_instruction or "")
            assert ADK_IDENTITY in system     # ADK adds its own line; the rest is what the provider returned
            seen.append(Seen(system.replace("\n\n" + ADK_IDENTITY, "").replace(ADK_IDENTITY, ""),
                             [content_text(c) for c in llm_request.contents]))
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Noted.")]),
                              usage_metadata=types.GenerateContentResponseUsageMetadata(
                                  prompt_token_count=len(system) // 4, candidates_token_count=2))

    agent = LlmAgent(name="tester", model=RecordingLlm(),
                     instruction=instruction_provider(MemorySection(worker), agent_id=agent_id, scope=scope,
                                                      base=base))
    runner = InMemoryRunner(agent=agent, app_name="plur-test")

    async def session(user: str) -> str:
        return (await runner.session_service.create_session(app_name="plur-test", user_id=user)).id

    sessions: dict[str, str] = {}
    for i, q in enumerate(questions):
        user = (contexts[i] or {}).get("user", "nobody") if contexts else "u1"
        if not keep_history or user not in sessions:
            sessions[user] = asyncio.run(session(user))
        for _ in runner.run(user_id=user, session_id=sessions[user],
                            new_message=types.Content(role="user", parts=[types.Part(text=q)])):
            pass
        assert worker.wait_idle(WAIT_S)
    return seen


#: The line ADK itself adds to every agent's system instruction.
ADK_IDENTITY = 'You are an agent. Your internal name is "tester".'

DRIVERS: dict[str, Driver] = {"openai-agents": drive_openai_agents, "langchain": drive_langchain,
                              "langgraph-react": drive_langgraph_react, "adk": drive_adk}
#: Per framework: how an agent id / scope is read from that framework's context in the isolation test.
CONTEXT_ID = {
    "openai-agents": (lambda ctx: (ctx.context or {}).get("agent"), lambda ctx: (ctx.context or {}).get("scope")),
    "langchain": (lambda req: (req.runtime.context or {}).get("agent"),
                  lambda req: (req.runtime.context or {}).get("scope")),
    "langgraph-react": (lambda cfg: cfg["configurable"].get("agent"), lambda cfg: cfg["configurable"].get("scope")),
    "adk": (lambda ctx: ctx.state.get("agent") or (None if ctx.user_id == "nobody" else ctx.user_id),
            lambda ctx: {"A": "project:a", "B": "project:b"}.get(ctx.user_id)),
}


@pytest.mark.parametrize("keep_history", [False, True], ids=["fresh-runs", "with-history"])
@pytest.mark.parametrize("framework", list(DRIVERS))
def test_framework_model_gets_a_fresh_bounded_block_every_turn(framework: str, keep_history: bool, mem: Memory,
                                                               topic_ids: dict[str, str]) -> None:
    questions = [f"What do you remember about {TOPICS[t % len(TOPICS)]}?" for t in range(TURNS)]
    with RecallWorker(mem, k=3, budget_tokens=BUDGET) as worker:
        seen = DRIVERS[framework](worker, "agent-1", "project:demo", BASE, questions, keep_history)
    assert len(seen) == TURNS
    sizes = []
    for turn in range(TURNS):
        system = seen[turn].system
        assert (BASE + "\n\n" + FENCE_OPEN) in system, (turn, system)        # present from turn 1
        assert system.count(FENCE_OPEN) == 1 and system.count(FENCE_CLOSE) == 1   # replaced, not appended
        block = system[system.index(FENCE_OPEN):system.index(FENCE_CLOSE) + len(FENCE_CLOSE)]
        assert estimate_tokens(block) <= BUDGET
        # the block answers this turn's question: its first request waited for that recall
        assert ID_RE.findall(block)[0] == topic_ids[TOPICS[turn % len(TOPICS)]], (turn, block)
        assert not any(FENCE_OPEN in c or "ENG-" in c for c in seen[turn].others)   # never in the history
        sizes.append(len(system))
    assert max(sizes) - min(sizes) <= 16            # flat: turn 24's system prompt costs what turn 1's does
    LENGTHS[f"{framework}/{'history' if keep_history else 'fresh'}"] = [len(s.system) for s in seen]
    if keep_history:   # the conversation grows by the questions and replies alone
        assert len(seen[-1].others) >= 2 * TURNS - 1


@pytest.mark.parametrize("framework", list(DRIVERS))
def test_framework_agents_with_different_scopes_are_isolated_and_no_agent_gets_base_only(
        framework: str, mem: Memory) -> None:
    a = mem.learn("Alpha team deploys with helm.", scope="project:a")
    b = mem.learn("Beta team deploys with terraform.", scope="project:b")
    contexts = [{"agent": "A", "scope": "project:a", "user": "A"}, {"agent": "B", "scope": "project:b", "user": "B"}]
    contexts = contexts * 2 + [{"user": "nobody"}]
    agent_id, scope = CONTEXT_ID[framework]
    with RecallWorker(mem) as worker:
        seen = DRIVERS[framework](worker, agent_id, scope, BASE, ["how does the team deploy?"] * 5, False, contexts)
        assert worker.stats()["agents"] == 2                     # the agent-less run submitted nothing
    assert [ID_RE.findall(s.system) for s in seen[:4]] == [[a.id], [b.id], [a.id], [b.id]]
    assert seen[4].system.strip() == BASE                        # no agent: base instructions only


@pytest.mark.parametrize("framework", list(DRIVERS))
def test_framework_without_agent_or_base_gets_an_empty_prompt(framework: str, mem: Memory) -> None:
    mem.learn("Alpha team deploys with helm.")
    with RecallWorker(mem) as worker:
        seen = DRIVERS[framework](worker, None, None, None, ["how does the team deploy?"] * 2, False)
        assert worker.stats()["submitted"] == 0
    assert [s.system for s in seen] == ["", ""]


@pytest.mark.parametrize("module, factory, package, extra", [
    ("openai_agents", "instructions", "agents", "openai-agents"),
    ("langchain", "memory_middleware", "langchain.agents", "langchain"),
    ("langchain", "react_prompt", "langgraph.prebuilt", "langchain"),
    ("adk", "instruction_provider", "google.adk", "adk"),
])
def test_adapter_without_its_framework_names_the_extra(module: str, factory: str, package: str, extra: str,
                                                       mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    fn = getattr(importlib.import_module(f"plur.hosts.{module}"), factory)
    monkeypatch.setitem(sys.modules, package, None)   # what Python does for a package that is not installed
    with RecallWorker(mem) as worker, pytest.raises(ImportError, match=re.escape(f"pip install -e '{REPO}[{extra}]'")) as err:
        fn(MemorySection(worker), agent_id="a1")
    assert isinstance(err.value, MissingDependencyError)


def test_print_prompt_lengths() -> None:
    """Not an assertion: the prompt lengths (characters) each framework's model saw, for the closing note."""
    for name, lengths in sorted(LENGTHS.items()):
        print(f"{name}: turn1={lengths[0]} turn2={lengths[1]} turn{len(lengths)}={lengths[-1]} "
              f"min..max(turn2+)={min(lengths[1:])}..{max(lengths[1:])}")
