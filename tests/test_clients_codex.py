"""The real Codex CLI (`codex exec`, @openai/codex pinned in tests/clients) with plur's hook: memory forms from
the conversation, under the project of the folder Codex runs in.

Codex runs command hooks in Claude Code's shape behind its feature ``hooks`` (docs/hosts/codex.md), so
``plur hook claude-code`` serves it unchanged. Codex runs a hook only once trusted in its terminal UI;
``--dangerously-bypass-hook-trust`` (for automation, this invocation only) stands in for that answer here.
The model is tests/fake_llm.py's Responses API (a ``model_providers`` entry in Codex's config.toml), which
records every request; nothing reaches the internet.

Session 1 (in a repository ``shop``) states two facts without asking to remember them, one beside an API key.
Session 2, a new ``codex exec`` in a sub-folder of the same repository, asks about each: its first model
request carries the fact. A session in another repository (``garden``) is not given them. The key is
nowhere in the plur home. Fails on a plur without capture (no fact stored, none in any request).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLM
from test_clients import NODE_MODULES, _node_env

from plur.service import daemon
from service_env import start_service

CODEX = NODE_MODULES / ".bin" / "codex"
if not CODEX.exists():
    if os.environ.get("PLUR_REQUIRE_CLIENTS") == "1":
        raise RuntimeError("tests/clients/node_modules has no codex: run `npm ci` in tests/clients (scripts/test does)")
    pytest.skip("the pinned Codex CLI is not installed (cd tests/clients && npm ci)", allow_module_level=True)

KEY = "gh" + "p_" + "W4n8Kq2ZxT7bL9mR3vC6dF1hJ5sP0aY8eU2i"     # made at run time, never a real key
FACTS = [
    ("My sister Lena moved to Vienna last spring.", "Where does my sister live now?", "Vienna"),
    (f"Our staging database runs on host blue-heron-7, and its admin token is {KEY} for now.",
     "Which host runs the staging database?", "blue-heron-7"),
]
WAIT_S = 120.0


def _codex(home: Path, scratch: Path, cwd: Path, prompt: str) -> None:
    env = {**_node_env(home), "HOME": str(scratch), "CODEX_HOME": str(scratch / ".codex"),
           "OPENAI_API_KEY": "sk-local-test"}
    env.pop("PLUR_CAPTURE", None)           # the default setting: capture = user
    proc = subprocess.run([str(CODEX), "exec", "--enable", "hooks", "--dangerously-bypass-hook-trust",
                           "--skip-git-repo-check", prompt], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _text(body: Any) -> str:
    return json.dumps(body, ensure_ascii=False)


def _first_request(fake: FakeLLM, since: int, question: str) -> str:
    for req in fake.requests[since:]:
        if req["path"].endswith("/responses") and question in _text(req["body"]):
            return _text(req["body"])
    raise AssertionError(f"no model request carried {question!r}")


def _captured(home: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "plur", "list", "--json"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    return [r for r in (rows.get("engrams", rows) if isinstance(rows, dict) else rows)
            if (r.get("source") or {}).get("format") == "capture"]


def test_codex_forms_memory_in_the_project_of_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLUR_CAPTURE", raising=False)
    home, scratch = tmp_path / "home", tmp_path / "codex-home"
    shop, garden = tmp_path / "work" / "shop", tmp_path / "work" / "garden"
    for repo in (shop, garden):
        (repo / ".git").mkdir(parents=True)
    (shop / "src").mkdir()
    env = _node_env(home)
    env.pop("PLUR_CAPTURE", None)
    assert subprocess.run([sys.executable, "-m", "plur", "init"], env=env, capture_output=True,
                          timeout=120).returncode == 0
    start_service(home, env)
    try:
        with FakeLLM() as fake:
            (scratch / ".codex").mkdir(parents=True)
            (scratch / ".codex" / "config.toml").write_text(
                'model = "gpt-5"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
                f'base_url = "{fake.url}/v1"\nwire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n')
            hook = [{"hooks": [{"type": "command", "command": f"{sys.executable} -m plur hook claude-code",
                                "timeout": 60}]}]
            (scratch / ".codex" / "hooks.json").write_text(json.dumps(
                {"hooks": {"SessionStart": hook, "UserPromptSubmit": hook}}))
            for fact, _, _ in FACTS:
                _codex(home, scratch, shop, fact)
            deadline = time.monotonic() + WAIT_S    # capture runs on the service's capture thread: wait for it
            while len(got := _captured(home, env)) < len(FACTS) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert len(got) == len(FACTS), got
            # a fact about the user follows the user (global, route_personal); a fact about the code stays in its project
            assert {r["statement"][:9]: r["scope"] for r in got} == {"My sister": "global", "Our stagi": "project:shop"}, got
            assert any("blue-heron-7" in r["statement"] and "[redacted github-token]" in r["statement"]
                       for r in got), got

            for n, (_, question, answer) in enumerate(FACTS):
                before = len(fake.requests)
                _codex(home, scratch, shop / "src", question)
                assert answer in _first_request(fake, before, question), question
                before = len(fake.requests)
                _codex(home, scratch, garden, question)           # another project: the user's facts, not shop's
                assert (answer in _first_request(fake, before, question)) == (n == 0), question
    finally:
        daemon.stop(home)
    grep = subprocess.run(["grep", "-rl", KEY, str(home)], capture_output=True, text=True)
    assert grep.stdout == ""
