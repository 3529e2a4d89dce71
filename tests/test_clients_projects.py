"""The real Claude Code CLI (`claude -p`, tests/clients) in four folders: each is its own project.

One hooks snippet in the user's ~/.claude/settings.json (`plur hook claude-code`, no `--scope`), four folders
that older plur could not tell apart (a CJK-named repository, which the old basename rule filed under
`global`; a package folder nested in a monorepo; two clones both named `app`), a note learned in each with
`plur learn --scope here` from that folder. Each folder's first model request carries its own note and none of
the other three's. Fails on a plur whose hook has no project (every scope: all four notes).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from test_clients import NODE_MODULES, _node_env
from test_doors import _env

from plur.service import daemon
from service_env import start_service

QUESTION = "Which host runs the cache server?"


def _claude(home: Path, scratch: Path, cwd: Path, recorder_url: str) -> None:
    env = {**_node_env(home), "HOME": str(scratch), "ANTHROPIC_BASE_URL": recorder_url,
           "ANTHROPIC_API_KEY": "sk-local-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    proc = subprocess.run([str(NODE_MODULES / ".bin" / "claude"), "-p", QUESTION, "--session-id", str(uuid.uuid4())],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_claude_code_in_four_folders_sees_each_folders_own_project(tmp_path: Path) -> None:
    from anthropic_recorder import Recorder

    home, work, scratch = tmp_path / "home", tmp_path / "work", tmp_path / "claude-home"
    folders = {"cjk": work / "我的项目" / "源代码", "nested": work / "mono" / "packages" / "web",
               "one": work / "one" / "app", "two": work / "two" / "app"}
    for repo in (work / "我的项目", work / "mono", folders["one"], folders["two"]):
        (repo / ".git").mkdir(parents=True)
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    (scratch / ".claude").mkdir(parents=True)
    hook = {"hooks": [{"type": "command", "command": f"{sys.executable} -m plur hook claude-code", "timeout": 60}]}
    (scratch / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [hook]}}))

    env = _env(home)
    ids: dict[str, str] = {}
    for k, folder in folders.items():   # the CLI door: --scope here, from each folder (home created by the first)
        out = subprocess.run([sys.executable, "-m", "plur", "learn", f"IDENT-{k}: the cache server runs on host "
                              f"cache-{k}.", "--scope", "here", "--json"], cwd=folder, env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        ids[k] = json.loads(out.stdout)["engram"]["id"]
    scopes = {k: subprocess.run([sys.executable, "-m", "plur", "project", "which"], cwd=f, env=env,
                                capture_output=True, text=True, timeout=120).stdout.strip() for k, f in folders.items()}
    assert scopes == {"cjk": "project:我的项目", "nested": "project:mono", "one": "project:app", "two": "project:app-2"}

    start_service(home, env)
    try:
        with Recorder() as rec:
            for k, folder in folders.items():
                before = len(rec.requests)
                _claude(home, scratch, folder, rec.url)
                firsts = [i for i in range(before, len(rec.requests))
                          if QUESTION in rec.messages_text(i) and rec.requests[i]["body"].get("tools")]
                assert firsts, f"{k}: no model request carried the question"
                text = rec.messages_text(firsts[0])
                assert ids[k] in text, (k, text[-3000:])
                leaked = [o for o in ids if o != k and ids[o] in text]
                assert leaked == [], (k, leaked)
    finally:
        daemon.stop(home)
