"""Memory in the first model request of every in-process host, and a clean exit.

The five framework examples of the docs (docs/hosts/) run exactly as written (no line changed) in a fresh interpreter, with
only ``OPENAI_BASE_URL`` / ``GOOGLE_GEMINI_BASE_URL`` pointing at an instant local fake model that records
every request (:mod:`fake_llm`): each exits 0, prints its answers, and its FIRST model request carries
the note relevant to the first question. ``PLUR_TURN_WAIT_S`` is set generously so the verdict never
depends on the machine's speed: the host returns as soon as the recall lands.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import PACKAGED_MODEL
from fake_llm import REPLY, FakeLLM
from plur.hosts.binding import Binding
from plur.memory import Memory
from plur.prompt.section import MemorySection
from plur.prompt.worker import RecallWorker

ROOT = Path(__file__).resolve().parents[1]
#: The README and every docs page (the framework examples live on the host pages).
BLOCKS = [code for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))] if page.exists()
          for code in re.findall(r"^```python(?: runnable)?\n(.*?)^```$", page.read_text(encoding="utf-8"),
                                 flags=re.S | re.M)]
NOTE = "The web app is deployed to the Hetzner box fra-7 by deploy.sh."
WAIT_S = 120.0
EXAMPLES = {
    "pydantic-ai": 'Agent("openai:gpt-4o"',
    "openai-agents": 'model="gpt-4o"',
    "langchain": 'create_agent("openai:gpt-4o"',
    "langgraph": 'create_react_agent("openai:gpt-4o"',
    "adk": 'model="gemini-2.0-flash"',
}


def _example(marker: str) -> str:
    found = [b for b in BLOCKS if marker in b and "plur.hosts" in b]
    assert len(found) == 1, f"docs: one example with {marker!r} expected, found {len(found)}"
    return found[0]


def _plur_frames(stderr: str) -> list[str]:
    """Traceback lines that point into the plur package (upstream noise elsewhere is not plur's)."""
    return [line for line in stderr.splitlines() if line.strip().startswith("File ") and "/plur/" in line]


@pytest.mark.parametrize("framework", list(EXAMPLES))
def test_readme_example_verbatim_first_request_carries_the_note(framework: str, plur_home: Path) -> None:
    code = _example(EXAMPLES[framework])
    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": PACKAGED_MODEL, "HF_HUB_OFFLINE": "1",
           "PLUR_TURN_WAIT_S": str(WAIT_S)}
    with Memory(plur_home, model="none") as m:
        m.learn(NOTE, scope="project:web")    # the pydantic-ai example is bound to project:web; others see all
    with FakeLLM() as fake:
        env.update(fake.env())
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
        requests = list(fake.requests)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "terminate called" not in out.stderr and not _plur_frames(out.stderr), out.stderr[-3000:]
    # a user runs the example as written: no traceback at all, whoever's (ADK's synchronous runner left one)
    assert "Traceback" not in out.stderr and "migrate to the async method" not in out.stderr, out.stderr[-3000:]
    asked = code.count("?")                    # one printed answer per question
    assert out.stdout.count(REPLY) == asked, out.stdout
    model_calls = [r for r in requests if r["path"].split("?")[0].rsplit("/", 1)[-1] in
                   ("completions", "responses") or "generateContent" in r["path"]]
    assert len(model_calls) == asked, [r["path"] for r in requests]
    first = json.dumps(model_calls[0]["body"], ensure_ascii=False)
    assert "fra-7" in first and "<plur-memory>" in first, first[:3000]


def test_the_pydantic_ai_example_prints_its_answer() -> None:
    assert "print(agent.run_sync(" in _example(EXAMPLES["pydantic-ai"])


# -- the bound: a turn's first request waits at most wait_s, later requests never -------------------------

class _Gate:
    """Hold the recall of one message until released (a recall slower than any bound)."""

    def __init__(self, memory: Memory, slow: str) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        real = memory.recall

        def recall(text: str, *args: Any, **kwargs: Any) -> Any:
            if text == slow:
                self.entered.set()
                assert self.release.wait(WAIT_S)
            return real(text, *args, **kwargs)

        memory.recall = recall  # type: ignore[method-assign]


def test_the_first_request_waits_bounded_and_a_tool_loop_never_resubmits(plur_home: Path) -> None:
    with Memory(plur_home, model="none") as m:
        note = m.learn("The staging cluster is called kestrel.")
        gate = _Gate(m, "which cluster is staging?")
        with RecallWorker(m) as worker:
            binding = Binding(MemorySection(worker), agent_id="a1", wait_s=0.05)
            # the recall is held: the first request gives up after wait_s, without a block
            assert binding.memory(None, "which cluster is staging?", turn_key="turn-1") == ""
            assert gate.entered.is_set() and worker.stats()["submitted"] == 1
            gate.release.set()
            assert worker.wait_idle(WAIT_S)
            # a later request of the same turn (after a tool call) reads the landed block and submits nothing
            assert note.id in binding.memory(None, "which cluster is staging?", turn_key="turn-1")
            assert worker.stats()["submitted"] == 1
            # a new turn waits for its own recall (generously bounded): its first request carries it
            waiting = Binding(MemorySection(worker), agent_id="a2", wait_s=WAIT_S)
            assert note.id in waiting.memory(None, "what is the staging cluster called?", turn_key="turn-1")


def test_wait_s_is_checked_and_comes_from_the_setting(plur_home: Path) -> None:
    from plur.errors import ValidationError

    with Memory(plur_home, model="none", turn_wait_s=7.5) as m, RecallWorker(m) as worker:
        assert Binding(MemorySection(worker), agent_id="a").wait_s == 7.5
        with pytest.raises(ValidationError, match="wait_s=-1"):
            Binding(MemorySection(worker), agent_id="a", wait_s=-1)


# -- exit: no native call may run when the interpreter finalizes ---------------------------------------

EXIT_SCRIPT = """
import threading
from plur import Memory
from plur.prompt import RecallWorker

inside = threading.Event()
try:  # the packaged model's runtime here: ONNX Runtime builds its session in native code, the GIL released
    import onnxruntime

    real_init = onnxruntime.InferenceSession.__init__

    def init(self, *args, **kwargs):
        inside.set()
        return real_init(self, *args, **kwargs)

    onnxruntime.InferenceSession.__init__ = init
except ImportError:  # torch only: exit while the model loads
    pass
memory = Memory()
real = memory.model_resolution

def model_resolution():
    if "onnxruntime" not in globals():
        inside.set()
    return real()

memory.model_resolution = model_resolution
worker = RecallWorker(memory)
assert inside.wait(600)
print("exiting while the model loads", flush=True)
"""


def test_exiting_while_the_model_loads_does_not_abort(plur_home: Path) -> None:
    """The pydantic-ai example's SIGABRT (exit 134, 'terminate called without an active exception'): a daemon
    thread inside ONNX Runtime's session build when the interpreter finalized."""
    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": PACKAGED_MODEL, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0 and "terminate called" not in out.stderr, (out.returncode, out.stderr[-2000:])
    assert out.stdout.strip() == "exiting while the model loads"


def test_the_anthropic_example_runs_against_the_fake_model_the_docs_name(plur_home: Path) -> None:
    """docs/hosts/index.md's "without a paid key" recipe (tests/fake_llm.py and its exports) for the Anthropic
    memory tool's example too: the fake answered only OpenAI and Gemini, so the example died on a 404."""
    code = _example("tool_runner(")
    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": "none"}
    with FakeLLM() as fake:
        env.update(fake.env())
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
        requests = list(fake.requests)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert out.stdout.strip() == REPLY
    (call,) = [r for r in requests if r["path"].split("?")[0] == "/v1/messages"]
    assert any(t.get("type") == "memory_20250818" for t in call["body"]["tools"]), call["body"]
