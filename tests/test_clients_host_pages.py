"""Every host page's config, run as a user runs it (issue 48): registered from a shell where ``plur`` works (the
virtualenv on ``PATH``), then used by the real client with a ``PATH`` that lacks the virtualenv, as Claude Code,
Codex and desktop MCP clients run their hooks and servers. The pages put a bare ``plur`` into those configs:
``command not found``, and ``claude -p`` ran with no memory and no sign.

The blocks run are the ``bash`` blocks a page marks with ``<!-- host-config: NAME -->``, verbatim. The clients
are the pinned ones of tests/clients (Claude Code against tests/clients/anthropic_recorder.py, Codex against
tests/fake_llm.py, the MCP Inspector CLI); nothing reaches the internet.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_clients import NODE, NODE_MODULES
from test_doors import FACTS, serve_seeded

ROOT = Path(__file__).resolve().parents[1]
HOST_PAGES = sorted((ROOT / "docs" / "hosts").glob("*.md"))
MARKED = re.compile(r"^<!-- host-config: (?P<name>[\w-]+) -->\n```bash\n(?P<code>.*?)^```$", re.S | re.M)
VENV_BIN = ROOT / ".venv" / "bin"
#: What a client's PATH holds: Node for the clients, the system; not the virtualenv plur lives in.
CLIENT_PATH = os.pathsep.join([str(NODE.parent), str(NODE_MODULES / ".bin"), "/usr/bin", "/bin"])
QUESTION, ANSWER = FACTS[0][1], "Rex"


def snippets() -> dict[str, str]:
    out = {}
    for page in HOST_PAGES:
        for m in MARKED.finditer(page.read_text(encoding="utf-8")):
            out[m["name"]] = m["code"]
    return out


def test_the_host_pages_mark_their_configs() -> None:
    assert set(snippets()) == {"claude-code", "codex", "mcp"}


#: A bare `plur` as the command another program runs (JSON "command", `-- plur ...` after an `mcp add`).
BARE = re.compile(r'"command":\s*"plur[ "]|--\s+plur\s|"command":\s*"plur hook')


def test_no_page_puts_a_bare_plur_into_another_programs_config() -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for lineno, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            assert not BARE.search(line), f"{page.relative_to(ROOT)}:{lineno}: {line.strip()}"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    if not (VENV_BIN / "plur").exists():
        pytest.skip("no .venv/bin/plur in the checkout (scripts/setup makes it)")
    yield from serve_seeded(tmp_path_factory.mktemp("host-pages") / "home")


def user_env(home: Path, scratch: Path, path: str, **extra: str) -> dict[str, str]:
    """The environment of the user's own shell (``path``: with or without the virtualenv)."""
    env = {"HOME": str(scratch), "LANG": "C.UTF-8", "PATH": path, "PLUR_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "PLUR_MODEL": "sentence-transformers/all-MiniLM-L6-v2", "PLUR_AUTOSTART_SERVICE": "0",
           "PLUR_CAPTURE": "off", "PYTHONPATH": str(ROOT), **extra}
    return env


def register(name: str, home: Path, scratch: Path) -> None:
    """Run the page's block in the user's shell: the virtualenv and the clients on PATH."""
    path = os.pathsep.join([str(VENV_BIN), CLIENT_PATH])
    r = subprocess.run(["bash", "-e", "-c", snippets()[name]], cwd=scratch, env=user_env(home, scratch, path),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def recall_through_mcp(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The fake model: load plur's recall tool through ToolSearch, call it once, then answer."""
    names = [t.get("name") for t in body.get("tools", [])]
    if "ToolSearch" not in names:
        return None
    sent = json.dumps(body.get("messages", []))
    if "toolu_recall_1" in sent:
        return [{"type": "text", "text": "Your dog is called Rex."}]
    if "mcp__plur__recall" in names:
        return [{"type": "tool_use", "id": "toolu_recall_1", "name": "mcp__plur__recall", "input": {"query": "dog"}}]
    return [{"type": "tool_use", "id": "toolu_search_1", "name": "ToolSearch",
             "input": {"query": "select:mcp__plur__recall"}}]


def tool_result(body: dict[str, Any], tool_id: str) -> dict[str, Any]:
    for message in body.get("messages", []):
        for block in message.get("content", []) if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_id:
                return block
    raise AssertionError(f"no tool_result for {tool_id}")


def test_the_claude_code_page_gives_claude_memory_outside_the_venv(seeded: tuple[Path, dict[str, str]],
                                                                   tmp_path: Path) -> None:
    from anthropic_recorder import Recorder

    home, ids = seeded
    scratch, project = tmp_path / "you", tmp_path / "project"
    scratch.mkdir()
    (project / ".git").mkdir(parents=True)
    register("claude-code", home, scratch)
    config = json.loads((scratch / ".claude.json").read_text())
    server = config["mcpServers"]["plur"]                        # -s user: in the user's config, every project
    assert os.path.isabs(server["command"]) and server["args"] == ["mcp"], server
    with Recorder(script=recall_through_mcp) as rec:
        env = user_env(home, scratch, CLIENT_PATH, ANTHROPIC_BASE_URL=rec.url, ANTHROPIC_API_KEY="sk-local-test",
                       CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        proc = subprocess.run([str(NODE_MODULES / ".bin" / "claude"), "-p", QUESTION, "--allowedTools", "mcp__plur"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        first = json.dumps(rec.requests[0]["body"].get("messages", []))
        assert ids[FACTS[0][0]] in first, first[-3000:]              # the hook: memory before the model's first word
        result = tool_result(rec.requests[-1]["body"], "toolu_recall_1")
    assert not result.get("is_error") and ANSWER in json.dumps(result), result   # the tool, as Claude Code names it
    assert "Your dog is called Rex." in proc.stdout


def test_the_codex_page_gives_codex_memory_outside_the_venv(seeded: tuple[Path, dict[str, str]],
                                                            tmp_path: Path) -> None:
    from fake_llm import FakeLLM

    codex = NODE_MODULES / ".bin" / "codex"
    if not codex.exists():
        pytest.skip("the pinned Codex CLI is not installed (cd tests/clients && npm ci)")
    home, ids = seeded
    scratch, project = tmp_path / "you", tmp_path / "project"
    (scratch / ".codex").mkdir(parents=True)
    (project / ".git").mkdir(parents=True)
    with FakeLLM() as fake:
        (scratch / ".codex" / "config.toml").write_text(      # the user's model account: here the recording fake
            'model = "gpt-5"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "{fake.url}/v1"\nwire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n')
        register("codex", home, scratch)
        server = tomllib.loads((scratch / ".codex" / "config.toml").read_text())["mcp_servers"]["plur"]
        assert os.path.isabs(server["command"]) and server["args"] == ["mcp"], server
        env = user_env(home, scratch, CLIENT_PATH, CODEX_HOME=str(scratch / ".codex"), OPENAI_API_KEY="sk-local-test")
        proc = subprocess.run([str(codex), "exec", "--enable", "hooks", "--dangerously-bypass-hook-trust",
                               "--skip-git-repo-check", QUESTION], cwd=project, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        asked = [json.dumps(r["body"]) for r in fake.requests if r["path"].endswith("/responses")
                 and QUESTION in json.dumps(r["body"])]
    assert asked and ids[FACTS[0][0]] in asked[0], asked[:1]


def test_the_mcp_page_gives_a_desktop_client_memory_outside_the_venv(seeded: tuple[Path, dict[str, str]],
                                                                      tmp_path: Path) -> None:
    """A desktop client starts the server with a minimal environment (the SDK's: HOME, PATH, USER, ...) and
    its own PATH: the MCP Inspector CLI reads the entry `--install` wrote, as Cursor reads ~/.cursor/mcp.json."""
    home, ids = seeded
    scratch = tmp_path / "you"
    scratch.mkdir()
    register("mcp", home, scratch)
    entry = json.loads((scratch / ".cursor" / "mcp.json").read_text())["mcpServers"]["plur"]
    assert os.path.isabs(entry["command"]) and entry["args"] == ["--home", str(home), "mcp"], entry
    env = {"HOME": str(scratch), "PATH": CLIENT_PATH, "LANG": "C.UTF-8"}
    proc = subprocess.run([str(NODE_MODULES / ".bin" / "mcp-inspector"), "--cli", "--config",
                           str(scratch / ".cursor" / "mcp.json"), "--server", "plur", "--method", "tools/call",
                           "--tool-name", "recall", "--tool-arg", "query=dog"], cwd=scratch, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = json.loads(proc.stdout)
    assert not got["isError"] and got["structuredContent"]["hits"][0]["engram"]["id"] == ids[FACTS[0][0]], got
