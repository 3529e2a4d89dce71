"""Ageing: supersede, expiry (ttl / valid_until), pin; one validity rule for recall, block, worker, web, host."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import web_login
from plur.errors import ValidationError
from plur.memory import Memory
from plur.prompt.block import build_block
from plur.prompt.section import MemorySection
from plur.prompt.worker import RecallWorker
from plur.store.engram import Engram, parse_duration

WAIT_S = 30.0


@pytest.fixture
def mem(plur_home: Path) -> Iterator[Memory]:
    m = Memory(plur_home, model="none", fsync=False)
    yield m
    m.close()


def _ids(hits: Any) -> list[str]:
    return [h.engram.id for h in hits]


def test_supersede_retires_the_old_engram_everywhere(mem: Memory) -> None:
    old = mem.learn("The user lives in Lisbon.", tags=("home",), scope="project:me")
    mem.recall("where does the user live", 5)            # indexes open before the change
    new = mem.supersede(old.id, "The user moved to Porto; lives in Porto now.")
    assert new.supersedes == old.id and new.scope == "project:me" and new.tags == ("home",)
    gone = mem.get(old.id)
    assert gone.status == "retired" and gone.valid_until is not None and not gone.is_current()
    assert gone.valid_until <= datetime.now(timezone.utc)
    hits = mem.recall("where does the user live Lisbon Porto", 5)
    assert _ids(hits) == [new.id]
    assert set(_ids(mem.recall("Lisbon", 5, include_expired=True))) >= {old.id}
    # a fresh process (indexes rebuilt from disk) agrees
    with Memory(mem.home, model="none") as other:
        assert old.id not in _ids(other.recall("Lisbon Porto", 5))
        assert old.id in _ids(other.recall("Lisbon", 5, include_expired=True))
    block = build_block(mem.recall("Lisbon", 5, include_expired=True), 500)
    assert old.id not in block.engram_ids
    with pytest.raises(ValidationError, match="already retired"):
        mem.supersede(old.id, "Something else.")


def test_expired_and_not_yet_valid_engrams_are_skipped(mem: Memory) -> None:
    past = mem.learn("The office wifi password is tulip42.", valid_until="2020-01-01")
    future = mem.learn("The office wifi password will be rose77.",
                       valid_from=datetime.now(timezone.utc) + timedelta(days=3))
    live = mem.learn("The office wifi network is called Meadow.", ttl="30d")
    assert live.valid_until is not None and timedelta(days=29) < live.valid_until - datetime.now(timezone.utc) \
        <= timedelta(days=30)
    got = _ids(mem.recall("office wifi password network", 10))
    assert got == [live.id]
    assert set(_ids(mem.recall("office wifi password network", 10, include_expired=True))) == {
        past.id, future.id, live.id}
    # the block drops them even when a caller hands them over
    assert build_block(mem.recall("office wifi", 10, include_expired=True), 500).engram_ids == (live.id,)


def test_expiry_takes_effect_without_any_store_change(mem: Memory) -> None:
    t0 = datetime.now(timezone.utc)
    soon = mem.learn("The parking code is 4711.", valid_until=t0 + timedelta(seconds=1))
    assert _ids(mem.recall("parking code", 3, now=t0)) == [soon.id]   # at learn time, at any machine speed
    import time

    while datetime.now(timezone.utc) <= soon.valid_until:  # wait for the event: the expiry has passed
        time.sleep(0.05)
    assert mem.recall("parking code", 3) == []


def test_many_retired_engrams_still_leave_k_current_hits(mem: Memory) -> None:
    """Over-fetch / pre-filter: retired engrams that outrank live ones never crowd them out of top-k."""
    for i in range(30):
        e = mem.learn(f"Coffee order number {i}: coffee coffee espresso.")
        mem.update(e.id, status="retired")
    live = [mem.learn(f"Tea and coffee note {i}.").id for i in range(3)]
    with Memory(mem.home, model="none", candidates=5) as small:
        assert sorted(_ids(small.recall("coffee espresso", 3))) == sorted(live)


def test_pinned_expired_engram_leaves_the_worker_block(mem: Memory) -> None:
    pinned = mem.learn("Always answer in British English.", pinned=True,
                       valid_until=datetime.now(timezone.utc) + timedelta(hours=1))
    with RecallWorker(mem, k=3, budget_tokens=400) as worker:
        assert pinned.id in worker.warm("a1", "spelling please")
        mem.update(pinned.id, valid_until="2020-01-01T00:00:00Z")
        assert mem.pinned() == []
        worker.warm("a1", "spelling again please")
        assert pinned.id not in MemorySection(worker).text("a1")


def test_pin_unpin_update_and_learn_flags_on_the_cli(plur_home: Path) -> None:
    from click.testing import CliRunner

    from plur.cli import cli

    def run(*args: str) -> Any:
        r = CliRunner().invoke(cli, ["--home", str(plur_home), *args], env={"PLUR_MODEL": "none"},
                               catch_exceptions=False)
        return r

    r = run("learn", "I live in Lisbon.", "--created", "2024-03-01T10:00:00Z", "--ttl", "30d")
    eid = r.stdout.strip()
    with Memory(plur_home, model="none") as m:
        e = m.get(eid)
        assert e.created == datetime(2024, 3, 1, 10, tzinfo=timezone.utc) and e.valid_until is not None
    assert run("pin", eid).stdout.strip() == f"pinned: {eid}"
    assert run("unpin", eid).exit_code == 0
    assert run("update", eid, "I live in Lisbon, in Alfama.").exit_code == 0
    r = run("supersede", eid, "I moved to Porto.")
    assert r.exit_code == 0 and "supersedes" in r.stdout
    new_id = r.stdout.split()[0]
    assert new_id in run("recall", "where do I live Lisbon Porto").stdout
    assert eid not in run("recall", "Lisbon Alfama").stdout
    shown = run("recall", "Lisbon Alfama", "--include-expired").stdout
    assert eid in shown and "[retired]" in shown
    with Memory(plur_home, model="none") as m:
        assert not m.get(eid).pinned and m.get(eid).statement == "I live in Lisbon, in Alfama."
    bad = run("learn", "x", "--ttl", "soon")
    assert bad.exit_code == 2 and "'30d'" in bad.stderr
    both = run("learn", "y", "--ttl", "3d", "--valid-until", "2030-01-01")
    assert both.exit_code == 2 and "not both" in both.stderr


def test_web_page_shows_retired_and_expired(memory: Memory) -> None:
    from starlette.testclient import TestClient

    from plur.web.server import create_app

    old = memory.learn("The team standup is at 9:00.")
    memory.supersede(old.id, "The team standup is at 9:30.")
    expired = memory.learn("The demo server is demo-3.", valid_until="2021-05-01")
    with TestClient(create_app(memory), base_url="http://127.0.0.1:7777") as client:
        web_login(client)
        rows = {r["id"]: r for r in client.get("/?format=json").json()["rows"]}
        assert rows[old.id]["current"] is False and rows[old.id]["status"] == "retired"
        assert rows[expired.id]["current"] is False and rows[expired.id]["valid_until"] == "2021-05-01T00:00:00Z"
        html = client.get("/").text
        assert "expired" in html
        page = client.get(f"/engrams/{expired.id}").text
        assert 'id="expired-badge"' in page and 'id="not-current"' in page and 'id="valid-until"' in page
        assert 'id="not-current"' in client.get(f"/engrams/{old.id}").text
        retired_only = client.get("/?status=retired&format=json").json()["rows"]
        assert [r["id"] for r in retired_only] == [old.id]


def test_pydantic_ai_host_never_shows_a_superseded_engram(mem: Memory) -> None:
    import pydantic_ai
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from plur.hosts.pydantic_ai import attach

    old = mem.learn("The user's favourite editor is Vim.", scope="project:x")
    new = mem.supersede(old.id, "The user's favourite editor is now Helix.")
    seen: list[str] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        return ModelResponse(parts=[TextPart("ok")])

    agent = pydantic_ai.Agent(FunctionModel(model), instructions="Be brief.")
    with RecallWorker(mem, k=5, budget_tokens=500) as worker:
        attach(agent, MemorySection(worker), agent_id="a", scope="project:x")
        for _ in range(2):
            agent.run_sync("Which editor does the user favour, Vim or Helix?")
            assert worker.wait_idle(WAIT_S)
    assert new.id in seen[1] and old.id not in seen[1]


def test_is_current_and_parse_duration() -> None:
    now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    e = Engram.create("x", created=now)
    assert e.is_current(now)
    assert not e.replace(status="retired").is_current(now)
    assert not e.replace(valid_until=now).is_current(now)              # the window is half-open
    assert e.replace(valid_from=now).is_current(now)
    assert not e.replace(valid_from=now + timedelta(seconds=1)).is_current(now)
    assert parse_duration("30d") == timedelta(days=30) and parse_duration("1.5h") == timedelta(minutes=90)
    for bad in ("", "0d", "-1d", "30", "d", "3y", 30):
        with pytest.raises(ValidationError):
            parse_duration(bad)
