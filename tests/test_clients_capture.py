"""The real Claude Code CLI (`claude -p`, tests/clients): memory forms from the conversation by itself.

Session 1 (one conversation, four turns, `--resume`) mentions four facts without asking to remember
anything, one of them with an API key in the same sentence. Session 2, new `claude -p` processes, asks about
each: the first model request of each carries the right fact. The key is nowhere under the plur home (every
file read as bytes, stats.db and service.log included), and the skip is counted (plur doctor). Fails on a plur
without capture (no fact in any block) or without the screen (the key in engrams/ and stats.db).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from test_clients import NODE_MODULES, _node_env
from test_doors import _env as _env_off

from plur.service import daemon
from service_env import start_service


def _env(home: Path) -> dict[str, str]:
    """A plur process's environment with the setting capture at its default (user)."""
    env = _env_off(home)
    env.pop("PLUR_CAPTURE", None)
    return env

KEY = "gh" + "p_" + "Q7f3K9x2LmZ8aB4cD6eF1gH5jK0pR2sT9vW3"
FACTS = [
    ("My sister Lena moved to Vienna last spring.", "Where does my sister live now?", "Vienna"),
    (f"Our staging database runs on host blue-heron-7, and its admin token is {KEY} for now.",
     "Which host runs the staging database?", "blue-heron-7"),
    ("I'm allergic to peanuts, so keep them out of any recipe you suggest.", "What am I allergic to?", "peanuts"),
    ("The quarterly board report is due on March 14.", "When is the quarterly board report due?", "March 14"),
]
WAIT_S = 120.0


def _claude(home: Path, scratch: Path, cwd: Path, url: str, prompt: str, *session: str) -> None:
    env = {**_node_env(home), "HOME": str(scratch), "ANTHROPIC_BASE_URL": url,
           "ANTHROPIC_API_KEY": "sk-local-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    env.pop("PLUR_CAPTURE", None)
    proc = subprocess.run([str(NODE_MODULES / ".bin" / "claude"), "-p", prompt, *session], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _captured(home: Path, session: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "plur", "list", "--json"], env=_env(home), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    rows = rows.get("engrams", rows) if isinstance(rows, dict) else rows
    return [r["statement"] for r in rows if (r.get("source") or {}).get("session") == session]


def test_claude_code_forms_memory_from_the_conversation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from anthropic_recorder import Recorder

    monkeypatch.delenv("PLUR_CAPTURE", raising=False)      # the default setting: capture = user
    home, scratch, work = tmp_path / "home", tmp_path / "claude-home", tmp_path / "work" / "shop"
    (work / ".git").mkdir(parents=True)
    (scratch / ".claude").mkdir(parents=True)
    hook = {"hooks": [{"type": "command", "command": f"{sys.executable} -m plur hook claude-code", "timeout": 60}]}
    (scratch / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [hook]}}))
    env = _env(home)
    assert subprocess.run([sys.executable, "-m", "plur", "init"], env=env, capture_output=True,
                          timeout=120).returncode == 0
    start_service(home, env)
    try:
        with Recorder() as rec:
            s1 = str(uuid.uuid4())
            for i, (fact, _, _) in enumerate(FACTS):
                _claude(home, scratch, work, rec.url, fact, *(["--session-id", s1] if i == 0 else ["--resume", s1]))
            deadline = time.monotonic() + WAIT_S            # capture runs on the service's thread: wait for it
            while len(got := _captured(home, s1)) < len(FACTS) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert len(got) == len(FACTS), got
            assert any("blue-heron-7" in s and "[redacted github-token]" in s for s in got), got

            for _, question, answer in FACTS:
                before = len(rec.requests)
                _claude(home, scratch, work, rec.url, question, "--session-id", str(uuid.uuid4()))
                firsts = [i for i in range(before, len(rec.requests))
                          if question in rec.messages_text(i) and rec.requests[i]["body"].get("tools")]
                assert firsts, f"no model request carried {question!r}"
                text = rec.messages_text(firsts[0])
                assert answer in text, (question, text[-2000:])
    finally:
        daemon.stop(home)
    hits = [str(p) for p in home.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert hits == []
    grep = subprocess.run(["grep", "-rl", KEY, str(home)], capture_output=True, text=True)
    assert grep.stdout == ""
    doctor = subprocess.run([sys.executable, "-m", "plur", "doctor", "--json", "--no-model"], env=env,
                            capture_output=True, text=True, timeout=300)
    assert json.loads(doctor.stdout)["secrets_redacted"].get("github-token", 0) >= 1, doctor.stdout
