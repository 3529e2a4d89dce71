"""Issue 38: a forked Codex session (``codex exec fork ID``, the real Codex CLI pinned in tests/clients) does not
get again the notes its forked history already holds.

Codex 0.171.0 gives the fork a new session id; its ``SessionStart`` says ``source: "fork"`` and its
``transcript_path`` is a new rollout whose first line (``session_meta``) names the history it continues
(``history_base``: the parent's thread id and byte offset) instead of copying it. The model is
tests/fake_llm.py's Responses API, which records every request.

Session 1 asks about the dog: its first request carries the dog note. A fork of it asks about the dog and the
staging cluster: its first request holds the dog note once (the forked history's) and the cluster note (not
shown before), while a new session with the fork's prompt gets both. Fails on a hook that reads a new session id as a new conversation (the dog note twice).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fake_llm import FakeLLM
from test_clients import _node_env
from test_clients_codex import CODEX

from plur.memory import Memory

FIRST, FORKED = "what is my dog called?", "and what is my dog called again? which cluster is staging?"


def _env(home: Path, scratch: Path) -> dict[str, str]:
    return {**_node_env(home), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "false", "PLUR_CAPTURE": "off",
            "HOME": str(scratch), "CODEX_HOME": str(scratch / ".codex"), "OPENAI_API_KEY": "sk-local-test"}


def _codex(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run([str(CODEX), "exec", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _first_request(fake: FakeLLM, since: int, prompt: str) -> str:
    for req in fake.requests[since:]:
        text = json.dumps(req["body"], ensure_ascii=False)
        if req["path"].endswith("/responses") and prompt in text:
            return text
    raise AssertionError(f"no model request carried {prompt!r}")


def test_a_forked_codex_session_does_not_reinject_its_history(plur_home: Path, tmp_path: Path) -> None:
    with Memory(plur_home, model="none") as mem:
        dog = mem.learn("The user's dog is called Rex.", scope="global").id
        cluster = mem.learn("The staging cluster is named kestrel.", scope="global").id
    scratch, work = tmp_path / "codex-home", tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (scratch / ".codex").mkdir(parents=True)
    env = _env(plur_home, scratch)
    flags = ("--enable", "hooks", "--dangerously-bypass-hook-trust", "--skip-git-repo-check")
    with FakeLLM() as fake:
        (scratch / ".codex" / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "{fake.url}/v1"\nwire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n')
        hook = [{"hooks": [{"type": "command", "command": f"{sys.executable} -m plur hook claude-code",
                            "timeout": 60}]}]
        (scratch / ".codex" / "hooks.json").write_text(json.dumps(
            {"hooks": {"SessionStart": hook, "UserPromptSubmit": hook}}))
        out = _codex(env, work, *flags, "--json", FIRST)
        thread = next(e["thread_id"] for e in map(json.loads, filter(None, out.splitlines()))
                      if e.get("type") == "thread.started")
        assert dog in _first_request(fake, 0, FIRST)
        before = len(fake.requests)
        _codex(env, work, "fork", *flags, thread, FORKED)
        forked = _first_request(fake, before, FORKED)
        before = len(fake.requests)
        _codex(env, work, *flags, FORKED)          # a new session: its prompt does recall the dog note
        fresh = _first_request(fake, before, FORKED)
    assert forked.count(dog) == 1, forked          # the forked history's block only: not injected again
    assert cluster in forked                       # a note not shown yet still arrives
    assert dog in fresh and cluster in fresh       # a new conversation starts from nothing, as before
    rollouts = sorted((scratch / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 3 and sum(thread in r.name for r in rollouts) == 1   # the fork: a session of its own
