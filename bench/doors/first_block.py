"""Turns to the first memory block per Python host, in a cold process (issue 26).

Each host runs in a fresh interpreter on a fresh home (ten facts, the packaged model, nothing
cached but the model files): a RecallWorker is created, the agent is built with the framework's own
fake model (which records every request), and ``--turns`` user messages are sent, ``--gap-s``
seconds apart (a user reading the answer; the fake model itself answers at once). Reported: the
1-based turn whose model request first carries ``<plur-memory>``, and the worker's counters.

    python -m bench.doors.first_block [--turns 10] [--gap-s 1.0] [--hosts pydantic-ai,openai-agents,langchain,langgraph,adk]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODEL = "sentence-transformers/all-MiniLM-L6-v2"

CHILD = r'''
import json, sys, time
from plur import Memory
from plur.prompt import MemorySection, RecallWorker
FACTS = json.loads(sys.argv[4])   # (statement, question) pairs of tests/test_doors.py
host, turns, gap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
seen = []
with Memory() as m:
    for s, _ in FACTS:
        m.learn(s)
t0 = time.perf_counter()
memory = Memory()
worker = RecallWorker(memory)
section = MemorySection(worker)
questions = [q for _, q in FACTS][:turns]
if host == "pydantic-ai":
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel
    from plur.hosts.pydantic_ai import attach
    def fn(messages, info):
        seen.append(str(messages[-1]))
        return ModelResponse(parts=[TextPart("Noted.")])
    agent = Agent(FunctionModel(fn), instructions="You are terse.")
    attach(agent, section, agent_id="a1")
    run = lambda q: agent.run_sync(q)
elif host == "openai-agents":
    from agents import Agent, RunConfig, Runner
    from agents.testing import ScriptedModel, assistant_message
    from plur.hosts.openai_agents import instructions
    model = ScriptedModel([[assistant_message("Noted.")] for _ in questions])
    agent = Agent(name="a", model=model, instructions=instructions(section, agent_id="a1", base="You are terse."))
    def run(q):
        Runner.run_sync(agent, q, run_config=RunConfig(tracing_disabled=True))
        seen.append(model.calls[-1].system_instructions or "")
elif host == "langchain":
    from langchain.agents import create_agent
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from plur.hosts.langchain import memory_middleware
    class Rec(BaseCallbackHandler):
        def on_chat_model_start(self, serialized, messages, **kw):
            seen.append(str(messages))
    agent = create_agent(GenericFakeChatModel(messages=iter([AIMessage("Noted.") for _ in questions])),
                         system_prompt="You are terse.", middleware=[memory_middleware(section, agent_id="a1")])
    run = lambda q: agent.invoke({"messages": [{"role": "user", "content": q}]}, config={"callbacks": [Rec()]})
elif host == "langgraph":
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import create_react_agent
    from plur.hosts.langchain import react_prompt
    class Rec(BaseCallbackHandler):
        def on_chat_model_start(self, serialized, messages, **kw):
            seen.append(str(messages))
    graph = create_react_agent(GenericFakeChatModel(messages=iter([AIMessage("Noted.") for _ in questions])),
                               tools=[], prompt=react_prompt(section, agent_id="a1", base="You are terse."))
    run = lambda q: graph.invoke({"messages": [{"role": "user", "content": q}]}, config={"callbacks": [Rec()]})
elif host == "adk":
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types
    from plur.hosts.adk import instruction_provider
    class FakeGemini(BaseLlm):
        model: str = "fake-gemini"
        async def generate_content_async(self, llm_request, stream=False):
            seen.append(str(llm_request.config.system_instruction))
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Noted.")]))
    agent = LlmAgent(name="a", model=FakeGemini(),
                     instruction=instruction_provider(section, agent_id="a1", base="You are terse."))
    runner = InMemoryRunner(agent=agent, app_name="bench")
    session = runner.session_service.create_session_sync(app_name="bench", user_id="u1")
    def run(q):
        for _ in runner.run(user_id="u1", session_id=session.id,
                            new_message=types.Content(role="user", parts=[types.Part(text=q)])):
            pass
for q in questions:
    run(q)
    time.sleep(gap)
first = next((i + 1 for i, s in enumerate(seen) if "<plur-memory>" in s), None)
stats = worker.stats()
worker.close()
memory.close()
print(json.dumps({"host": host, "first_block_turn": first, "turns": len(seen), "worker": stats,
                  "seconds": round(time.perf_counter() - t0, 1)}))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--gap-s", type=float, default=1.0)
    ap.add_argument("--hosts", default="pydantic-ai,openai-agents,langchain,langgraph,adk")
    ap.add_argument("--src", type=Path, default=REPO, help="the plur source tree to measure (default: this one)")
    args = ap.parse_args()
    sys.path[:0] = [str(REPO), str(REPO / "tests")]
    from test_doors import FACTS as facts

    for host in args.hosts.split(","):
        with tempfile.TemporaryDirectory() as home:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
            env.update(PLUR_HOME=home, PLUR_MODEL=MODEL, HF_HUB_OFFLINE="1", PYTHONPATH=str(args.src))
            out = subprocess.run([sys.executable, "-c", CHILD, host, str(args.turns), str(args.gap_s),
                                  json.dumps(facts)], capture_output=True, text=True, env=env, timeout=900,
                                 cwd=home)  # not the repo: `python -c` puts the cwd first on sys.path
            print(out.stdout.strip() or out.stderr[-2000:], flush=True)


if __name__ == "__main__":
    main()
