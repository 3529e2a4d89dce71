"""Team access at the service's doors, on a real PostgreSQL: member tokens, grants, revoke, no leak of scopes.

The API runs in-process (Starlette's TestClient) over a Memory on the database (BM25: this is about who
sees what, not ranking); the last test runs the real `plur team` commands and a real `plur service`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for

pytest.importorskip("starlette")

WORD = "kestrel"  # every engram says it, so one query could find them all


@pytest.fixture
def door(tmp_path: Path, pg_uri: str):
    """``(client, ids, conn, memory)``: an API with member doors over a seeded database."""
    import psycopg
    from starlette.testclient import TestClient

    from plur.memory import Memory
    from plur.prompt.worker import RecallWorker
    from plur.service.access import MemberDoors
    from plur.service.api import create_api
    from plur.store.pg.team import TeamDirectory

    memory = Memory(tmp_path / "home", model="none", store=pg_uri)
    ids = {scope: memory.learn(f"The {WORD} note of {scope} says {n}.", scope=scope).id
           for n, scope in enumerate(["global", "agent:ana-coder", "agent:bo-coder", "project:site",
                                      "project:secret"])}
    memory.learn(f"Pinned {WORD} reminder for bo only.", scope="agent:bo-coder", pinned=True)
    worker = RecallWorker(memory)
    directory = TeamDirectory(pg_uri)
    members = MemberDoors(memory, directory.member, RecallWorker, directory.close_connection)
    conn = psycopg.connect(pg_uri, autocommit=True)
    try:
        with TestClient(create_api(memory, worker, "owner-token", members=members)) as client:
            yield client, ids, conn, memory
    finally:
        members.close()
        worker.close()
        memory.close()
        conn.close()


def _as(client: Any, token: str):
    def call(method: str, path: str, body: dict | None = None):
        return client.request(method, "/api/v1" + path, json=body, headers={"Authorization": f"Bearer {token}"})
    return call


def _seen(call) -> dict[str, set[str]]:
    """Every id the member can reach, door by door."""
    recall = call("POST", "/recall", {"query": WORD, "k": 50}).json()["hits"]
    listed = call("POST", "/list", {"limit": 100}).json()["engrams"]
    block = call("POST", "/block", {"agent_id": "a1", "query": WORD}).json()
    inject = call("POST", "/inject", {"query": WORD}).json()
    return {"recall": {h["engram"]["id"] for h in recall}, "list": {e["id"] for e in listed},
            "block": set(block["engram_ids"]), "inject": set(inject["engram_ids"])}


def test_a_member_sees_only_its_scopes_through_every_read_door(door) -> None:
    from plur.store.pg import team

    client, ids, conn, memory = door
    ana = team.add_member(conn, "ana")
    team.grant(conn, "ana", "agent:ana-coder", write=True)
    team.grant(conn, "ana", "project:site")
    bo = team.add_member(conn, "bo")
    team.grant(conn, "bo", "agent:bo-coder", write=True)
    as_ana, as_bo, owner = _as(client, ana), _as(client, bo), _as(client, "owner-token")
    visible = {ids["global"], ids["agent:ana-coder"], ids["project:site"]}
    for door_name, got in _seen(as_ana).items():
        assert got and got <= visible, door_name                   # never bo's agent scope, never project:secret
    assert _seen(as_ana)["recall"] == visible
    assert len(_seen(owner)["recall"]) == 6                       # the owner's token still sees everything
    # show: an out-of-scope id answers exactly like an absent one (status and body)
    hidden = as_ana("GET", f"/engrams/{ids['agent:bo-coder']}")
    absent = as_ana("GET", "/engrams/ENG-2020-01-01-abcdef")
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json()["error"]["message"].replace(ids["agent:bo-coder"], "ID") == \
        absent.json()["error"]["message"].replace("ENG-2020-01-01-abcdef", "ID")
    assert as_ana("GET", f"/engrams/{ids['project:site']}").status_code == 200
    assert as_ana("POST", "/feedback", {"id": ids["agent:bo-coder"], "useful": True}).status_code == 404
    # the section's cached block (the recall worker) is the member's own
    assert as_ana("POST", "/agents/a1/submit", {"text": WORD}).status_code == 202
    block = wait_for(lambda: as_ana("GET", "/agents/a1/block").json()["engram_ids"], "ana's cached block")
    assert set(block) <= visible
    status = as_ana("GET", "/status").json()
    assert status["member"] == "ana" and set(status["by_scope"]) == {"global", "agent:ana-coder", "project:site"}
    assert "home" not in status
    # asking for an ungranted scope by name: 403, one line naming the scope and the fix
    asked = as_ana("POST", "/recall", {"query": WORD, "scope": "agent:bo-coder"})
    assert asked.status_code == 403
    message = asked.json()["error"]["message"]
    assert "'agent:bo-coder'" in message and "plur team grant ana --read agent:bo-coder" in message
    assert "\n" not in message
    assert as_ana("GET", "/doctor").status_code == 403
    # bo sees its agent scope (and its pinned engram), not ana's
    bo_seen = _seen(as_bo)
    assert ids["agent:bo-coder"] in bo_seen["recall"] and ids["agent:ana-coder"] not in bo_seen["recall"]
    assert ids["project:site"] not in bo_seen["list"]


def test_writes_outside_the_grants_are_refused_and_nothing_is_written(door) -> None:
    from plur.store.pg import team

    client, ids, conn, memory = door
    ana = team.add_member(conn, "ana")
    team.grant(conn, "ana", "agent:ana-coder", write=True)
    team.grant(conn, "ana", "project:site")                      # read only
    as_ana = _as(client, ana)

    def state() -> tuple[Any, ...]:
        return (conn.execute("SELECT coalesce(max(seq), 0) FROM plur_changes").fetchone()[0],
                conn.execute("SELECT count(*), string_agg(doc::text, '' ORDER BY id) FROM plur_engrams").fetchone())

    before = state()
    for scope in ("agent:bo-coder", "project:site", "project:other"):
        r = as_ana("POST", "/learn", {"statement": "Ana's new note.", "scope": scope})
        assert r.status_code == 403, scope
        assert f"'{scope}'" in r.json()["error"]["message"] and "--write" in r.json()["error"]["message"]
    # an engram already stored elsewhere: refused as well (no merge into another's scope)
    r = as_ana("POST", "/learn", {"statement": f"The {WORD} note of agent:bo-coder says 2.", "scope": "agent:bo-coder"})
    assert r.status_code == 403
    assert as_ana("POST", "/update", {"id": ids["project:site"], "statement": "changed"}).status_code == 403
    assert as_ana("POST", "/update", {"id": ids["agent:bo-coder"], "statement": "changed"}).status_code == 404
    assert as_ana("POST", "/forget", {"id": ids["agent:bo-coder"]}).status_code == 404
    assert as_ana("POST", "/forget", {"id": ids["project:site"]}).status_code == 403
    assert state() == before                                       # not one row, not one feed entry
    assert as_ana("POST", "/learn", {"statement": "Ana's own note.", "scope": "agent:ana-coder"}).status_code == 200
    assert as_ana("POST", "/learn", {"statement": "A note for everyone."}).status_code == 200
    assert state()[0] == before[0] + 2


def test_grant_revoke_and_remove_take_effect_on_the_next_request(door) -> None:
    from plur.store.pg import team

    client, ids, conn, memory = door
    ana = team.add_member(conn, "ana")
    as_ana = _as(client, ana)
    bo_id = ids["agent:bo-coder"]
    assert bo_id not in _seen(as_ana)["recall"]
    assert as_ana("POST", "/agents/a1/submit", {"text": WORD}).status_code == 202
    wait_for(lambda: as_ana("GET", "/agents/a1/block").json()["engram_ids"], "ana's first block")
    team.grant(conn, "ana", "agent:bo-coder")
    assert bo_id in _seen(as_ana)["recall"] and as_ana("GET", f"/engrams/{bo_id}").status_code == 200
    assert as_ana("POST", "/agents/a1/submit", {"text": WORD}).status_code == 202
    wait_for(lambda: bo_id in as_ana("GET", "/agents/a1/block").json()["engram_ids"], "the granted scope in the block")
    team.revoke(conn, "ana", "agent:bo-coder")
    for door_name, got in _seen(as_ana).items():
        assert bo_id not in got, door_name
    assert as_ana("GET", f"/engrams/{bo_id}").status_code == 404
    assert bo_id not in as_ana("GET", "/agents/a1/block").json()["engram_ids"]   # the old block went with the grant
    team.remove_member(conn, "ana")
    gone = as_ana("POST", "/recall", {"query": WORD})
    assert gone.status_code == 401 and "unknown member token" in gone.json()["error"]["message"]
    assert _as(client, "plur_not-a-token")("POST", "/recall", {"query": WORD}).status_code == 401
    assert _as(client, "owner-token")("POST", "/recall", {"query": WORD}).status_code == 200


def test_plur_team_commands_and_a_member_token_at_a_real_service(pg_uri: str) -> None:
    from plur.service.client import Client
    from test_service import plur, short_home

    env = {"PLUR_STORE": pg_uri, "PLUR_MODEL": "none"}
    home = short_home()
    try:
        assert plur("learn", "The kestrel deploy key lives in the vault.", "--scope", "project:site", home=home,
                    env=env).returncode == 0
        assert plur("learn", "Bo's kestrel scratch note.", "--scope", "agent:bo-coder", home=home, env=env).returncode == 0
        added = plur("team", "add", "ana", "--read", "project:site", "--write", "agent:ana-coder", "--json",
                     home=home, env=env)
        assert added.returncode == 0, added.stderr
        token = json.loads(added.stdout)["token"]
        assert json.loads(added.stdout)["write"] == ["agent:ana-coder"]
        listed = plur("team", "list", home=home, env=env)
        assert listed.returncode == 0 and "ana: reads global, project:site, agent:ana-coder" in listed.stdout
        assert token not in listed.stdout
        bad = plur("team", "add", "cy", "--read", "nope", home=home, env=env)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "nope" in bad.stderr
        started = plur("service", "start", "--port", "0", home=home, env=env)
        assert started.returncode == 0, started.stderr + started.stdout
        info = json.loads((home / "service.json").read_text())
        member = Client({**info, "token": token})
        statements = [h["engram"]["statement"] for h in member.recall("kestrel", 10, mode="bm25")["hits"]]
        assert statements == ["The kestrel deploy key lives in the vault."]
        assert plur("team", "grant", "ana", "--read", "agent:bo-coder", home=home, env=env).returncode == 0
        assert len(member.recall("kestrel", 10, mode="bm25")["hits"]) == 2
        revoked = plur("team", "revoke", "ana", "agent:bo-coder", home=home, env=env)
        assert revoked.returncode == 0 and "revoked agent:bo-coder" in revoked.stdout
        assert len(member.recall("kestrel", 10, mode="bm25")["hits"]) == 1
        from plur.errors import ForbiddenError

        with pytest.raises(ForbiddenError, match="project:site"):
            member.learn("Ana tries to write the site.", scope="project:site")
        assert plur("team", "remove", "ana", home=home, env=env).returncode == 0
        from plur.errors import AuthError

        with pytest.raises(AuthError):
            member.recall("kestrel", 10, mode="bm25")
        folder = plur("team", "list", home=home, env={"PLUR_MODEL": "none"})
        assert folder.returncode == 2 and "PostgreSQL store" in folder.stderr
    finally:
        plur("service", "stop", home=home)
        shutil.rmtree(home.parent, ignore_errors=True)
