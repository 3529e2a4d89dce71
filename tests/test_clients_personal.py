"""The real Claude Code CLI (`claude -p`, tests/clients): a fact about the user follows the user (issue 46 D).

Session 1 in repository alpha says a fact about the user and one about alpha's code, without asking to remember
either (capture at its default, the hooks as docs/hosts/claude-code.md registers them). A new session in
repository beta: its first model request carries the user's fact, never alpha's code fact; a new session in alpha
still gets alpha's. Fails on a plur that captures every turn into the conversation's project (the user's fact is
absent in beta).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from test_clients_capture import _claude  # the real claude -p, HOME and model server per test
from test_doors import _env as _env_off

from plur.service import daemon
from service_env import start_service

REPO = Path(__file__).resolve().parents[1]
PERSONAL = ("My daughter Mira has violin lessons every Thursday.", "When does Mira have violin lessons?", "Thursday")
PROJECT = ("The web package's dev server listens on port 5173.", "Which port does the web dev server listen on?",
           "5173")
WAIT_S = 120.0


def _env(home: Path) -> dict[str, str]:
    env = _env_off(home)
    env.pop("PLUR_CAPTURE", None)                   # capture at its default (user)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return env


def _captured(home: Path, session: str) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-m", "plur", "list", "--json"], env=_env(home), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    rows = rows.get("engrams", rows) if isinstance(rows, dict) else rows
    return {r["statement"]: r["scope"] for r in rows if (r.get("source") or {}).get("session") == session}


def _first_request(rec, home: Path, scratch: Path, cwd: Path, question: str) -> str:
    before = len(rec.requests)
    _claude(home, scratch, cwd, rec.url, question, "--session-id", str(uuid.uuid4()))
    firsts = [i for i in range(before, len(rec.requests))
              if question in rec.messages_text(i) and rec.requests[i]["body"].get("tools")]
    assert firsts, f"no model request carried {question!r}"
    return rec.messages_text(firsts[0])


def test_a_personal_fact_said_in_one_repository_is_in_anothers_first_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from anthropic_recorder import Recorder

    monkeypatch.delenv("PLUR_CAPTURE", raising=False)
    home, scratch, work = tmp_path / "home", tmp_path / "claude-home", tmp_path / "work"
    alpha, beta = work / "alpha", work / "beta"
    for repo in (alpha, beta):
        (repo / ".git").mkdir(parents=True)
    (scratch / ".claude").mkdir(parents=True)
    hook = {"hooks": [{"type": "command", "command": f"{sys.executable} -m plur hook claude-code", "timeout": 60}]}
    (scratch / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [hook],
                                                                              "SessionStart": [hook]}}))
    env = _env(home)
    assert subprocess.run([sys.executable, "-m", "plur", "init"], env=env, capture_output=True,
                          timeout=120).returncode == 0
    start_service(home, env)
    try:
        with Recorder() as rec:
            s1 = str(uuid.uuid4())
            _claude(home, scratch, alpha, rec.url, PERSONAL[0], "--session-id", s1)
            _claude(home, scratch, alpha, rec.url, PROJECT[0], "--resume", s1)
            deadline = time.monotonic() + WAIT_S            # capture runs on the service's thread: wait for it
            while len(got := _captured(home, s1)) < 2 and time.monotonic() < deadline:
                time.sleep(0.5)
            assert got == {PERSONAL[0]: "global", PROJECT[0]: "project:alpha"}, got

            text = _first_request(rec, home, scratch, beta, PERSONAL[1])
            assert PERSONAL[0] in text, text[-3000:]                        # follows the user to beta
            text = _first_request(rec, home, scratch, beta, PROJECT[1])
            assert PROJECT[2] not in text, text[-3000:]                     # alpha's code stays in alpha
            text = _first_request(rec, home, scratch, alpha, PROJECT[1])
            assert PROJECT[0] in text, text[-3000:]
    finally:
        daemon.stop(home)
