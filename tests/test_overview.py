"""The block's overview: what memory holds, when recall has nothing for a message or the user asks about themselves.

mem0's quickstart replayed: "Hi, I'm Alex. I love basketball and gaming." then "What do you know about me?"
(the Alex note scores 0.195 against the 0.21 floor of all-MiniLM-L6-v2: an empty block before the overview).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from plur.memory import Memory
from plur.prompt import overview as ov
from plur.prompt.block import FENCE_CLOSE, FENCE_OPEN, HEADER, estimate_tokens
from plur.prompt.increment import OVERVIEW_MARK, inject_block
from plur.prompt.section import MemorySection
from plur.prompt.selection import recall_block
from plur.prompt.worker import RecallWorker

ALEX = "Hi, I'm Alex. I love basketball and gaming."
WAIT_S = 120.0

ASKS = [
    "What do you know about me?", "what do you remember?", "What else do you remember about me?",
    "Tell me about myself", "what have you learned about me so far", "What's in your memory?", "Who am I?",
    "Was weißt du über mich?", "Was hast du dir über mich gemerkt?", "Que sais-tu de moi ?",
    "Qu'est-ce que tu sais sur moi ?", "¿Qué sabes de mí?", "Cosa sai di me?", "O que você sabe sobre mim?",
    "你知道我什么？", "你记得关于我的哪些", "你对我了解多少？", "私について何を知っていますか？", "私のことを何を覚えてる？",
]
NEAR_MISSES = [
    "What do you know about Kubernetes?", "What do you remember about the Paris trip?", "Tell me about Alex",
    "Who am I meeting on Friday?", "Was weißt du über Docker?", "Que sais-tu de Python ?", "¿Qué sabes de React?",
    "你知道北京吗？", "Where do we deploy the web app?", "I know what you did", "",
]


@pytest.mark.parametrize("text", ASKS)
def test_questions_about_the_user_as_a_whole_are_recognised(text: str) -> None:
    assert ov.about_the_user(text), text


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_questions_about_something_else_are_not(text: str) -> None:
    assert not ov.about_the_user(text), text


def _overview_part(text: str) -> str:
    """The overview's lines of a block (from 'Memory overview' to the line before the fence)."""
    start = text.index("Memory overview (")
    return text[start:text.index(FENCE_CLOSE)]


def test_mem0_quickstart_what_do_you_know_about_me_gets_the_overview_with_alex(memory: Memory) -> None:
    alex = memory.learn(ALEX, type="user")
    memory.learn("Deploys go through the staging cluster first.", scope="project:web")
    hits = memory.recall("What do you know about me?", 12)
    assert all(h.below_floor for h in hits)          # what made it an empty block: nothing clears the floor
    block = recall_block(memory, "What do you know about me?")
    assert block.text.startswith(FENCE_OPEN) and block.text.endswith(FENCE_CLOSE) and block.overview
    part = _overview_part(block.text)
    assert part.startswith("Memory overview (asked about the user): 2 notes:\n")
    assert f"- {ALEX}\n" in part and "- Deploys go through the staging cluster first.\n" in part   # all: they fit
    assert block.engram_ids == () and "recall tool" not in part        # listed, not shown; nothing more to search
    assert estimate_tokens(part) <= ov.OVERVIEW_TOKENS and block.tokens <= 150


def test_a_captured_introduction_is_in_the_overview_a_worker_serves(memory: Memory) -> None:
    """The same through the recall worker with capture on (what a host runs): the next turn's block has Alex."""
    with RecallWorker(memory, capture=True) as worker:
        worker.warm("assistant", ALEX, scope="project:web")
        assert worker.wait_idle(WAIT_S)
        assert worker.stats()["captured"] == 1
        block = worker.warm("assistant", "What do you know about me?", scope="project:web", timeout_s=WAIT_S)
        assert ALEX in block and "Memory overview (asked about the user)" in block
        assert MemorySection(worker).text("assistant") == block


def test_nothing_above_the_floor_gets_counts_pinned_and_every_note_that_fits(memory: Memory) -> None:
    pin = memory.learn("Always answer in British English.", pinned=True, type="feedback")
    steps = [memory.learn(f"Build step {i} runs make dist.", scope="project:web", type="procedure") for i in range(3)]
    memory.learn("Secret plans of another project.", scope="project:other")
    block = recall_block(memory, "which telescope did the astronomer buy?", scope="project:web")
    assert pin.id in block.text and "Secret plans" not in block.text
    part = _overview_part(block.text)
    assert part.startswith("Memory overview (nothing recalled): 4 notes, 1 pinned above:\n")
    assert part.count(pin.id) == 0 and "British English" not in part   # a pinned note is listed once, above
    assert all(f"- {e.statement}\n" in part for e in steps) and "recall tool" not in part
    assert block.engram_ids == (pin.id,)                                  # the overview counts no note as shown
    assert recall_block(memory, "x", scope="project:nothing-here", budget_tokens=40).text == ""  # cannot fit


def test_empty_home_overview(plur_home: Path, embedder) -> None:
    with Memory(plur_home, embedder=embedder) as m:
        block = recall_block(m, "hello there")
    assert "Memory overview (nothing recalled): no notes in every scope yet.\n" in block.text
    assert block.engram_ids == () and block.tokens <= 150


def test_the_overview_block_stays_within_150_tokens_and_lists_the_most_used_first(memory: Memory) -> None:
    """Issue 46 E: an overview used to cost about 250 tokens with its header; a block that holds only the overview
    now stays within 150. Beyond what fits, the most used notes are listed (of any type), then the recall tool."""
    long = "The user " + "really " * 200 + "likes long walks."
    notes = [memory.learn(s, type=t) for s, t in (("The user sails a dinghy.", "user"),
                                                   ("The user paints watercolours.", "fact"),
                                                   ("The user climbs granite cliffs.", "procedure"),
                                                   ("The user cooks ramen.", "reference"))]
    memory.learn(long, type="user")
    for t in ("fact", "project", "reference", "procedure", "feedback"):
        memory.learn(f"A {t} note about sprockets number {t}.", type=t, pinned=t == "fact")
    for _ in range(3):  # climbing is recalled above the floor (the usage stats.db keeps)
        top = memory.recall("climbing granite cliffs", 1)[0]
        assert top.engram.id == notes[2].id and not top.below_floor
    lines, ids = ov.render(ov.overview_for(memory, None), ov.WHY_ASKED)
    part = "\n".join(lines)
    assert estimate_tokens(part + "\n") <= ov.OVERVIEW_TOKENS
    assert lines[1] == "- The user climbs granite cliffs." and notes[2].id == ids[0]   # the most used first
    assert lines[-1] == ov.TOOL_LINE                                                 # some did not fit
    assert all(estimate_tokens(line + "\n") <= ov.NOTE_TOKENS for line in lines[1:-1])
    block = recall_block(memory, "What do you know about me?")
    frame = estimate_tokens(f"{FENCE_OPEN}\n{HEADER}\n{FENCE_CLOSE}")
    assert frame + estimate_tokens(_overview_part(block.text)) <= 150     # the overview and what frames it


def test_a_note_the_overview_lists_is_never_counted_as_shown(memory: Memory) -> None:
    """Issue 46 point 3: the session-start overview listed a note cut short and counted it as shown, so the prompt
    that asked for it got nothing. A clipped line ends with '…'; no listed note's id is among the block's ids."""
    port = memory.learn("The web package's dev server listens on port 5173 when you run pnpm dev from the "
                        "repository root, and the API proxy forwards to port 8787.", scope="project:web")
    short = memory.learn("We deploy from release-candidate.", scope="project:web")
    start = inject_block(memory, "", agent="claude-code", scope="project:web")       # SessionStart
    assert start.overview and "- The web package's dev server listens on port" in start.text and "…" in start.text
    assert "- We deploy from release-candidate.\n" in start.text and start.engram_ids == ()
    shown = [*start.engram_ids, OVERVIEW_MARK]
    asked = inject_block(memory, "Which port does the web dev server listen on?", agent="claude-code",
                         scope="project:web", exclude=shown)
    assert port.id in asked.engram_ids and port.statement in asked.text
    again = inject_block(memory, "Which branch do we deploy from?", agent="claude-code", scope="project:web",
                         exclude=[*shown, *asked.engram_ids])
    assert short.id in again.engram_ids                                  # listed whole, still injected with its id


def test_the_overview_is_cached_per_scope_until_a_write(memory: Memory) -> None:
    memory.learn(ALEX, type="user")
    first = ov.overview_for(memory, "project:web")
    assert ov.overview_for(memory, "project:web") is first          # no re-read between writes
    assert ov.overview_for(memory, None) is not first
    memory.learn("The user drinks green tea.", type="user", scope="project:web")
    again = ov.overview_for(memory, "project:web")
    assert again is not first and again.head == "2 notes" and first.head == "1 note"


def test_the_worker_block_is_hash_gated_with_the_overview(memory: Memory) -> None:
    memory.learn(ALEX, type="user")
    with RecallWorker(memory) as worker:
        one = worker.warm("a1", "which telescope did the astronomer buy?", timeout_s=WAIT_S)
        assert "Memory overview" in one
        unchanged = worker.stats()["unchanged"]
        two = worker.warm("a1", "what colour is the harbour crane?", timeout_s=WAIT_S)
        assert two == one and worker.stats()["unchanged"] == unchanged + 1   # replaced only when it changes


def test_the_hook_shows_the_floor_overview_once_per_session_and_again_when_asked(memory: Memory) -> None:
    alex = memory.learn(ALEX, type="user")
    first = inject_block(memory, "which telescope did the astronomer buy?", agent="claude-code")
    assert first.overview and f"- {ALEX}" in first.text and alex.id not in first.engram_ids
    shown = [*first.engram_ids, OVERVIEW_MARK]
    assert inject_block(memory, "what colour is the harbour crane?", agent="claude-code", exclude=shown).text == ""
    asked = inject_block(memory, "What do you know about me?", agent="claude-code", exclude=shown)
    assert asked.overview and "Memory overview (asked about the user)" in asked.text


def test_cli_section_carries_the_overview(run, home: Path) -> None:
    assert run("learn", ALEX, "--type", "user").exit_code == 0
    out = run("section", "--agent", "a1", "What do you know about me?")
    assert out.exit_code == 0 and ALEX in out.stdout and "Memory overview" in out.stdout


def test_the_service_block_injects_the_overview(plur_home: Path) -> None:
    from starlette.testclient import TestClient

    from plur.service.api import create_api

    with Memory(plur_home, model="none") as m, RecallWorker(m) as worker:
        m.learn(ALEX, type="user")
        app = create_api(m, worker, "t")
        with TestClient(app) as client:
            r = client.post("/api/v1/block", json={"agent_id": "dsh-1", "query": "What do you know about me?",
                                                   "inject": True}, headers={"Authorization": "Bearer t"})
        assert r.status_code == 200, r.text
        assert ALEX in r.json()["text"] and "Memory overview" in r.json()["text"]
    with sqlite3.connect(plur_home / "stats.db") as db:
        assert db.execute("SELECT agent FROM injections").fetchall() == [("dsh-1",)]


def test_plur_hook_claude_code_injects_the_note_its_session_start_overview_clipped(tmp_path: Path) -> None:
    """Issue 46 point 3 with `plur hook claude-code` alone (no service: in-process): SessionStart's overview lists
    the port note cut short; the prompt that asks for the port then gets the whole note."""
    import json
    import subprocess
    import sys

    from test_doors import _env

    from plur.project import resolve

    work = tmp_path / "work" / "web"
    (work / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    env = _env(home, PLUR_MODEL="none")
    assert subprocess.run([sys.executable, "-m", "plur", "init"], env=env, capture_output=True,
                          timeout=120).returncode == 0
    port = ("The web package's dev server listens on port 5173 when you run pnpm dev from the repository root, "
            "and the API proxy forwards to port 8787.")
    with Memory(home, model="none") as m:
        m.learn(port, scope=resolve(str(work), home).scope, type="user")     # as capture stores it

    def hook(**event: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "plur", "hook", "claude-code"], env=env, timeout=300,
                              input=json.dumps({"session_id": "cc-3", "cwd": str(work), **event}),
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] if proc.stdout.strip() else ""

    start = hook(hook_event_name="SessionStart", source="startup")
    assert "Memory overview" in start and "…" in start and port not in start
    asked = hook(hook_event_name="UserPromptSubmit", prompt="Which port does the web dev server listen on?")
    assert port in asked
