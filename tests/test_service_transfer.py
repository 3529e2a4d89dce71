"""The service's export, import, bind and unbind (what the DSH plugin's /plur export|import|bind|unbind send):
the same files and registry as plur export / plur import / plur project, and one-line refusals (issue 48)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from plur.memory import Memory
from plur.prompt.worker import RecallWorker
from plur.project import resolve
from plur.service.api import create_api

AUTH = {"Authorization": "Bearer t"}


@pytest.fixture
def api(plur_home: Path):
    with Memory(plur_home, model="none") as m, RecallWorker(m) as worker:
        yield m, TestClient(create_api(m, worker, token="t"))


def test_export_then_import_into_another_home(api, tmp_path: Path) -> None:
    m, client = api
    m.learn("Deploys go out on Tuesdays.", scope="project:shop", type="procedure", tags=["deploy"])
    m.learn("The user's dog is called Rex.")
    target = tmp_path / "out" / "notes.jsonl"
    r = client.post("/api/v1/export", json={"target": str(target)}, headers=AUTH)
    assert r.status_code == 400 and "does not exist" in r.json()["error"]["message"]       # no folder made silently
    target.parent.mkdir()
    r = client.post("/api/v1/export", json={"target": str(target)}, headers=AUTH)
    assert r.status_code == 200 and r.json() == {"exported": 2, "target": str(target)}
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    # both notes were created in the same second (the store keeps seconds): their order is the ids', not the calls'
    assert sorted(row["statement"] for row in rows) == ["Deploys go out on Tuesdays.", "The user's dog is called Rex."]
    r = client.post("/api/v1/export", json={"target": str(target)}, headers=AUTH)
    assert r.status_code == 400 and "--force" in r.json()["error"]["message"]            # a previous export stays
    assert client.post("/api/v1/export", json={"target": str(target), "force": True}, headers=AUTH).status_code == 200
    with Memory(tmp_path / "other", model="none") as other, RecallWorker(other) as w2:
        c2 = TestClient(create_api(other, w2, token="t"))
        r = c2.post("/api/v1/import", json={"paths": [str(target)], "dry_run": True}, headers=AUTH)
        assert r.status_code == 200 and len(r.json()["added"]) == 2 and other.list() == []
        r = c2.post("/api/v1/import", json={"paths": [str(target)]}, headers=AUTH)
        assert r.json()["scopes"] == ["global", "project:shop"] and len(other.list()) == 2
        assert {e.type for e in other.list()} == {"procedure", "fact"}
        again = c2.post("/api/v1/import", json={"paths": [str(target)]}, headers=AUTH).json()
        assert again["added"] == [] and len(again["already_known"]) == 2


def test_import_gives_entries_without_a_scope_the_one_asked_for(api, tmp_path: Path) -> None:
    m, client = api
    notes = tmp_path / "notes.md"
    notes.write_text("The staging box is called kiwi.\n", encoding="utf-8")
    r = client.post("/api/v1/import", json={"paths": [str(notes)], "scope": "project:delta"}, headers=AUTH)
    assert r.status_code == 200, r.text
    assert [(e.statement, e.scope) for e in m.list()] == [("The staging box is called kiwi.", "project:delta")]


@pytest.mark.parametrize("route, body, needle", [
    ("/api/v1/export", {"target": "relative.jsonl"}, "absolute"),
    ("/api/v1/export", {"target": "/tmp/a\nb.jsonl"}, "control character"),
    ("/api/v1/export", {"target": "/tmp/" + "x" * 5000}, "too large"),
    ("/api/v1/export", {"target": "/tmp/x.jsonl", "format": "pdf"}, "pdf"),
    ("/api/v1/import", {"paths": []}, "1 to 100"),
    ("/api/v1/import", {"paths": ["/nowhere/notes.md"]}, "no such file"),
    ("/api/v1/import", {"paths": ["/tmp"], "scope": "nowhere"}, "nowhere"),
    ("/api/v1/project/unbind", {"folder": "/tmp"}, "not bound"),
    ("/api/v1/project/bind", {"folder": "/tmp", "scope": "global"}, "project scope"),
])
def test_bad_requests_are_one_line_400s(api, route: str, body: dict, needle: str) -> None:
    _, client = api
    r = client.post(route, json=body, headers=AUTH)
    assert r.status_code == 400, r.text
    message = r.json()["error"]["message"]
    assert needle in message and "\n" not in message


def test_export_never_writes_inside_the_home(api) -> None:
    m, client = api
    m.learn("a note")
    r = client.post("/api/v1/export", json={"target": str(m.home / "x.jsonl")}, headers=AUTH)
    assert r.status_code == 400 and not (m.home / "x.jsonl").exists()


def test_bind_and_unbind_a_folder(api, tmp_path: Path) -> None:
    m, client = api
    folder = tmp_path / "api"
    folder.mkdir()
    r = client.post("/api/v1/project/bind", json={"folder": str(folder), "scope": "project:delta"}, headers=AUTH)
    assert r.status_code == 200 and r.json()["scope"] == "project:delta"
    assert resolve(str(folder), m.home).scope == "project:delta"
    r = client.post("/api/v1/project/unbind", json={"folder": str(folder)}, headers=AUTH)
    assert r.status_code == 200 and r.json()["was"] == "project:delta"
    assert resolve(str(folder), m.home).scope != "project:delta"
