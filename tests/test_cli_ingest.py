"""CLI: `plur ingest`, minimal JSONL `plur import`, tag merge on re-learn, recall --type/--tag/--min-score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.memory import Memory

FIX = Path(__file__).resolve().parent / "data" / "ingest"


@pytest.fixture
def run(plur_home: Path):
    def invoke(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--home", str(plur_home), *args], env={"PLUR_MODEL": "none"},
                                  catch_exceptions=False)
    return invoke


def test_ingest_twice_then_recall(run, plur_home: Path) -> None:
    r = run("ingest", str(FIX / "chatgpt_conversations.json"))
    assert r.exit_code == 0 and "ingested 3 new turns (0 already ingested)" in r.stdout and "[chatgpt]" in r.stdout
    r = run("ingest", str(FIX / "chatgpt_conversations.json"), "--json")
    out = json.loads(r.stdout)
    assert out["added"] == [] and out["skipped"] == 3 and out["format"] == "chatgpt"
    r = run("ingest", str(FIX / "chatgpt_conversations.json"), "--assistant", "--json")
    assert len(json.loads(r.stdout)["added"]) == 3     # the assistant turns, now opted in
    assert "Miso" in run("recall", "what does my cat eat").stdout
    with Memory(plur_home, model="none") as m:
        assert {e.source["file"] for e in m.list()} == {"chatgpt_conversations.json"}


def test_ingest_bad_input_is_one_line_exit_2(run, tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    r = run("ingest", str(bad))
    assert r.exit_code == 2 and r.stderr.startswith("plur: error:") and "--format" in r.stderr
    eng = tmp_path / "e.jsonl"
    eng.write_text('{"statement": "a"}\n', encoding="utf-8")
    r = run("ingest", str(eng))
    assert r.exit_code == 2 and "plur import" in r.stderr


def test_import_accepts_a_minimal_jsonl_line(run, plur_home: Path, tmp_path: Path) -> None:
    src = tmp_path / "facts.jsonl"
    src.write_text('{"statement": "The user drinks oat milk."}\n'
                   '{"statement": "Standups are at 9:30.", "scope": "project:team", "tags": ["work"], '
                   '"created": "2024-01-02T03:04:05Z", "valid_until": "2030-01-01"}\n', encoding="utf-8")
    r = run("import", str(src))
    assert r.exit_code == 0 and "imported 2 new engrams" in r.stdout
    with Memory(plur_home, model="none") as m:
        by = {e.statement: e for e in m.list()}
        assert by["The user drinks oat milk."].scope == "global"
        s = by["Standups are at 9:30."]
        assert s.scope == "project:team" and s.tags == ("work",) and s.created.year == 2024 and s.valid_until
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"scope": "global"}\n', encoding="utf-8")
    r = run("import", str(bad))
    assert r.exit_code == 2 and "bad.jsonl:1" in r.stderr and "statement" in r.stderr


def test_relearning_with_new_tags_merges_them_and_says_so(run, plur_home: Path) -> None:
    eid = run("learn", "Use ruff for linting.", "--tag", "python").stdout.strip()
    r = run("learn", "use ruff for  linting.", "--tag", "python", "--tag", "lint")
    assert r.stdout.strip() == f"already known: {eid} (tags added: lint)"
    r = run("learn", "Use ruff for linting.", "--tag", "lint", "--json")
    assert json.loads(r.stdout)["tags_added"] == [] and json.loads(r.stdout)["created"] is False
    with Memory(plur_home, model="none") as m:
        assert m.get(eid).tags == ("python", "lint")
        again = m.learn("Use ruff for linting.", tags=("style",))   # the Python API merges too
        assert again.id == eid and again.tags == ("python", "lint", "style")


def test_recall_type_tag_and_min_score_flags(run) -> None:
    a = run("learn", "Deploy with make deploy.", "--type", "procedure", "--tag", "ops").stdout.strip()
    b = run("learn", "Deploy day is Thursday.", "--tag", "ops", "--tag", "calendar").stdout.strip()
    c = run("learn", "Deploy keys live in the vault.", "--type", "reference").stdout.strip()
    assert set(json_ids(run("recall", "deploy", "--json"))) == {a, b, c}
    assert json_ids(run("recall", "deploy", "--type", "procedure", "--json")) == [a]
    assert set(json_ids(run("recall", "deploy", "--type", "procedure", "--type", "reference", "--json"))) == {a, c}
    assert set(json_ids(run("recall", "deploy", "--tag", "calendar", "--tag", "ops", "--json"))) == {a, b}
    hits = json.loads(run("recall", "deploy", "--json").stdout)
    assert all(0.0 <= h["score"] <= 1.0 for h in hits)
    cut = sorted(h["score"] for h in hits)[1]
    assert len(json_ids(run("recall", "deploy", "--min-score", str(cut), "--json"))) == 2
    r = run("recall", "deploy", "--min-score", "2")
    assert r.exit_code == 2


def json_ids(r: Any) -> list[str]:
    assert r.exit_code == 0, r.output
    return [h["engram"]["id"] for h in json.loads(r.stdout)]


def test_big_ingest_and_the_first_recall_show_progress_on_stderr(plur_home: Path, tmp_path: Path) -> None:
    src = tmp_path / "big.json"
    src.write_text(json.dumps([{"role": "user", "content": f"I hiked trail number {i} last weekend."}
                               for i in range(1200)]), encoding="utf-8")
    env = {"PLUR_MODEL": "none", "PLUR_FSYNC": "false"}
    r = CliRunner().invoke(cli, ["--home", str(plur_home), "ingest", str(src)], env=env, catch_exceptions=False)
    assert r.exit_code == 0 and "ingest (messages)" in r.stderr and "1200/1200" in r.stderr
    r = CliRunner().invoke(cli, ["--home", str(plur_home), "recall", "trail 42", "-k", "1"], env=env,
                           catch_exceptions=False)
    assert "BM25 index" in r.stderr                  # the index catch-up of a fresh process is visible
    assert "trail number 42 " in r.stdout


def test_one_malformed_chatgpt_conversation_leaves_the_others_ingested_and_is_reported(run, tmp_path: Path) -> None:
    convs = json.loads((FIX / "chatgpt_conversations.json").read_text(encoding="utf-8"))
    broken = dict(convs[0], id="broken", current_node="no-such-node")                   # a branch that is not there
    shapeless = {"id": "shapeless", "mapping": {"a": {"id": "a", "message": "not an object", "parent": None,
                                                      "children": []}}, "current_node": "a"}
    src = tmp_path / "conversations.json"
    src.write_text(json.dumps([broken, *convs, 7, shapeless]), encoding="utf-8")
    r = run("ingest", str(src), "--json")
    out = json.loads(r.stdout)
    assert r.exit_code == 2 and len(out["added"]) == 3, r.output                         # the good ones are in
    places = [p["where"] for p in out["problems"]]
    assert places == [f"{src}: conversation 0", f"{src}: conversation {len(convs) + 1}"], out["problems"]
    assert "no-such-node" in out["problems"][0]["reason"]
    assert f"plur: skipped {src}: conversation 0:" in r.stderr and "could not be ingested" in r.stderr
    again = run("ingest", str(src), "--json")                                             # nothing twice
    assert json.loads(again.stdout)["added"] == [] and again.exit_code == 2


def test_one_bad_line_or_a_huge_turn_in_a_claude_code_transcript_is_skipped_not_fatal(run, tmp_path: Path,
                                                                                     plur_home: Path) -> None:
    def event(i: int, text: str) -> str:
        return json.dumps({"type": "user", "sessionId": "s1", "timestamp": f"2025-03-01T10:00:{i:02d}Z",
                           "message": {"role": "user", "content": text}})

    lines = [event(0, "My cat is called Tom."), "{not json", event(2, "x" * (5 * 1024 * 1024)),
             json.dumps(["an", "array"]), event(4, "I live in Lisbon.")]
    src = tmp_path / "session.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = run("ingest", str(src), "--json")
    out = json.loads(r.stdout)
    assert r.exit_code == 2 and len(out["added"]) == 2, r.output
    reasons = " | ".join(f"{p['where']}: {p['reason']}" for p in out["problems"])
    assert len(out["problems"]) == 3, reasons
    assert f"{src}:2: not JSON" in reasons and "5242880 bytes" in reasons and f"{src}:4: expected a JSON object" in reasons
    with Memory(plur_home, model="none") as m:
        assert sorted(e.statement for e in m.list()) == ["I live in Lisbon.", "My cat is called Tom."]


def test_re_ingest_after_an_edit_supersedes_the_changed_turn_and_keeps_the_others_single(run, tmp_path: Path,
                                                                                         plur_home: Path) -> None:
    src = tmp_path / "chat.json"

    def write(*texts: str) -> None:
        src.write_text(json.dumps([{"role": "user", "content": t} for t in texts]), encoding="utf-8")

    write("My cat is Tom.", "I live in Lisbon.", "I work as a nurse.")
    assert "ingested 3 new turns (0 already ingested)" in run("ingest", str(src)).stdout
    write("My cat is Tim.", "I live in Lisbon.", "I work as a nurse.")               # the first turn edited
    r = run("ingest", str(src))
    assert r.exit_code == 0 and "ingested 0 new turns, 1 changed (each supersedes its old version) " \
                                "(2 already ingested)" in r.stdout, r.stdout
    write("My cat is Tim.", "I live in Porto.", "I work as a nurse.", "I drink tea.")  # a middle one, and one more
    out = json.loads(run("ingest", str(src), "--json").stdout)
    assert len(out["added"]) == 1 and len(out["changed"]) == 1 and out["skipped"] == 2
    with Memory(plur_home, model="none") as m:
        active = sorted(e.statement for e in m.list() if e.status == "active")
        assert active == ["I drink tea.", "I live in Porto.", "I work as a nurse.", "My cat is Tim."]
        retired = {e.statement: e for e in m.list() if e.status == "retired"}
        assert set(retired) == {"My cat is Tom.", "I live in Lisbon."}                  # history kept, not current
        new = next(e for e in m.list() if e.statement == "I live in Porto.")
        assert new.supersedes == retired["I live in Lisbon."].id and new.source["turn"] == 1
    again = json.loads(run("ingest", str(src), "--json").stdout)
    assert again["added"] == [] and again["changed"] == [] and again["skipped"] == 4


def test_two_files_whose_chats_open_alike_retire_nothing(run, tmp_path: Path, plur_home: Path) -> None:
    """The trial's case: chat1.json and chat2.json both open with "Hi" / "Hello! How can I help?"."""
    opening = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}]
    for name, last in (("chat1.json", "My sister Lena lives in Vienna."), ("chat2.json", "I am allergic to penicillin.")):
        (tmp_path / name).write_text(json.dumps(opening + [{"role": "user", "content": last}]), encoding="utf-8")
    # "Hi" is a turn with nothing to remember, "Hello! How can I help?" only asks: capture's rules leave both out
    assert "ingested 1 new turn, 1 left out (nothing to remember 1)" in run("ingest", str(tmp_path / "chat1.json")).stdout
    second = run("ingest", str(tmp_path / "chat2.json"))
    assert second.exit_code == 0 and "changed" not in second.stdout and "ingested 1 new turn," in second.stdout
    with Memory(plur_home, model="none") as m:
        assert all(e.status == "active" for e in m.list())
        assert {"My sister Lena lives in Vienna.", "I am allergic to penicillin."} <= {e.statement for e in m.list()}
    assert "ingested 0 new turns" in run("ingest", str(tmp_path / "chat2.json")).stdout  # re-ingest: idempotent
