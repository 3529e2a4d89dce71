"""Facts about the user follow the user (issue 46 D): a captured or learned note about the user (family, health,
identity, preferences, habits) is recalled in every project; a note about the code stays in its project.

:func:`plur.memory.turns.personal.about_user` is measured on ``tests/data/personal_notes.tsv`` (sentences written
for this test, half each way) and on every dialog turn of LoCoMo (two people talking about their lives: all
personal). On main before this change capture and the model's learn tools always wrote the project's scope:
"My daughter Mira has violin lessons every Thursday", said in repo A, was not recalled in repo B.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from plur.memory import Memory
from plur.memory.turns.personal import about_user, route
from plur.prompt.selection import recall_block

from conftest import DATA, REPO, SHARED

PERSONAL = "My daughter Mira has violin lessons every Thursday."
PROJECT = "The web package's dev server listens on port 5173."


def labelled() -> list[tuple[str, str]]:
    rows = []
    for line in (DATA / "personal_notes.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            label, text = line.split("\t")
            rows.append((label, text))
    return rows


def test_the_labelled_sentences_each_way() -> None:
    rows = labelled()
    for label in ("personal", "project"):
        texts = [t for lab, t in rows if lab == label]
        wrong = [t for t in texts if about_user(t) != (label == "personal")]
        print(f"{label}: {len(texts) - len(wrong)}/{len(texts)} right")
        assert len(texts) >= 100 and len(wrong) / len(texts) <= 0.05, wrong


def test_locomo_turns_are_personal() -> None:
    data = json.loads((SHARED / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    turns = [t["text"] for s in data for k, v in s["conversation"].items()
             if k.startswith("session_") and isinstance(v, list) for t in v]
    right = sum(1 for t in turns if about_user(t))
    print(f"LoCoMo dialog turns: {right}/{len(turns)} personal ({right / len(turns):.3f})")
    assert len(turns) == 5882 and right / len(turns) >= 0.95


@pytest.mark.parametrize("scope, about, text, want", [
    ("project:a", "auto", PERSONAL, "global"), ("project:a", "auto", PROJECT, "project:a"),
    ("project:a", "user", PROJECT, "global"), ("project:a", "project", PERSONAL, "project:a"),
    ("agent:x", "auto", PERSONAL, "agent:x"), ("project:a", None, PERSONAL, "project:a"),
])
def test_route(scope: str, about: str | None, text: str, want: str) -> None:
    assert route(scope, about, text) == want
    assert route(scope, "auto", text, enabled=False) == scope


def test_a_personal_fact_said_in_one_repo_is_recalled_in_another(memory: Memory) -> None:
    memory.capture(PERSONAL, session="s1", turn=0, scope="project:a", mode="user")
    memory.capture(PROJECT, session="s1", turn=1, scope="project:a", mode="user")
    memory.catch_up(progress=False)
    b = recall_block(memory, "When does Mira have violin lessons?", scope="project:b")
    assert PERSONAL in b.text
    b = recall_block(memory, "Which port does the web dev server listen on?", scope="project:b")
    assert PROJECT not in b.text
    a = recall_block(memory, "Which port does the web dev server listen on?", scope="project:a")
    assert PROJECT in a.text
    assert {e.statement: e.scope for e in memory.list()} == {PERSONAL: "global", PROJECT: "project:a"}


def test_the_setting_keeps_captured_turns_in_their_project(plur_home: Path) -> None:
    with Memory(plur_home, model="none", route_personal=False) as mem:
        (e,) = mem.capture(PERSONAL, session="s1", turn=0, scope="project:a", mode="user").stored
        assert e.scope == "project:a"


def test_the_service_learn_door_and_capture_answer(plur_home: Path) -> None:
    from starlette.testclient import TestClient

    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api

    with Memory(plur_home, model="none", capture="user") as memory, RecallWorker(memory, capture=False) as worker:
        client = TestClient(create_api(memory, worker, token="t"))
        auth = {"Authorization": "Bearer t"}

        def learn(**body: object) -> str:
            r = client.post("/api/v1/learn", json={"scope": "project:a", **body}, headers=auth)
            assert r.status_code == 200, r.text
            return r.json()["engram"]["scope"]

        assert learn(statement=PERSONAL, about="auto") == "global"
        assert learn(statement=PROJECT, about="auto") == "project:a"
        assert learn(statement="I prefer short answers.", about="project") == "project:a"
        assert learn(statement="Use tabs in this repo.", about="user") == "global"
        assert learn(statement="My son plays chess.") == "project:a"          # no about: the scope as given
        r = client.post("/api/v1/learn", json={"statement": "x", "about": "me"}, headers=auth)
        assert r.status_code == 400 and "about 'me'" in r.text
        r = client.post("/api/v1/capture", json={"text": "My partner Sam works night shifts.", "session": "c",
                                                 "turn": 0, "scope": "project:a", "wait": True}, headers=auth)
        assert r.json()["scope"] == "global" and r.json()["forgotten"] == []


def test_the_mcp_learn_tool_says_whom(plur_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_mcp import _data, _error, client

    monkeypatch.setenv("PYTHONPATH", str(REPO))     # the server runs in another folder: this checkout's plur

    async def main() -> None:
        async with client(plur_home) as c:            # unpinned, in a folder named web: project:web
            schema = {t.name: t for t in (await c.list_tools()).tools}["learn"].input_schema["properties"]
            assert "about" in schema and "user" in json.dumps(schema["about"])
            scope = lambda r: _data(r)["engram"]["scope"]  # noqa: E731
            assert scope(await c.call_tool("learn", {"statement": PERSONAL})) == "global"
            assert scope(await c.call_tool("learn", {"statement": PROJECT})) == "project:web"
            assert scope(await c.call_tool("learn", {"statement": "I like dark mode.", "about": "project"})) \
                == "project:web"
            assert scope(await c.call_tool("learn", {"statement": "Deploy with helm.", "about": "user"})) == "global"
            assert scope(await c.call_tool("learn", {"statement": "My cat is Luna.", "scope": "project:web"})) \
                == "project:web"                                            # a scope the model named wins
        async with client(plur_home, "--scope", "project:x") as c:   # pinned: never writes global
            assert _data(await c.call_tool("learn", {"statement": "My dog is Rex."}))["engram"]["scope"] == "project:x"
            assert "outside" in _error(await c.call_tool("learn", {"statement": "My dog is Rex!", "about": "user"}))

    asyncio.run(main())
