"""Issue 38: tags are bounded (at most 64 per engram, 64 characters each) at every door, and a bare string
is refused instead of being taken as one tag per character (``tags="pets"`` stored p, e, t, s)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plur.errors import ValidationError
from plur.memory import Memory
from plur.store.engram import MAX_TAG_CHARS, MAX_TAGS

MANY = [f"t{i}" for i in range(100_000)]


def test_python_api_refuses_too_many_tags_a_long_tag_and_a_bare_string(memory: Memory) -> None:
    with pytest.raises(ValidationError, match=r"100000 tags is over the limit of 64"):
        memory.learn("The user has many labels.", tags=MANY)
    with pytest.raises(ValidationError, match=r"invalid tag 'xxx"):
        memory.learn("The user has a long label.", tags=["x" * (MAX_TAG_CHARS + 1)])
    with pytest.raises(ValidationError, match=r"tags must be a list of strings, got the string 'pets'.*\['pets'\]"):
        memory.learn("The user's dog is Rex.", tags="pets")
    with pytest.raises(ValidationError, match="over the limit"):
        memory.learn_many([{"statement": "A note.", "tags": MANY[:MAX_TAGS + 1]}])
    with pytest.raises(ValidationError, match="got the string"):
        memory.ingest([{"role": "user", "content": "hello there"}], tags="chat")
    e = memory.learn("The user's cat is Tom.", tags=MANY[:MAX_TAGS])         # the limit itself is fine
    with pytest.raises(ValidationError, match="over the limit"):
        memory.update(e.id, tags=MANY[:MAX_TAGS + 1])
    with pytest.raises(ValidationError, match="got the string"):
        memory.update(e.id, tags="cats")
    assert [x.statement for x in memory.list()] == ["The user's cat is Tom."]
    assert memory.get(e.id).tags == tuple(MANY[:MAX_TAGS])


def test_cli_refuses_too_many_tags(plur_home: Path) -> None:
    args = [a for i in range(MAX_TAGS + 1) for a in ("--tag", f"t{i}")]
    got = subprocess.run([sys.executable, "-m", "plur", "learn", "A note with many tags.", *args],
                         env={**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": "none"},
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 2 and "65 tags is over the limit of 64" in got.stderr, got.stderr
    assert not list((plur_home / "engrams").rglob("*.yaml")) if (plur_home / "engrams").exists() else True


def test_service_api_refuses_too_many_tags(memory: Memory) -> None:
    from starlette.testclient import TestClient

    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api

    worker = RecallWorker(memory)
    try:
        with TestClient(create_api(memory, worker, "tok")) as c:
            auth = {"Authorization": "Bearer tok"}
            r = c.post("/api/v1/learn", json={"statement": "Many labels.", "tags": MANY[:10_000]}, headers=auth)
            assert r.status_code == 400 and "over the limit of 64" in r.json()["error"]["message"], r.text
            r = c.post("/api/v1/learn", json={"statement": "A label.", "tags": "pets"}, headers=auth)
            assert r.status_code == 400, r.text
            assert memory.list() == []
    finally:
        worker.close()


def test_mcp_tool_schemas_and_the_dsh_schema_copy_bound_tags() -> None:
    from plur.mcp.server import build_server
    from plur.store.schema import schema

    assert schema()["max_tags"] == MAX_TAGS and schema()["max_tag_chars"] == MAX_TAG_CHARS
    js = (Path(__file__).resolve().parents[1] / "hosts/dsh/src/schema.js").read_text()   # the DSH plugin's copy
    assert f'"max_tags": {MAX_TAGS}' in js and f'"max_tag_chars": {MAX_TAG_CHARS}' in js

    class Nothing:
        def __getattr__(self, name: str):
            raise AssertionError(name)

    server = build_server(Nothing())
    tools = {t.name: t for t in asyncio.run(server.list_tools())}
    for name in ("learn", "update"):
        tags = tools[name].input_schema["properties"]["tags"] if hasattr(tools[name], "input_schema") \
            else tools[name].inputSchema["properties"]["tags"]
        text = json.dumps(tags)
        assert f'"maxItems": {MAX_TAGS}' in text and f'"maxLength": {MAX_TAG_CHARS}' in text, text
