"""Issue 38, the API's door: a team member's 503 names no database address or socket path, and the
``Authorization`` scheme is case-insensitive (RFC 9110 section 11.1), as MCP's door already was."""

from __future__ import annotations

from pathlib import Path

import pytest

from plur.memory import Memory

pytest.importorskip("starlette")


def test_bearer_scheme_is_case_insensitive(memory: Memory) -> None:
    from starlette.testclient import TestClient

    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api

    worker = RecallWorker(memory)
    try:
        with TestClient(create_api(memory, worker, "tok")) as c:
            for header in ("Bearer tok", "bearer tok", "BEARER tok", "Bearer  tok "):
                assert c.get("/api/v1/status", headers={"Authorization": header}).status_code == 200, header
            for header in ("Basic tok", "Bearer tok2", "bearer", "tok"):
                assert c.get("/api/v1/status", headers={"Authorization": header}).status_code == 401, header
    finally:
        worker.close()


def test_a_members_503_names_no_database_uri_or_socket(tmp_path: Path, pg_uri: str) -> None:
    from starlette.testclient import TestClient

    from plur.prompt.worker import RecallWorker
    from plur.service.access import MemberDoors
    from plur.service.api import create_api
    from plur.store.pg.team import TeamDirectory

    memory = Memory(tmp_path / "home", model="none", store=pg_uri)
    socket_dir = tmp_path / "gone"
    down = f"postgresql://plur@/plur?host={socket_dir}"   # the team database, unreachable
    directory = TeamDirectory(down)
    worker = RecallWorker(memory)
    members = MemberDoors(memory, directory.member, RecallWorker, directory.close_connection)
    try:
        with TestClient(create_api(memory, worker, "owner-token", members=members)) as c:
            r = c.post("/api/v1/recall", json={"query": "x"}, headers={"Authorization": "Bearer plur_" + "a" * 40})
            message = r.json()["error"]["message"]
            assert r.status_code == 503 and "unreachable" in message, (r.status_code, message)
            assert str(socket_dir) not in message and "postgresql" not in message and ".s.PGSQL" not in message
            assert "host=" not in message and "socket" not in message, message
    finally:
        members.close()
        worker.close()
        memory.close()


def test_a_lone_surrogate_or_a_deeply_nested_body_is_a_400_not_a_500(memory: Memory) -> None:
    from starlette.testclient import TestClient

    from conftest import web_login
    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api
    from plur.web.server import create_app

    deep = b"[" * 100_000 + b"]" * 100_000
    worker = RecallWorker(memory)
    try:
        with TestClient(create_api(memory, worker, "tok"), raise_server_exceptions=False) as c:
            h = {"Authorization": "Bearer tok", "Content-Type": "application/json"}
            for path, body in (("/api/v1/learn", b'{"statement": "\\ud800"}'),
                               ("/api/v1/learn", b'{"statement": "ok", "tags": ["a\\ud800"]}'),
                               ("/api/v1/recall", b'{"query": "x", "agent": "\\udc00"}'),
                               ("/api/v1/recall", b'{"query": ' + deep + b"}"),
                               ("/api/v1/learn", b'{"statement": ' + deep + b"}")):
                r = c.post(path, content=body, headers=h)
                assert r.status_code == 400 and r.json()["error"]["type"] == "ValidationError", (path, r.text)
            ok = c.post("/api/v1/learn", content=b'{"statement": "A pair \\ud83d\\ude00 is fine."}', headers=h)
            assert ok.status_code == 200, ok.text
        e = memory.list()[0]
        with TestClient(create_app(memory), base_url="http://127.0.0.1:7777", raise_server_exceptions=False) as page:
            web_login(page)
            tok = page.get("/?format=json").headers["x-csrf-token"]
            r = page.post(f"/engrams/{e.id}/edit?format=json", content=b'{"statement": ' + deep + b"}",
                          headers={"Content-Type": "application/json", "Origin": "http://127.0.0.1:7777",
                                   "X-CSRF-Token": tok})
            assert r.status_code == 400, r.text
    finally:
        worker.close()
