"""The real Claude Code CLI (`claude -p`, pinned in tests/clients) writing its memory folder, linked to plur with
`plur link claude-code` while the service runs: what Claude writes is recalled by `plur recall`, and what plur
learns into the project's scope appears in the folder's MEMORY.md. The model is the recording fake endpoint,
whose reply calls Claude Code's Write tool."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plur.service import daemon
from service_env import start_service
from test_clients import NODE_MODULES, _node_env

sys.path.insert(0, str(Path(__file__).resolve().parent / "clients"))
MEMORY_FILE = "user_sister_vienna.md"
MEMORY_TEXT = ("---\nname: Sister in Vienna\ndescription: where the user's sister lives\ntype: user\n---\n\n"
               "The user's sister Lena moved to Vienna in March.\n")


def wait_for(what: str, check: Callable[[], Any], deadline_s: float = 180.0) -> Any:
    """``check()``'s first truthy value; fail naming ``what`` after a generous deadline (an event, not a delay)."""
    end = time.monotonic() + deadline_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def plur(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "plur", *args], capture_output=True, text=True, env=env, timeout=300)


def writer(folder: Path) -> Callable[[dict[str, Any]], list[dict[str, Any]] | None]:
    """The fake model: in the session's main request (the one offering Write) call Write once, then answer."""
    def script(body: dict[str, Any]) -> list[dict[str, Any]] | None:
        if not any(t.get("name") == "Write" for t in body.get("tools", [])):
            return None
        sent = json.dumps(body.get("messages", []))
        if '"tool_result"' in sent:
            return [{"type": "text", "text": "Saved to memory."}]
        return [{"type": "tool_use", "id": "toolu_write_1", "name": "Write",
                 "input": {"file_path": str(folder / MEMORY_FILE), "content": MEMORY_TEXT}}]
    return script


def test_claude_code_writes_a_memory_file_plur_recalls_it_and_plur_learn_appears_in_memory_md(
        plur_home: Path, tmp_path: Path) -> None:
    from anthropic_recorder import Recorder

    project = tmp_path / "shop"
    project.mkdir()
    scratch = tmp_path / "claude-home"
    scratch.mkdir()
    env = {**_node_env(plur_home), "HOME": str(scratch), "CLAUDE_CONFIG_DIR": str(scratch / ".claude")}
    linked = plur(env, "link", "claude-code", str(project), "--json")
    assert linked.returncode == 0, linked.stderr
    link = json.loads(linked.stdout)
    folder, scope = Path(link["folder"]), link["scope"]
    assert folder.is_dir() and scope.startswith("project:")
    start_service(plur_home, env)
    try:
        with Recorder(script=writer(folder)) as rec:
            proc = subprocess.run([str(NODE_MODULES / ".bin" / "claude"), "-p", "Remember that my sister Lena "
                                   "moved to Vienna.", "--permission-mode", "acceptEdits", "--add-dir", str(folder)],
                                  cwd=project, capture_output=True, text=True, timeout=300,
                                  env={**env, "ANTHROPIC_BASE_URL": rec.url, "ANTHROPIC_API_KEY": "sk-local-test",
                                       "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        written = (folder / MEMORY_FILE).read_text()   # Claude Code's Write tool wrote it (Claude Code then files
        assert "Lena moved to Vienna in March." in written      # the type under metadata: and adds modified)

        def recalled() -> Any:
            r = plur(env, "recall", "where does my sister live?", "--scope", scope, "--json")
            hits = json.loads(r.stdout) if r.returncode == 0 else []
            return [h for h in hits if "Vienna" in h["engram"]["statement"]]

        hit = wait_for("the memory file to be recallable", recalled)[0]["engram"]
        assert hit["scope"] == scope and hit["type"] == "user" and hit["source"]["file"] == MEMORY_FILE

        learned = plur(env, "learn", "Checkout deploys go through Argo CD.", "--scope", scope, "--type", "project")
        assert learned.returncode == 0, learned.stderr
        index = folder / "MEMORY.md"
        line = wait_for("the learned engram in MEMORY.md", lambda: index.is_file() and next(
            (x for x in index.read_text().splitlines() if "Argo CD" in x), None))
        name = line.split("](", 1)[1].split(")", 1)[0]
        assert "Checkout deploys go through Argo CD." in (folder / name).read_text()
    finally:
        daemon.stop(plur_home)
