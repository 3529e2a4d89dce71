"""``plur ingest`` follows capture's rules (issue 46 F): the same turns left out (nothing to remember, slash
commands such as ``/plur capture off``, questions), no turn typed while capture was off, and no sentence stored
twice in a scope from two conversations (captured live, then ingested from another session's log)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from plur.formats import chats as conv
from plur.formats.chats import dsh
from plur.memory import Memory
from plur.memory.rules import OFF_FILE, off_marks

SESSIONS = Path(__file__).resolve().parent / "data" / "ingest" / "dsh" / "sessions"
LENA = "My sister Lena moved to Vienna last spring."


@pytest.fixture
def mem(plur_home: Path) -> Any:
    m = Memory(plur_home, model="none", fsync=False, capture="user")
    yield m
    m.close()


def _chat(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": t} for t in texts]


def test_ingest_leaves_out_what_capture_leaves_out(mem: Memory) -> None:
    chat = _chat("ok", "/plur capture off", "What is my dog called?", "Lin's dog is called Biscuit.", "thanks!",
                 "git status", "lin's dog is called  Biscuit.", "Hi! When does Mia start school?")
    out = mem.ingest(chat, session="chat-1")
    assert [e.statement for e in out.added] == ["Lin's dog is called Biscuit."]
    assert dict(out.left_out) == {"trivial": 4, "question": 2, "repeat": 1} and out.skipped == 0
    again = mem.ingest(chat, session="chat-1")                 # idempotent: nothing new, the same left out
    assert again.added == () and dict(again.left_out) == dict(out.left_out) and again.skipped == 1
    assert [e.statement for e in mem.list()] == ["Lin's dog is called Biscuit."]
    kept = mem.ingest(chat, session="chat-2", rules=False)     # the rules off: every turn of the chat
    assert len(kept.added) == len(chat)


def test_a_sentence_captured_live_then_ingested_from_another_session_shows_once(mem: Memory) -> None:
    (live,) = mem.capture("We deploy the billing service from the branch release-candidate.", session="dsh-1",
                          turn=0, scope="project:shop").stored
    out = mem.ingest(_chat("we deploy the billing service from the branch release-candidate.",
                           "The staging database is billing_stage."), session="cc-9", scope="project:shop")
    assert [e.statement for e in out.added] == ["The staging database is billing_stage."]
    assert dict(out.left_out) == {"repeat": 1}
    from plur.prompt.selection import recall_block

    block = recall_block(mem, "which branch do we deploy the billing service from?", scope="project:shop")
    assert block.text.lower().count("release-candidate") == 1 and live.id in block.engram_ids
    other = mem.ingest(_chat("We deploy the billing service from the branch release-candidate."), session="x",
                       scope="project:other")                # another scope is another memory: stored there
    assert len(other.added) == 1


def test_turns_typed_while_capture_was_off_are_not_ingested(mem: Memory, plur_home: Path) -> None:
    """capture with mode off (the setting, a host's switch) stores nothing and remembers the turn without its text
    (session, number, hash); an ingest of that conversation later leaves it out, in any format."""
    secret = "My bank PIN is 4821, please keep it in mind."
    plur_home.mkdir(parents=True, exist_ok=True)            # a home (plur init, any write); none: nothing marked
    assert mem.capture(secret, session="cc-1", turn=3, mode="off").skipped == "off"
    assert mem.list() == [] and secret.encode() not in (plur_home / OFF_FILE).read_bytes()
    marks = off_marks(plur_home)
    assert ("cc-1", 3, "user") in marks.turns and len(marks.texts) == 1
    out = mem.ingest(_chat("I drive a blue Volvo.", secret), session="cc-1")
    assert [e.statement for e in out.added] == ["I drive a blue Volvo."] and dict(out.left_out) == {"off": 1}
    assert len(mem.ingest(_chat(secret), session="cc-2").added) == 1   # said again in another conversation
    assert mem.ingest(_chat(secret), session="cc-1", rules=False, scope="project:x").added  # the rules off


def test_a_dsh_turn_the_plugin_marked_off_is_not_ingested(mem: Memory, plur_home: Path) -> None:
    """The DSH plugin marks a typed turn by its place (session, number: its log's numbering, no hash) when its own
    capture switch or memory is off; `plur ingest` of the log then leaves that turn out."""
    log = next(f for f, cwd in dsh.sessions(SESSIONS) if cwd == "/home/dev/我的项目")
    sid = conv.load(log)[0]["id"]
    plur_home.mkdir(parents=True, exist_ok=True)
    with open(plur_home / OFF_FILE, "a", encoding="utf-8") as fh:   # what hosts/dsh/src/capture.js appends
        fh.write(json.dumps({"session": sid, "turn": 0, "role": "user", "at": "2026-12-07T10:00:00Z"}) + "\n")
        fh.write("not json\n")
    out = mem.ingest(log, scope="project:a")
    assert out.added == () and dict(out.left_out) == {"off": 1}
    assert [e.statement for e in mem.ingest(log, scope="project:b", rules=False).added] == [LENA]


def test_the_hook_with_capture_off_then_plur_ingest_of_the_transcript(tmp_path: Path) -> None:
    """Claude Code with PLUR_CAPTURE=off: the hook stores nothing; a later `plur ingest` of the session's
    transcript (with capture back on) does not store that prompt either, and stores the others."""
    from test_doors import _env

    work = tmp_path / "work" / "shop"
    (work / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    env = _env(home, PLUR_CAPTURE="off", PLUR_MODEL="none")
    assert subprocess.run([sys.executable, "-m", "plur", "init"], env=env, capture_output=True,
                          timeout=120).returncode == 0
    private = "My therapist appointment moved to Tuesday at four."
    proc = subprocess.run([sys.executable, "-m", "plur", "hook", "claude-code"], env=env, timeout=300,
                          input=json.dumps({"session_id": "cc-7", "cwd": str(work), "hook_event_name": "UserPromptSubmit",
                                            "prompt": private}), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    transcript = tmp_path / "cc-7.jsonl"
    transcript.write_text("".join(json.dumps({"type": "user", "sessionId": "cc-7", "cwd": str(work),
                                              "timestamp": f"2026-12-07T10:0{i}:00Z",
                                              "message": {"role": "user", "content": text}}) + "\n"
                                  for i, text in enumerate(["We use pnpm in this repository.", private])))
    on = {**env, "PLUR_CAPTURE": "user"}
    got = subprocess.run([sys.executable, "-m", "plur", "ingest", str(transcript), "--json"], env=on, timeout=300,
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    assert len(report["added"]) == 1 and report["left_out"] == {"off": 1}
    with Memory(home, model="none") as m:
        assert [e.statement for e in m.list()] == ["We use pnpm in this repository."]
