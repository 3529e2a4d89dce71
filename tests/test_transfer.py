"""Import/export formats: JSONL, PLUR engrams.yaml, Claude-style memory folder."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from plur.store.engram import Engram
from plur.errors import ValidationError
from plur.formats.transfer import FORMATS, detect_format, from_plur, read_engrams, to_plur, write_engrams

#: Shaped like the TypeScript PLUR's engrams.yaml (packages/core/src/schemas/engram.ts):
#: ids ENG-YYYY-MMDD-NNN, its four types, free-form scopes, activation/relations/feedback blocks.
PLUR_FILE = """\
engrams:
- id: ENG-2026-0406-001
  version: 2
  status: active
  consolidated: false
  type: behavioral
  scope: global
  visibility: private
  statement: "Always run the tests before committing: `make test`."
  rationale: CI is slow; catch failures locally.
  domain: dev/testing
  tags: [testing, git]
  activation:
    retrieval_strength: 0.7
    storage_strength: 1.0
    frequency: 3
    last_accessed: '2026-04-10'
  feedback_signals: {positive: 2, negative: 0, neutral: 1}
  temporal:
    learned_at: '2026-04-06T09:30:00Z'
  content_hash: abc123
  pinned: true
- id: ENG-2026-0407-002
  status: dormant
  type: procedural
  scope: group:plur/test
  statement: |-
    Deploy:
    1. tag the release
    2. push the tag
  source: session 2026-04-07
  relations:
    broader: []
    narrower: []
    related: [ENG-2026-0406-001]
    conflicts: []
- id: ENG-2026-0408-003
  status: candidate
  type: architectural
  scope: project:my-app
  statement: The API server is stateless; sessions live in Redis.
  tags: []
- id: META-2026-0409-004
  status: retired
  type: terminological
  scope: user:alice
  statement: "“Engram” means one stored memory. 今天玩成语接龙游戏"
  temporal:
    learned_at: '2026-04-09'
    valid_until: '2027-01-01'
"""

CLAUDE_INDEX = """\
# Memory index

- [User prefers tabs](user_prefers_tabs.md) — indentation: tabs, width 4
- [Testing policy](feedback_testing.md) — integration tests hit a real database
- [Broken link](missing.md) — points nowhere
"""
CLAUDE_FILES = {
    "user_prefers_tabs.md": "---\nname: User prefers tabs\ndescription: indentation with tabs, width 4\n"
                            "type: user\n---\n\nThe user indents code with tabs, displayed 4 wide.\n",
    "feedback_testing.md": "---\nname: Testing policy\ndescription: integration tests hit a real database\n"
                           "type: feedback\n---\n\nIntegration tests must hit a real database, not mocks.\n\n"
                           "**Why:** a mocked migration once passed while prod broke.\n",
    "not_in_index.md": "---\nname: Stray\ntype: project\n---\nA memory file the index forgot.\n",
}


def sample() -> list[Engram]:
    return [
        Engram.create('Gov: Root "x"', tags=["a", "b"], scope="project:x", type="procedure",
                      source={"kind": "chat", "session": "s1", "turn": 3}, domain="dev", rationale="why",
                      pinned=True, valid_from="2025-01-01", valid_until="2030-01-01 12:00", extra={"zz": [1, 2]}),
        Engram.create("---\n- x\n#1)\ttab “curly” 🙂\n", type="user", created="2025-07-25 02:00"),
        Engram.create("今天玩成语接龙游戏", scope="agent:bot", status="retired",
                      supersedes="ENG-2025-01-01-abcdef"),
        Engram.create("fact with a\u2028line separator", type="reference"),
    ]


@pytest.mark.parametrize("fmt, name", [("jsonl", "x.jsonl"), ("plur-yaml", "x.yaml"), ("claude-dir", "mem")])
def test_round_trip_is_lossless(tmp_path: Path, fmt: str, name: str) -> None:
    engrams = sample()
    assert write_engrams(engrams, tmp_path / name, fmt) == len(engrams)
    back = read_engrams(tmp_path / name)  # format detected from the path
    assert [e.to_dict() for e in back] == [e.to_dict() for e in engrams]


def test_detect_format() -> None:
    assert detect_format("a.jsonl") == "jsonl" and detect_format("a.ndjson") == "jsonl"
    assert detect_format("engrams.yaml") == "plur-yaml" and detect_format("x.yml") == "plur-yaml"
    assert detect_format("some-folder") == "claude-dir"
    with pytest.raises(ValidationError, match="--format"):
        detect_format("notes.txt")
    assert set(FORMATS) == {"jsonl", "plur-yaml", "claude-dir"}


# -- PLUR -------------------------------------------------------------------------------
def test_plur_file_maps_onto_engrams(tmp_path: Path) -> None:
    src = tmp_path / "engrams.yaml"
    src.write_text(PLUR_FILE, encoding="utf-8")
    a, b, c, d = read_engrams(src)
    assert (a.type, b.type, c.type, d.type) == ("feedback", "procedure", "project", "reference")
    assert (a.status, b.status, c.status, d.status) == ("active", "active", "retired", "retired")
    assert (a.scope, b.scope, c.scope, d.scope) == ("global", "project:group.plur/test", "project:my-app",
                                                    "project:user.alice")
    assert a.created == datetime(2026, 4, 6, 9, 30, tzinfo=timezone.utc)
    assert b.created == datetime(2026, 4, 7, tzinfo=timezone.utc)  # from the id's date
    assert d.valid_until == datetime(2027, 1, 1, tzinfo=timezone.utc)
    assert a.tags == ("testing", "git") and a.pinned and a.domain == "dev/testing"
    assert a.rationale == "CI is slow; catch failures locally."
    assert b.statement == "Deploy:\n1. tag the release\n2. push the tag"
    assert b.source == {"kind": "plur", "text": "session 2026-04-07"}
    assert a.extra["activation"]["frequency"] == 3 and a.extra["visibility"] == "private"
    assert b.extra["relations"]["related"] == ["ENG-2026-0406-001"]
    assert all(e.id.startswith("ENG-") for e in (a, b, c, d))


def test_plur_file_survives_import_and_export(tmp_path: Path) -> None:
    src = tmp_path / "engrams.yaml"
    src.write_text(PLUR_FILE, encoding="utf-8")
    out = tmp_path / "out.yaml"
    write_engrams(read_engrams(src), out)
    original = yaml.safe_load(PLUR_FILE)["engrams"]
    exported = yaml.safe_load(out.read_text(encoding="utf-8"))["engrams"]
    for before, after in zip(original, exported, strict=True):
        assert {k: after[k] for k in before} == before  # every PLUR field comes back unchanged
        assert list(after)[: len(before)] == list(before)  # in the same order
        assert set(after) - set(before) <= {"plur_py"}


def test_edits_made_in_plur_after_export_win(tmp_path: Path) -> None:
    e = Engram.create("Prefer small pull requests.", type="feedback", tags=["git"])
    entry = to_plur(e)
    entry["type"] = "procedural"
    entry["tags"] = ["git", "review"]
    entry["statement"] = "Prefer small, focused pull requests."
    back = from_plur(entry)
    assert back.id == e.id and back.type == "procedure" and back.tags == ("git", "review")
    assert back.statement == "Prefer small, focused pull requests."
    assert from_plur(to_plur(e)).to_dict() == e.to_dict()  # unedited: exact


def test_bad_plur_files_are_refused_with_a_location(tmp_path: Path) -> None:
    p = tmp_path / "engrams.yaml"
    p.write_text("something: else\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="'engrams:' list"):
        read_engrams(p)
    p.write_text("engrams:\n- id: ENG-1\n  type: behavioral\n  statement: ''\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"engram #1 \(ENG-1\).*empty"):
        read_engrams(p)
    p.write_text("engrams: [\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="not valid YAML"):
        read_engrams(p)


# -- Claude memory folder ---------------------------------------------------------------
def write_claude_folder(folder: Path) -> None:
    folder.mkdir()
    (folder / "MEMORY.md").write_text(CLAUDE_INDEX, encoding="utf-8")
    for name, text in CLAUDE_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")


def test_claude_folder_written_by_another_tool_imports(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    write_claude_folder(folder)
    tabs, testing, stray = read_engrams(folder, scope="project:editor")
    assert tabs.statement == "The user indents code with tabs, displayed 4 wide." and tabs.type == "user"
    assert testing.statement.startswith("Integration tests must hit a real database")
    assert "**Why:**" in testing.statement and testing.type == "feedback"
    assert stray.type == "project" and stray.statement == "A memory file the index forgot."
    assert {e.scope for e in (tabs, testing, stray)} == {"project:editor"}
    assert tabs.extra == {"name": "User prefers tabs", "description": "indentation with tabs, width 4"}
    out = tmp_path / "again"
    write_engrams([tabs, testing, stray], out)
    index = (out / "MEMORY.md").read_text(encoding="utf-8")
    assert "- [User prefers tabs](user_prefers_tabs_" in index and "— indentation with tabs, width 4" in index
    assert [e.to_dict() for e in read_engrams(out)] == [e.to_dict() for e in (tabs, testing, stray)]


def test_claude_export_files_have_the_expected_shape(tmp_path: Path) -> None:
    e = Engram.create("Deploys happen on Tuesdays only.\nNever on Fridays.", type="fact")
    write_engrams([e], tmp_path / "mem")
    (md,) = [p for p in (tmp_path / "mem").glob("*.md") if p.name != "MEMORY.md"]
    text = md.read_text(encoding="utf-8")
    front, body = text.split("---\n")[1], text.split("---\n", 2)[2]
    meta = yaml.safe_load(front)
    assert meta["name"] == "Deploys happen on Tuesdays only. Never on Fridays."
    assert meta["type"] == "reference" and meta["plur"]["type"] == "fact" and meta["plur"]["id"] == e.id
    assert body == "\nDeploys happen on Tuesdays only.\nNever on Fridays.\n"
    lines = (tmp_path / "mem" / "MEMORY.md").read_text(encoding="utf-8").splitlines()
    assert lines[2] == f"- [{meta['name']}]({md.name}) — {meta['description']}"


def test_claude_frontmatter_without_end_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    folder.mkdir()
    (folder / "broken.md").write_text("---\nname: x\ntype: user\nno end here\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="never ends"):
        read_engrams(folder)


# -- JSONL and writing rules ------------------------------------------------------------
def test_jsonl_errors_name_the_line(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    good = json.dumps(Engram.create("ok").to_dict())
    p.write_text(f"{good}\n\n{{not json\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"x\.jsonl:3: not a JSON object"):
        read_engrams(p)
    p.write_text(good + "\n" + json.dumps({"id": "../../x", "statement": "s", "scope": "global",
                                           "created": "2025-01-01"}) + "\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"x\.jsonl:2: invalid engram id"):
        read_engrams(p)


def test_export_refuses_to_clobber_without_force(tmp_path: Path) -> None:
    engrams = sample()
    target = tmp_path / "x.jsonl"
    write_engrams(engrams[:1], target)
    with pytest.raises(ValidationError, match="--force"):
        write_engrams(engrams, target)
    assert len(read_engrams(target)) == 1
    write_engrams(engrams, target, force=True)
    assert len(read_engrams(target)) == len(engrams)
    folder = tmp_path / "mem"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine", encoding="utf-8")
    for force in (False, True):  # a folder with files plur did not write is refused, --force or not
        with pytest.raises(ValidationError, match="did not export"):
            write_engrams(engrams, folder, "claude-dir", force=force)
    assert sorted(p.name for p in folder.iterdir()) == ["keep.txt"]


def test_import_scope_is_the_default_of_entries_without_one_in_every_format(tmp_path: Path) -> None:
    """`plur import F --scope S` was applied to claude-dir only: JSONL and engrams.yaml entries went to global."""
    from plur.formats.transfer import read_engrams

    jl = tmp_path / "a.jsonl"
    jl.write_text('{"statement": "no scope here"}\n{"statement": "mine", "scope": "agent:x"}\n', encoding="utf-8")
    assert [e.scope for e in read_engrams(jl, scope="project:atlas")] == ["project:atlas", "agent:x"]
    assert [e.scope for e in read_engrams(jl)] == ["global", "agent:x"]
    py = tmp_path / "engrams.yaml"
    py.write_text("engrams:\n  - statement: no scope here\n  - statement: mine\n    scope: agent:x\n", encoding="utf-8")
    assert [e.scope for e in read_engrams(py, scope="project:atlas")] == ["project:atlas", "agent:x"]
    assert [e.scope for e in read_engrams(py)] == ["global", "agent:x"]



def test_re_importing_an_export_with_a_retired_engram_adds_nothing(tmp_path: Path) -> None:
    """A retired engram is not merged as an exact duplicate, so each re-import stored another copy of it."""
    from click.testing import CliRunner

    from plur.cli import cli

    env = {"PLUR_HOME": str(tmp_path / "a"), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "0"}
    runner = CliRunner()
    old = runner.invoke(cli, ["learn", "My sister Lena lives in Vienna.", "--json"], env=env)
    old_id = json.loads(old.stdout)["engram"]["id"]
    assert runner.invoke(cli, ["supersede", old_id, "My sister Lena lives in Graz."], env=env).exit_code == 0
    for name in ("all.jsonl", "all.yaml", "claude"):
        assert runner.invoke(cli, ["export", str(tmp_path / name)], env=env).exit_code == 0
        b = {**env, "PLUR_HOME": str(tmp_path / f"b-{name}")}
        first = runner.invoke(cli, ["import", str(tmp_path / name)], env=b)
        assert "imported 2 new engrams, 0 already known" in first.stdout, (name, first.output)
        for _ in range(2):
            again = runner.invoke(cli, ["import", str(tmp_path / name)], env=b)
            assert "imported 0 new engrams, 2 already known" in again.stdout, (name, again.output)
    clash = tmp_path / "clash.jsonl"
    clash.write_text(json.dumps({"id": old_id, "statement": "Totally different text"}) + "\n", encoding="utf-8")
    b = {**env, "PLUR_HOME": str(tmp_path / "b-all.jsonl")}
    got = runner.invoke(cli, ["import", str(clash), "--json"], env=b)
    out = json.loads(got.stdout)
    assert len(out["added"]) == 1 and out["new_ids"] == {old_id: out["added"][0]} and out["added"][0] != old_id
