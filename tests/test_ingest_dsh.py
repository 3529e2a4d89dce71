"""``plur ingest`` of DeepSeek Harness sessions (real rc.8 session logs, tests/data/ingest/dsh): a DSH home, its
sessions folder, one workspace's folder or one session file; each session's user turns under its workspace's
project; DSH's own user-role messages (runtime context) left out; idempotent."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.memory import Memory
from plur.project import resolve
from plur.formats import chats as conv
from plur.formats.chats import dsh

SESSIONS = Path(__file__).resolve().parent / "data" / "ingest" / "dsh" / "sessions"
LENA = "My sister Lena moved to Vienna last spring."
BILLING = "Our billing service deploys every Thursday at noon."


@pytest.fixture
def run(plur_home: Path):
    def invoke(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--home", str(plur_home), *args], env={"PLUR_MODEL": "none"},
                                  catch_exceptions=False)
    return invoke


def _stored(home: Path) -> list[Any]:
    with Memory(home, model="none") as m:
        return m.list()


def test_a_session_log_gives_the_typed_turns_with_provenance_compressed_or_raw() -> None:
    files = dsh.sessions(SESSIONS)
    assert sorted(f.name for f, _ in files) == ["session.jsonl", "session.jsonl.zstd"]
    by_cwd = {cwd: f for f, cwd in files}
    assert set(by_cwd) == {"/home/dev/我的项目", "/home/dev/billing app"}
    for cwd, text in (("/home/dev/我的项目", LENA), ("/home/dev/billing app", BILLING)):
        data = conv.load(by_cwd[cwd])
        assert conv.detect_format(data) == "dsh"
        turns = conv.parse(data)
        assert [(t.role, t.text) for t in turns] == [("user", text), ("assistant", "ok")], \
            "the runtime-context snapshot (a plugin's user-role message) is not a turn"
        assert turns[0].session == data[0]["id"] and turns[0].extra["cwd"] == cwd
        assert [t.turn for t in turns] == [0, 0], "numbered as the plugin's capture: the answer shares its question's"
        assert turns[0].created is not None and turns[0].created.year >= 2026


def test_plur_ingest_of_a_dsh_home_files_each_session_under_its_workspace_project_once(
        run, plur_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "dsh-home"
    shutil.copytree(SESSIONS, home / "sessions")
    r = run("ingest", str(home), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert len(out["added"]) == 2 and out["format"] in ("dsh", ["dsh"])
    stored = _stored(plur_home)
    assert sorted(e.statement for e in stored) == sorted([LENA, BILLING])
    scopes = Counter(e.scope for e in stored)
    # the sister fact is about the user: it follows the user to global, as capture routes it (route_personal)
    assert scopes == {"global": 1, resolve("/home/dev/billing app", plur_home).scope: 1}
    files = [f["scope"] for f in out["files"]]          # each session under its workspace's project
    assert sorted(files) == sorted([resolve("/home/dev/我的项目", plur_home).scope,
                                             resolve("/home/dev/billing app", plur_home).scope])
    assert "project:我的项目" in files, "the CJK workspace is its own project, not global"
    lena = next(e for e in stored if e.statement == LENA)
    assert lena.type == "user" and lena.source["format"] == "dsh" and lena.source["role"] == "user"
    # idempotent: the home again, its sessions folder, one workspace, one file: nothing new
    for again in (home, home / "sessions", next((home / "sessions").iterdir()),
                  next((home / "sessions").rglob("session.jsonl*"))):
        r = run("ingest", str(again), "--json")
        assert r.exit_code == 0 and json.loads(r.stdout)["added"] == [], (again, r.output)
    assert len(_stored(plur_home)) == 2


def test_a_damaged_compressed_log_is_one_clear_error(run, tmp_path: Path) -> None:
    bad = tmp_path / "--home-dev-x--" / "session-1" / "session.jsonl.zstd"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not zstandard at all")
    r = run("ingest", str(bad))
    assert r.exit_code == 2
    assert "not a Zstandard file" in r.output


def test_a_session_the_plugin_captured_live_is_not_stored_twice_when_its_log_is_ingested(plur_home: Path,
                                                                                        tmp_path: Path) -> None:
    from plur.store.engram import Engram

    log = next(f for f, cwd in dsh.sessions(SESSIONS) if cwd == "/home/dev/我的项目")
    sid = conv.load(log)[0]["id"]
    scope = "project:我的项目"
    with Memory(plur_home, model="none") as m:
        # what the DSH plugin's capture stored while the session ran (format capture, same session and number)
        m.store.add_many([Engram.create(LENA, scope=scope, type="user", source={
            "kind": "conversation", "format": "capture", "session": sid, "turn": 0, "role": "user"})], dedupe=False)
        out = m.ingest(log, scope=scope, roles=("user", "assistant"), rules=False)
        assert [(e.source["role"], e.statement) for e in out.added] == [("assistant", "ok")], \
            "the captured user turn is known; only the answer is new"
        assert m.ingest(log, scope=scope, roles=("user", "assistant")).added == ()   # "ok": nothing to remember
        assert [e.statement for e in m.list(scope=scope)].count(LENA) == 1
