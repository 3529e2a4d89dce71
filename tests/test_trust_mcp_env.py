"""Issue 38: ``plur mcp`` started by an MCP client gets a minimal environment (the SDKs pass HOME, PATH, USER,
SHELL, TERM, LOGNAME), so the user's PLUR_HOME is dropped. It must say which home serves, and a read must
never create that home (before: an empty ``~/.plur`` was created and served silently)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


class Stdio:
    """A JSON-RPC session over a real ``plur mcp`` process's stdio (newline-delimited, as MCP's stdio is)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "plur", "mcp"], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.ask({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "0"}}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: object) -> None:
        self.proc.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        self.proc.stdin.flush()

    def ask(self, message: object) -> dict:
        self.send(message)
        return json.loads(self.proc.stdout.readline())

    def tool(self, name: str, **args: object) -> dict:
        got = self.ask({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}})
        return got["result"]

    def close(self) -> str:
        self.proc.stdin.close()
        self.proc.wait(timeout=120)
        return self.proc.stderr.read()


def minimal_env(home: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "USER", "SHELL", "TERM", "LOGNAME") if k in os.environ}
    env.update(HOME=str(home), HF_HUB_OFFLINE="1", PLUR_MODEL="none")
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]   # this checkout (the suite's own runs set it)
    return env


def test_plur_mcp_with_a_minimal_env_names_its_home_and_reads_never_create_it(tmp_path: Path) -> None:
    user_home = tmp_path / "user"
    user_home.mkdir()
    session = Stdio(minimal_env(user_home))
    listed = session.tool("list")
    recalled = session.tool("recall", query="what is my dog called")
    status = session.tool("status")
    stderr = session.close()
    plur_home = user_home / ".plur"
    assert not plur_home.exists(), sorted(p.name for p in plur_home.rglob("*"))      # reads created nothing
    assert f"plur mcp: memory at {plur_home}" in stderr and "PLUR_HOME is not set" in stderr, stderr
    assert listed["structuredContent"]["engrams"] == [] and not listed["isError"]
    assert recalled["structuredContent"]["hits"] == []
    assert f"no plur memory at {plur_home}" in recalled["structuredContent"]["note"]
    assert "PLUR_HOME" in status["structuredContent"]["note"] and status["structuredContent"]["engrams"] == 0
    session = Stdio(minimal_env(user_home))                                             # a write creates it
    learned = session.tool("learn", statement="The user's dog is called Rex.")
    assert not learned["isError"], learned
    again = session.tool("recall", query="dog called Rex", mode="bm25")
    session.close()
    assert plur_home.is_dir() and [h["engram"]["statement"] for h in again["structuredContent"]["hits"]] == \
        ["The user's dog is called Rex."]
    subprocess.run([sys.executable, "-m", "plur", "service", "stop"], env=minimal_env(user_home),
                   capture_output=True, timeout=120)   # one may have been started for the new home


def test_malformed_json_rpc_on_stdio_is_answered_with_its_error_code(plur_home: Path) -> None:
    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": "none", "HF_HUB_OFFLINE": "1"}
    session = Stdio(env)
    cases = [("garbage", None, -32700), ("[1,2,3]", None, -32600), ("42", None, -32600),
             ('{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', None, -32600),
             ('{"jsonrpc": "1.0", "id": 5, "method": "tools/list"}', 5, -32600),
             ('{"jsonrpc": "2.0", "id": 7}', 7, -32600), ('{"jsonrpc": "2.0", "id": "x", "method": 3}', "x", -32600)]
    for line, ident, code in cases:
        got = session.ask(line)
        assert got["jsonrpc"] == "2.0" and got["id"] == ident and got["error"]["code"] == code, (line, got)
    listed = session.ask({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})           # still serving
    assert listed["id"] == 9 and any(t["name"] == "recall" for t in listed["result"]["tools"])
    session.close()
