"""The real Claude Code CLI (`claude -p`, tests/clients): a compound question asked again keeps both answers
(issue 46 A, E).

The hooks registered as docs/hosts/claude-code.md says (SessionStart and UserPromptSubmit in ~/.claude/settings.json,
the plur command by its absolute path, capture at its default). In a fresh git repository, session 1 says two facts
without asking to remember either. Session 2 asks one question about both; a new session 3 asks it again, and once
more in a second turn. What reached the model: the block of each asking carries both notes (their ids: the
overview's lines carry none), the question is never a note nor in any block.

Fails on a plur that captures the question (main at c12f21c): stored, the question took part in scoring (BM25's
statistics, the fusion's scaling, the floor), the deploy note fell under the floor and session 3's block lacked it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from test_clients_personal import _claude, _env  # the real claude -p as the docs register it, capture on

from plur.service import daemon
from service_env import start_service

FACTS = ("We deploy the billing service from the branch release-candidate.",
         "The web package's dev server listens on port 5173.")
ASKED = "Which port does the web dev server listen on, and which branch do we deploy from?"
#: Said after the question in session 2: once it is stored, the capture thread (one, in order) has seen the question.
MARK = "My cat Tofu sleeps on the radiator."
BLOCK = re.compile(r"<plur-memory>.*?</plur-memory>", re.S)
WAIT_S = 120.0


def _notes(home: Path) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "plur", "list", "--json"], env=_env(home), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    return rows.get("engrams", rows) if isinstance(rows, dict) else rows


def _wait_for(home: Path, statements: set[str]) -> dict[str, dict]:
    """The notes once every one of ``statements`` is stored (capture runs on the service's thread), else the deadline."""
    deadline = time.monotonic() + WAIT_S
    while True:
        got = {r["statement"]: r for r in _notes(home)}
        if statements <= set(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def _settled(home: Path) -> None:
    """Wait until the service has embedded what capture stored (its dense catch-up), so every asking below is
    answered by the hybrid recall, not by BM25 for the newest notes (an event, with a generous deadline)."""
    from plur.service import autostart

    client = autostart.wait(home, WAIT_S)
    assert client is not None, "the service does not answer"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            client.recall("warm up the model", 1)          # a recall embeds what is queued
            index = client.status().get("index") or {}
            if not (index.get("catching_up") or index.get("pending_dense")) or time.monotonic() > deadline:
                return
            time.sleep(0.2)
    finally:
        client.close()


def _asking(rec, home: Path, scratch: Path, cwd: Path, *session: str) -> str:
    """One ``claude -p`` turn asking :data:`ASKED`; the text of its first model request (the agent's, with tools)."""
    before = len(rec.requests)
    _claude(home, scratch, cwd, rec.url, ASKED, *session)
    firsts = [i for i in range(before, len(rec.requests))
              if rec.requests[i]["body"].get("tools") and ASKED in rec.messages_text(i)]
    assert firsts, "no model request carried the question"
    return rec.messages_text(firsts[0])


def test_a_compound_question_asked_again_keeps_both_answers_in_the_block(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from anthropic_recorder import Recorder

    monkeypatch.delenv("PLUR_CAPTURE", raising=False)
    home, scratch, repo = tmp_path / "home", tmp_path / "claude-home", tmp_path / "work" / "shop"
    (repo / ".git").mkdir(parents=True)
    (scratch / ".claude").mkdir(parents=True)
    # docs/hosts/claude-code.md: both events, the plur command by its absolute path, timeout 30, for every project
    hook = [{"hooks": [{"type": "command", "command": f"{sys.executable} -m plur hook claude-code", "timeout": 30}]}]
    (scratch / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": hook,
                                                                              "SessionStart": hook}}))
    env = _env(home)
    assert subprocess.run([sys.executable, "-m", "plur", "init"], env=env, capture_output=True,
                          timeout=120).returncode == 0
    start_service(home, env)
    try:
        with Recorder() as rec:
            s1 = str(uuid.uuid4())
            _claude(home, scratch, repo, rec.url, FACTS[0], "--session-id", s1)
            _claude(home, scratch, repo, rec.url, FACTS[1], "--resume", s1)
            got = _wait_for(home, set(FACTS))
            assert {s: got[s]["scope"] for s in FACTS if s in got} == {s: "project:shop" for s in FACTS}, got
            ids = {got[s]["id"] for s in FACTS}
            _settled(home)

            def check(text: str, where: str) -> None:
                blocks = BLOCK.findall(text)
                assert ids <= set(re.findall(r"ENG-[\w-]+", " ".join(blocks))), (where, blocks)
                assert not any("which branch do we deploy from" in b.lower() for b in blocks), (where, blocks)

            s2 = str(uuid.uuid4())
            check(_asking(rec, home, scratch, repo, "--session-id", s2), "session 2")
            _claude(home, scratch, repo, rec.url, MARK, "--resume", s2)
            got = _wait_for(home, {MARK})
            assert MARK in got, sorted(got)
            assert ASKED not in got, "the question was stored as a note"        # issue 46 A
            _settled(home)

            s3 = str(uuid.uuid4())
            check(_asking(rec, home, scratch, repo, "--session-id", s3), "session 3, asked again")
            check(_asking(rec, home, scratch, repo, "--resume", s3), "session 3, its second turn")
            assert ASKED not in {r["statement"] for r in _notes(home)}
    finally:
        daemon.stop(home)
