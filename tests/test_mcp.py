"""`plur mcp` as a real server process, driven by the ``mcp`` package's own client over stdio (and HTTP).

Every test starts ``python -m plur mcp`` as a subprocess on the test's temp ``$PLUR_HOME`` and talks
MCP to it with ``mcp.Client``: tools, the engram resource, the memory prompt, tool errors that
leave the server serving, the scope pin, and a client that vanishes mid-call.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import PACKAGED_MODEL
from plur.memory import Memory

pytest.importorskip("mcp")  # extra "mcp"; scripts/setup --dev installs it, so CI runs these

ID_RE = re.compile(r"ENG-\d{4}-\d\d-\d\d-[0-9a-f]{6}")
TOOLS = {"recall", "learn", "forget", "update", "pin", "feedback", "list", "status"}


def _env(home: Path, model: str) -> dict[str, str]:
    return dict(os.environ, PLUR_HOME=str(home), PLUR_MODEL=model, HF_HUB_OFFLINE="1")


@asynccontextmanager
async def client(home: Path, *args: str, model: str = "none", cwd: Path | None = None,
                 roots: list[Path] | None = None) -> AsyncIterator[Any]:
    """A client of ``plur mcp ARGS`` started in ``cwd`` (default: a folder named ``web`` beside the home, so an
    unpinned server's project is ``project:web``); ``roots``: the folders the client offers as MCP roots."""
    from mcp import Client, StdioServerParameters
    from mcp import types

    if cwd is None:
        cwd = home.parent / "web"
        cwd.mkdir(parents=True, exist_ok=True)
    params = StdioServerParameters(command=sys.executable, args=["-m", "plur", "mcp", *args], env=_env(home, model),
                                   cwd=str(cwd))
    extra: dict[str, Any] = {}
    if roots is not None:
        async def list_roots(context: Any) -> Any:
            return types.ListRootsResult(roots=[types.Root(uri=r.resolve().as_uri(), name=r.name) for r in roots])
        extra["list_roots_callback"] = list_roots
        extra["mode"] = "legacy"  # the handshake protocol (what clients speak today): roots/list needs its back-channel
    async with Client(params, read_timeout_seconds=60, **extra) as c:
        yield c


def _data(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def _error(result: Any) -> str:
    assert result.is_error, result
    return result.content[0].text


def test_tools_resource_and_prompt_over_stdio(plur_home: Path) -> None:
    learned: list[str] = []

    async def main() -> None:
        async with client(plur_home, model=PACKAGED_MODEL) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == TOOLS
            for t in tools.values():          # written for a model: when to call it, what the arguments mean
                assert len(t.description) > 60, t.name
            assert "scope" in tools["recall"].input_schema["properties"]
            assert "global" in tools["recall"].input_schema["properties"]["scope"]["description"]

            dog = _data(await c.call_tool("learn", {"statement": "The user's dog is called Rex.", "type": "user"}))
            learned.append(dog["engram"]["id"])
            assert dog["created"] is True and ID_RE.fullmatch(dog["engram"]["id"])
            again = _data(await c.call_tool("learn", {"statement": "The user's dog is called Rex.", "type": "user"}))
            assert again["created"] is False and again["engram"]["id"] == dog["engram"]["id"]
            deploy = _data(await c.call_tool("learn", {"statement": "Deploys go through the staging cluster.",
                                                       "scope": "project:web", "tags": ["ops"]}))["engram"]
            # dense leg on (packaged model): a paraphrase with no shared keyword finds the dog
            hits = _data(await c.call_tool("recall", {"query": "what is my puppy's name?", "k": 3}))["hits"]
            assert hits[0]["engram"]["id"] == dog["engram"]["id"] and hits[0]["dense_rank"] == 1
            assert {"rank", "score", "engram"} <= set(hits[0]) and hits[0]["engram"]["created"]
            # the relevance floor's verdict reaches the model: the deploy note shares nothing with the question
            assert hits[0]["below_floor"] == "" and [h["below_floor"] != "" for h in hits[1:]] == [True]
            assert "< floor" in hits[1]["below_floor"]

            updated = _data(await c.call_tool("update", {"engram_id": deploy["id"],
                                                         "statement": "Deploys go through the canary cluster."}))
            assert updated["statement"].endswith("canary cluster.")
            assert _data(await c.call_tool("pin", {"engram_id": deploy["id"]}))["pinned"] is True
            prompt = await c.get_prompt("memory", {"query": "tell me about my dog"})
            block = prompt.messages[0].content.text
            assert block.startswith("<plur-memory>") and deploy["id"] in block and dog["engram"]["id"] in block
            assert block.index(deploy["id"]) < block.index(dog["engram"]["id"])      # pinned first

            fb = _data(await c.call_tool("feedback", {"engram_id": dog["engram"]["id"], "useful": True,
                                                      "query": "dog?"}))
            assert fb == {"id": dog["engram"]["id"], "useful": 1, "not_useful": 0}
            res = await c.read_resource(f"plur://engram/{deploy['id']}")
            assert json.loads(res.contents[0].text)["statement"].endswith("canary cluster.")

            listed = _data(await c.call_tool("list", {"tag": "ops"}))["engrams"]
            assert [e["id"] for e in listed] == [deploy["id"]]
            status = _data(await c.call_tool("status", {}))
            assert status["engrams"] == 2 and status["scope"] is None and status["home"] == str(plur_home)

            assert _data(await c.call_tool("forget", {"engram_id": dog["engram"]["id"]})) == {
                "forgotten": dog["engram"]["id"]}
            hits = _data(await c.call_tool("recall", {"query": "dog Rex", "k": 5}))["hits"]
            assert dog["engram"]["id"] not in [h["engram"]["id"] for h in hits]

    asyncio.run(main())
    dog_id = learned[0]
    with sqlite3.connect(plur_home / "stats.db") as db:   # forget erased the feedback with the engram
        assert db.execute("SELECT COUNT(*) FROM feedback").fetchone()[0] == 0
        # ... and every recall that returned it (README "What forget erases"); the recall after the
        # forget, which no longer returns it, is still recorded as the MCP client's
        assert db.execute("SELECT COUNT(*) FROM recalls WHERE agent = 'mcp'").fetchone()[0] >= 1
        assert db.execute("SELECT COUNT(*) FROM recall_hits WHERE engram_id = ?",
                          (dog_id,)).fetchone()[0] == 0
    with Memory(plur_home, model="none") as mem:          # the files on disk say the same
        assert [e.statement for e in mem.list()] == ["Deploys go through the canary cluster."]


def test_bad_arguments_are_clear_tool_errors_and_the_server_keeps_serving(plur_home: Path) -> None:
    async def main() -> None:
        async with client(plur_home) as c:
            assert "k" in _error(await c.call_tool("recall", {"query": "x", "k": "many"}))
            assert "empty" in _error(await c.call_tool("learn", {"statement": "   "})).lower()
            msg = _error(await c.call_tool("forget", {"engram_id": "../../etc/passwd"}))
            assert "InvalidIdError" in msg and "../../etc/passwd" in msg
            msg = _error(await c.call_tool("forget", {"engram_id": "ENG-2026-01-01-abcdef"}))
            assert "NotFoundError" in msg and "ENG-2026-01-01-abcdef" in msg
            assert "scope" in _error(await c.call_tool("learn", {"statement": "x", "scope": "team x"}))
            assert "at least one" in _error(await c.call_tool("update", {"engram_id": "ENG-2026-01-01-abcdef"}))
            assert "nope" in _error(await c.call_tool("nope", {}))
            ok = _data(await c.call_tool("learn", {"statement": "Still serving after errors."}))   # next call works
            assert _data(await c.call_tool("recall", {"query": "still serving"}))["hits"][0]["engram"]["id"] == \
                ok["engram"]["id"]

    asyncio.run(main())


def test_a_scope_pin_cannot_be_widened_by_a_tool_call(plur_home: Path) -> None:
    with Memory(plur_home, model="none") as mem:
        x = mem.learn("Project x deploys with helm.", scope="project:x").id
        y = mem.learn("Project y deploys with terraform.", scope="project:y").id
        g = mem.learn("Every project deploys on Tuesdays.").id

    async def main() -> None:
        async with client(plur_home, "--scope", "project:x") as c:
            ids = lambda r: [h["engram"]["id"] for h in _data(r)["hits"]]  # noqa: E731
            assert set(ids(await c.call_tool("recall", {"query": "deploys"}))) == {x, g}
            assert ids(await c.call_tool("recall", {"query": "deploys", "scope": "global"})) == [g]
            for args in ({"scope": "project:y"}, {"scope": "agent:root"}):
                assert "outside this server's scope 'project:x'" in _error(
                    await c.call_tool("recall", {"query": "deploys", **args}))
            assert "outside" in _error(await c.call_tool("list", {"scope": "project:y"}))
            assert {e["id"] for e in _data(await c.call_tool("list", {}))["engrams"]} == {x, g}
            for scope in ("global", "project:y"):
                assert "outside" in _error(await c.call_tool("learn", {"statement": "sneaky", "scope": scope}))
            new = _data(await c.call_tool("learn", {"statement": "Project x uses blue-green deploys."}))["engram"]
            assert new["scope"] == "project:x"
            for tool, args in (("forget", {}), ("update", {"status": "retired"}), ("pin", {}),
                               ("feedback", {"useful": False})):
                assert "NotFoundError" in _error(await c.call_tool(tool, {"engram_id": y, **args}))  # y is invisible
            for tool, args in (("forget", {}), ("update", {"statement": "changed"}), ("pin", {})):
                assert "may only change engrams in 'project:x'" in _error(
                    await c.call_tool(tool, {"engram_id": g, **args}))
            assert _data(await c.call_tool("feedback", {"engram_id": g, "useful": True}))["useful"] == 1
            with pytest.raises(Exception):
                await c.read_resource(f"plur://engram/{y}")
            block = (await c.get_prompt("memory", {"query": "how does project y deploy with terraform"})
                     ).messages[0].content.text
            assert y not in block
            status = _data(await c.call_tool("status", {}))
            assert status["scope"] == "project:x" and "project:y" not in status["by_scope"]

    asyncio.run(main())
    with Memory(plur_home, model="none") as mem:
        assert mem.get(y).statement == "Project y deploys with terraform." and mem.get(g).statement.startswith("Every")
        assert sorted(e.scope for e in mem.list()) == ["global", "project:x", "project:x", "project:y"]


def _rpc(i: int, method: str, params: dict[str, Any]) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode()


def test_a_client_that_disconnects_mid_call_leaves_a_clean_exit_and_a_sound_store(plur_home: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "plur", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(plur_home, "none"))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": "vanishing", "version": "0"}}))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    for i in range(1, 41):   # a burst of writes; the client hangs up without reading a single answer
        proc.stdin.write(_rpc(i, "tools/call", {"name": "learn", "arguments": {"statement": f"Burst note {i}."}}))
    proc.stdin.flush()
    proc.stdin.close()
    try:
        rc = proc.wait(timeout=60)
    finally:
        proc.kill()
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert rc == 0, err
    assert "Traceback" not in err, err
    with Memory(plur_home, model="none") as mem:          # every file that exists is whole; none quarantined
        report = mem.doctor(load_model=False)
        assert report["quarantined"] == [] and not report["lock"]["locked"]
        statements = [e.statement for e in mem.list()]
        assert len(statements) == len(set(statements)) <= 40
        assert all(re.fullmatch(r"Burst note \d+\.", s) for s in statements)
        if statements:
            assert mem.recall(statements[0], 1)[0].engram.statement == statements[0]  # the index agrees


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_on_loopback(plur_home: Path) -> None:
    refused = subprocess.run([sys.executable, "-m", "plur", "mcp", "--transport", "streamable-http",
                              "--host", "0.0.0.0"], env=_env(plur_home, "none"), capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 2 and "not loopback" in refused.stderr
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "plur", "mcp", "--transport", "streamable-http",
                             "--port", str(port)], env=_env(plur_home, "none"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)

    async def main() -> None:
        from mcp import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                await asyncio.sleep(0.2)
        import httpx2
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

        url = f"http://127.0.0.1:{port}/mcp"
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "nobody", "version": "0"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(timeout=30) as raw:                # another local account: no token
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + "x" * 43}):
                r = await raw.post(url, json=init, headers={**accept, **headers})
                assert r.status_code == 401 and "mcp.token" in r.json()["error"]["message"], r.text
                assert r.headers["www-authenticate"].startswith("Bearer")
        token_file = plur_home / "mcp.token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with Client(streamable_http_client(url, http_client=http)) as c:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS
            eid = _data(await c.call_tool("learn", {"statement": "Served over HTTP."}))["engram"]["id"]
            assert _data(await c.call_tool("recall", {"query": "served http"}))["hits"][0]["engram"]["id"] == eid

    try:
        asyncio.run(main())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_recall_and_status_say_when_memory_files_are_quarantined(plur_home: Path) -> None:
    """The quarantine warning of the CLI (issue 14) reaches an MCP client too: what is not loaded is not searched."""
    from plur.memory import Memory

    with Memory(plur_home, model="none") as mem:
        keep = mem.learn("The kettle is blue.")
        broken = mem.learn("The boat is called Nausicaa.")
    path = plur_home / "engrams" / broken.id[4:11] / f"{broken.id}.yaml"
    path.write_text(path.read_text(encoding="utf-8").split("scope:")[0], encoding="utf-8")  # truncated

    async def main() -> None:
        async with client(plur_home) as c:
            got = _data(await c.call_tool("recall", {"query": "kettle", "k": 3}))
            assert got["hits"][0]["engram"]["id"] == keep.id
            assert "1 memory file(s) could not be loaded" in got["warning"] and "plur doctor" in got["warning"]
            assert _data(await c.call_tool("status", {}))["quarantined"] == 1

    asyncio.run(main())
