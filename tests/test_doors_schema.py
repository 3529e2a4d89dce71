"""One list of engram types, statuses and scopes: every door advertises exactly the store's.

Doors: the CLI (click choices), the local service (``GET /api/v1/schema``, a real ``plur serve``),
the MCP server (its tools' input schemas, over stdio), and the DeepSeek Harness plugin (its
generated ``hosts/dsh/src/schema.js``; the plugin's node tests check that the real DSH tool
registry advertises that list, and the e2e that the model is sent it).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
import pytest

from plur.store.engram import SCOPE_RE, STATUSES, TYPES
from plur.store.schema import DEFAULT_TYPE, SCOPE_KINDS, SCOPE_PATTERN_JS, js_module, schema

REPO = Path(__file__).resolve().parent.parent
SCOPES_OK = ["global", "project:plur", "agent:lin", "project:a.b_c-d@e/f", "project:日本語", "agent:" + "x" * 128]
SCOPES_BAD = ["", "Global", "project:", "project:a b", "project:a:b", "team:x", "agent:" + "x" * 129, "global\n",
              "project:a\u0301"]  # a combining mark is not a word character in Python's re


def _enums(node: Any, key: str | None = None) -> list[tuple[str | None, list[Any]]]:
    """Every ``enum`` in a JSON schema, with the name of the property it sits under."""
    found: list[tuple[str | None, list[Any]]] = []
    if isinstance(node, dict):
        if "enum" in node:
            found.append((key, node["enum"]))
        for k, v in node.items():
            found += _enums(v, k if k not in ("items", "anyOf", "oneOf", "allOf") and key != "properties" else key)
            if k == "properties" and isinstance(v, dict):
                for name, sub in v.items():
                    found += _enums(sub, name)
    elif isinstance(node, list):
        for v in node:
            found += _enums(v, key)
    return found


def test_the_schema_is_the_stores() -> None:
    data = schema()
    assert data["types"] == list(TYPES) and data["statuses"] == list(STATUSES)
    assert data["default_type"] == DEFAULT_TYPE and DEFAULT_TYPE in TYPES
    assert SCOPE_RE.pattern == r"\A(global|(project|agent):[\w.@/-]{1,128})\Z", "update SCOPE_PATTERN_JS with SCOPE_RE"
    assert tuple(data["scope_kinds"]) == SCOPE_KINDS == tuple(re.findall(r"[a-z]+", SCOPE_RE.pattern.split(":")[0]))
    for scope in SCOPES_OK:
        assert SCOPE_RE.match(scope), scope
    for scope in SCOPES_BAD:
        assert not SCOPE_RE.match(scope), scope


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (scripts/test needs it for hosts/dsh)")
def test_the_ecmascript_scope_pattern_accepts_what_the_store_accepts() -> None:
    script = ("const re = new RegExp(process.argv[1], 'u');"
              "process.stdout.write(JSON.stringify(JSON.parse(process.argv[2]).map((s) => re.test(s))))")
    samples = SCOPES_OK + SCOPES_BAD
    out = subprocess.run(["node", "-e", script, SCOPE_PATTERN_JS, json.dumps(samples)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert json.loads(out) == [bool(SCOPE_RE.match(s)) for s in samples]


def test_cli_choices_are_the_stores() -> None:
    from plur.cli import cli

    seen = 0

    def walk(command: click.Command, ctx: click.Context) -> None:
        nonlocal seen
        for param in command.params:
            if isinstance(param.type, click.Choice) and param.name in ("type", "type_", "types"):
                assert list(param.type.choices) == list(TYPES), f"{ctx.command_path} --{param.name}"
                seen += 1
            if isinstance(param.type, click.Choice) and param.name in ("status", "statuses"):
                assert list(param.type.choices) == list(STATUSES), f"{ctx.command_path} --{param.name}"
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    walk(sub, click.Context(sub, info_name=name, parent=ctx))

    walk(cli, click.Context(cli, info_name="plur"))
    assert seen >= 3, f"only {seen} --type options found"


def test_the_dsh_plugins_copy_is_generated_from_the_store() -> None:
    path = REPO / "hosts" / "dsh" / "src" / "schema.js"
    assert path.read_text(encoding="utf-8") == js_module(), (
        "hosts/dsh/src/schema.js is stale: run `python -m plur.store.schema --js > hosts/dsh/src/schema.js`")
    tools = (REPO / "hosts" / "dsh" / "src" / "tools.js").read_text(encoding="utf-8")
    assert "enum: [...SCHEMA.types]" in tools and "SCHEMA.default_type" in tools, "plur_learn must use SCHEMA"


def test_the_services_schema_is_the_stores() -> None:
    from plur.service.client import Client

    home = Path(tempfile.mkdtemp(prefix="plur-schema-", dir="/tmp")) / "home"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PLUR_MODEL": "none"}
    run = [sys.executable, "-m", "plur", "--home", str(home)]
    started = subprocess.run([*run, "service", "start", "--port", "0"], capture_output=True, text=True, env=env,
                             timeout=240)
    assert started.returncode == 0, started.stderr + started.stdout
    try:
        client = Client(json.loads((home / "service.json").read_text()))
        assert client.request("GET", "/schema") == schema()
        learned = client.request("POST", "/learn", {"statement": "The user's dog is called Rex."})
        assert learned["engram"]["type"] == DEFAULT_TYPE
    finally:
        subprocess.run([*run, "service", "stop"], capture_output=True, text=True, env=env, timeout=120)
        shutil.rmtree(home.parent, ignore_errors=True)


def test_mcp_tool_schemas_are_the_stores(plur_home: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "plur", "mcp"],
                                   env=dict(os.environ, PLUR_HOME=str(plur_home), PLUR_MODEL="none",
                                            HF_HUB_OFFLINE="1"))

    async def main() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=60) as c:
            return {t.name: t.input_schema for t in (await c.list_tools()).tools}

    tools = asyncio.run(main())
    checked = []
    for name, input_schema in tools.items():
        for key, enum in _enums(input_schema):
            if key in ("type", "types"):
                assert enum == list(TYPES), f"MCP tool {name} property {key}: {enum}"
                checked.append(f"{name}.{key}")
            elif key == "status":
                assert enum == list(STATUSES), f"MCP tool {name} property {key}: {enum}"
    assert {"learn.type", "recall.types", "update.type", "list.type"} <= set(checked), checked
    assert tools["learn"]["properties"]["type"].get("default") == DEFAULT_TYPE
