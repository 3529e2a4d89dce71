"""Bringing memory along: claude.ai's four memory shapes, ChatGPT's saved memories and export .zip, Claude Code
project folders, plain notes; the preview, the secret screen, format errors, the Claude memory folder round trip."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.memory import Memory

DATA = Path(__file__).resolve().parent / "data"
FIX = DATA / "imports"
CHATS = DATA / "ingest"

#: fixture -> (notes, Counter of types, a tag every note of a section carries)
SHAPES = {
    "claude_settings.txt": (7, {"user": 2, "feedback": 2, "project": 2, "reference": 1}, "section:technical-setup"),
    "claude_prose.txt": (4, {"project": 3, "user": 1}, "section:top-of-mind"),
    "claude_cards.md": (3, {"fact": 1, "user": 1, "feedback": 1}, "section:garden-allotment"),
    "claude_bold.md": (3, {"project": 2, "user": 1}, "section:personal-context"),
    "chatgpt_memories.txt": (5, {"user": 5}, "chatgpt-import"),
    "notes.md": (4, {"fact": 3, "procedure": 1}, "section:home-network"),
}


@pytest.fixture
def run(plur_home: Path):
    def invoke(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--home", str(plur_home), *args], env={"PLUR_MODEL": "none"},
                                  catch_exceptions=False)
    return invoke


def engrams(home: Path) -> list[Any]:
    with Memory(home, model="none") as m:
        return m.list()


def files_of(home: Path) -> set[str]:
    folder = home / "engrams"
    return {p.name for p in folder.rglob("*.yaml")} if folder.exists() else set()


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_import_shape_gives_its_notes_types_and_tags_and_a_second_import_adds_nothing(
        run, plur_home: Path, name: str) -> None:
    count, types, tag = SHAPES[name]
    preview = run("import", str(FIX / name), "--dry-run")
    assert preview.exit_code == 0, preview.output
    assert f"would import {count} new engram" in preview.stdout and "nothing written" in preview.stdout
    assert files_of(plur_home) == set()                                   # the preview wrote nothing
    first_type = next(iter(types))
    assert f"  {first_type} (" in preview.stdout                          # counts per type, first notes shown
    r = run("import", str(FIX / name), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert len(out["added"]) == count and out["already_known"] == []
    got = engrams(plur_home)
    assert Counter(e.type for e in got) == Counter(types)
    assert any(tag in e.tags for e in got)
    importer = "chatgpt-import" if name.startswith("chatgpt") else "notes-import" if name == "notes.md" \
        else "claude-import"
    assert all(importer in e.tags for e in got)
    again = json.loads(run("import", str(FIX / name), "--json").stdout)
    assert again["added"] == [] and len(again["already_known"]) == count
    assert len(engrams(plur_home)) == count


def test_claude_settings_export_drops_the_unknown_marker_and_keeps_dates(run, plur_home: Path) -> None:
    run("import", str(FIX / "claude_settings.txt"))
    by_text = {e.statement: e for e in engrams(plur_home)}
    assert "Speaks Dutch and Tamil at home" in by_text                   # "[unknown] - " is gone
    assert by_text["Uses SI units only"].created.date().isoformat() == "2026-05-02"


def test_memory_cards_with_one_title_merge_into_one_note_with_every_line_once(run, plur_home: Path) -> None:
    run("import", str(FIX / "claude_cards.md"))
    garden = [e for e in engrams(plur_home) if e.extra.get("name") == "Garden allotment"]
    assert len(garden) == 1
    text = garden[0].statement
    assert text.count("Rents allotment plot 14") == 1 and "rain barrel" in text and "broad beans" in text
    assert garden[0].extra["updated_on"] == ["2026-06-11", "2026-08-03"]
    assert garden[0].created.date().isoformat() == "2026-08-03"


def test_an_api_key_inside_an_imported_note_is_not_stored(run, plur_home: Path, tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "Q7v" * 30
    src = tmp_path / "export.txt"
    src.write_text((FIX / "claude_settings.txt").read_text().replace(
        "## TECHNICAL SETUP\n", f"## TECHNICAL SETUP\n[unknown] - Deploys the dashboard with the token {key}\n"))
    r = run("import", str(src))
    assert r.exit_code == 0 and "imported 8 new engrams" in r.stdout and "removed 1 credential" in r.stderr
    deploy = next(e for e in engrams(plur_home) if "Deploys the dashboard" in e.statement)
    assert key not in deploy.statement and "[redacted" in deploy.statement
    with Memory(plur_home, model="none") as m:
        assert sum(m.stats.screened_counts().values()) == 1                 # counted, as capture's are
    assert not [p for p in plur_home.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]


def test_several_paths_and_a_folder_of_notes_import_together(run, plur_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("claude_prose.txt", "notes.md"):
        shutil.copy(FIX / name, folder / name)
    r = run("import", str(folder), str(FIX / "claude_bold.md"), "--json")
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)["added"]) == 4 + 4 + 3


def test_a_plain_list_that_could_be_either_list_format_names_both(run, tmp_path: Path) -> None:
    src = tmp_path / "list.txt"
    src.write_text("Dentist on Tuesday\nCall the plumber about the boiler\nBuy oat milk\n")
    r = run("import", str(src))
    assert r.exit_code == 2
    assert "chatgpt-memory" in r.stderr and "notes" in r.stderr and "--format" in r.stderr
    r = run("import", str(src), "--format", "chatgpt-memory", "--json")
    assert r.exit_code == 0 and len(json.loads(r.stdout)["added"]) == 3


def test_a_chat_export_given_to_import_points_at_ingest(run) -> None:
    r = run("import", str(CHATS / "chatgpt_conversations.json"))
    assert r.exit_code == 2 and "plur ingest" in r.stderr


def test_chatgpt_export_zip_ingests_like_its_conversations_json(run, plur_home: Path, tmp_path: Path) -> None:
    zipped = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.write(CHATS / "chatgpt_conversations.json", "conversations.json")
        z.writestr("chat.html", "<html></html>")
    preview = run("ingest", str(zipped), "--dry-run")
    assert preview.exit_code == 0 and "would ingest 3 new turns" in preview.stdout and files_of(plur_home) == set()
    r = run("ingest", str(zipped), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["format"] == "chatgpt" and len(out["added"]) == 3
    assert json.loads(run("ingest", str(zipped), "--json").stdout)["added"] == []
    empty = tmp_path / "other.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("notes.txt", "hello")
    r = run("ingest", str(empty))
    assert r.exit_code == 2 and "no conversations.json" in r.stderr


def test_a_wrong_format_that_reads_nothing_is_an_error_naming_the_right_one(run, plur_home: Path) -> None:
    r = run("ingest", str(CHATS / "chatgpt_conversations.json"), "--format", "claude-code")
    assert r.exit_code == 2, r.output
    assert "holds no turns" in r.stderr and "chatgpt" in r.stderr
    assert files_of(plur_home) == set()
    r = run("import", str(FIX / "notes.md"), "--format", "claude-memory")
    assert r.exit_code == 2 and "holds nothing to import" in r.stderr


def _claude_projects(root: Path, app: Path) -> Path:
    """A ~/.claude/projects folder with two projects: ``app`` (exists here) and one from another machine."""
    from plur.formats.chats.sources import encode_project

    projects = root / "projects"
    lines = (CHATS / "claude_code.jsonl").read_text().splitlines()
    for folder, cwd in ((encode_project(app), str(app)), ("-home-someone-billing", "/home/someone/billing")):
        (projects / folder).mkdir(parents=True)
        for n in range(2):
            text = "\n".join(line.replace('"/home/dev/billing"', json.dumps(cwd))
                             .replace("3f9b2c1e-8d4a-4e7b-a1c2-5d6e7f8a9b0c", f"session-{folder}-{n}")
                             for line in lines)
            (projects / folder / f"session-{n}.jsonl").write_text(text + "\n")
    return projects


def test_a_whole_claude_code_projects_folder_lands_each_project_in_its_scope(run, plur_home: Path,
                                                                              tmp_path: Path) -> None:
    from plur.cli.imports import project_scope

    app = tmp_path / "work" / "app"
    app.mkdir(parents=True)
    projects = _claude_projects(tmp_path / "claude", app)
    one = len(json.loads(run("ingest", str(CHATS / "claude_code.jsonl"), "--json", "--dry-run").stdout)["added"])
    assert files_of(plur_home) == set()
    r = run("ingest", str(projects), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    # each project's two sessions say the same sentences: stored once per scope (issue 46 F), the repeats left out
    assert len(out["files"]) == 4 and len(out["added"]) == 2 * one
    scopes = Counter(e.scope for e in engrams(plur_home))
    assert scopes == {project_scope(app, plur_home): one, "project:billing": one}
    assert json.loads(run("ingest", str(projects), "--json").stdout)["added"] == []
    # one project's folder, every session of it
    r = run("ingest", str(next(projects.iterdir())), "--json")
    assert r.exit_code == 0 and len(json.loads(r.stdout)["files"]) == 2


def test_claude_memory_folder_frontmatter_round_trips(run, plur_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("# Memory index\n\n- [Uses pnpm](project_pnpm.md) — package manager\n")
    (folder / "project_pnpm.md").write_text(
        "---\nname: Uses pnpm\ndescription: package manager\nmetadata:\n  type: project\n"
        "modified: 2026-08-03T10:00:00.000Z\n---\n\nThis repository uses pnpm; never npm install.\n")
    (folder / "user_tabs.md").write_text(
        "---\nname: Tabs\ndescription: indentation\ntype: feedback\nmodified: 2026-07-01\n---\n\nIndent with tabs.\n")
    assert run("import", str(folder)).exit_code == 0
    types = {e.statement: e.type for e in engrams(plur_home)}
    assert types == {"This repository uses pnpm; never npm install.": "project", "Indent with tabs.": "feedback"}
    out = tmp_path / "out"
    assert run("export", str(out)).exit_code == 0
    texts = {p.name: p.read_text() for p in out.glob("*.md") if p.name != "MEMORY.md"}
    pnpm = next(t for t in texts.values() if "pnpm" in t)
    tabs = next(t for t in texts.values() if "tabs" in t)
    assert "metadata:\n  type: project\n" in pnpm and "\nmodified: 2026-08-03T10:00:00.000Z\n" in pnpm
    assert "\ntype: feedback\n" in tabs and "\nmodified: 2026-07-01\n" in tabs
    other = tmp_path / "home2"
    r = CliRunner().invoke(cli, ["--home", str(other), "import", str(out)], env={"PLUR_MODEL": "none"})
    assert r.exit_code == 0
    again = {e.statement: (e.type, e.extra.get("modified")) for e in engrams(other)}
    assert again["This repository uses pnpm; never npm install."] == ("project", "2026-08-03T10:00:00.000Z")


def test_an_api_key_inside_an_ingested_turn_is_not_stored(run, plur_home: Path, tmp_path: Path) -> None:
    key = "ghp_" + "Zx9" * 12
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": f"The deploy bot pushes with the token {key} to blue7."},
                                {"role": "assistant", "content": "Noted."}]))
    preview = run("ingest", str(chat), "--dry-run", "--json")
    assert key not in preview.stdout and json.loads(preview.stdout)["secrets_removed"] == 1
    r = run("ingest", str(chat))
    assert r.exit_code == 0 and "removed 1 credential" in r.stderr
    (turn,) = engrams(plur_home)
    assert "blue7" in turn.statement and key not in turn.statement
    assert not [p for p in plur_home.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert json.loads(run("ingest", str(chat), "--json").stdout)["added"] == []   # re-ingest: nothing new


def test_a_claude_code_memory_folder_imports_into_its_projects_scope(run, plur_home: Path, tmp_path: Path) -> None:
    from plur.cli.imports import project_scope
    from plur.formats.chats.sources import encode_project

    app = tmp_path / "src" / "my-app"
    app.mkdir(parents=True)
    folder = tmp_path / "claude" / "projects" / encode_project(app) / "memory"
    folder.mkdir(parents=True)
    (folder / "feedback_tabs.md").write_text("---\nname: tabs\ndescription: indentation\nmetadata:\n  type: feedback\n"
                                             "---\n\nIndent with tabs.\n")
    scope = project_scope(app, plur_home, register=False)
    r = run("import", str(folder), "--dry-run")             # the preview says where the notes would land
    assert r.exit_code == 0 and f"into {scope} (--dry-run" in r.stdout, r.stdout
    assert json.loads(run("import", str(folder), "--dry-run", "--json").stdout)["scopes"] == [scope]
    r = run("import", str(folder))
    assert r.exit_code == 0 and f"from {folder} into {scope}" in r.stdout, r.stdout
    (e,) = engrams(plur_home)
    assert e.scope == project_scope(app, plur_home) and e.type == "feedback"


def test_claude_ai_data_export_zip_ingests_its_conversations(run, plur_home: Path, tmp_path: Path) -> None:
    zipped = tmp_path / "data-2026-04-03.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.write(CHATS / "claude_ai_conversations.json", "conversations.json")
        z.writestr("users.json", "[]")
    r = run("ingest", str(zipped), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["format"] == "claude-ai" and len(out["added"]) == 3
    by_text = {e.statement: e for e in engrams(plur_home)}
    flood = by_text["The route along the Oude Rijn floods in February, so I take the train then."]
    assert flood.source["session"] == "5d1c7e0a-3f4b-4c2e-9a10-6b7c8d9e0f11" and flood.source["turn"] == 2
    assert flood.source["title"] == "Bike commute planning" and flood.created.isoformat().startswith("2026-03-14T08:05")
    assert "My starter lives in the fridge and I feed it on Fridays." in by_text        # the text field alone
    assert json.loads(run("ingest", str(zipped), "--json").stdout)["added"] == []


def test_notes_given_to_ingest_or_as_jsonl_point_at_import(run) -> None:
    r = run("ingest", str(FIX / "claude_settings.txt"))
    assert r.exit_code == 2 and "claude.ai's memory" in r.stderr and "plur import" in r.stderr
    r = run("ingest", str(FIX / "notes.md"))
    assert r.exit_code == 2 and "plur import" in r.stderr
    r = run("import", str(FIX / "claude_settings.txt"), "--format", "jsonl")
    assert r.exit_code == 2 and "drop --format" in r.stderr


def test_chat_histories_given_to_import_point_at_ingest_at_every_shape(run, plur_home: Path, tmp_path: Path) -> None:
    """A Claude Code session, a folder of them, a message list as JSON Lines, and JSON that is neither: each
    gets one line naming what it is and the command for it (was: 'engram is missing required field statement'
    for the first three, and 'looks like a chat export' for any .json)."""
    from plur.errors import ValidationError
    from plur.formats.transfer import read_engrams

    projects = _claude_projects(tmp_path / "claude", tmp_path / "app")
    session = next(next(projects.iterdir()).iterdir())
    r = run("import", str(projects))
    assert r.exit_code == 2 and f"plur ingest {projects}" in r.stderr and "chat histories (claude-code" in r.stderr
    for target in (session, CHATS / "claude_code.jsonl"):
        for extra in ((), ("--format", "jsonl")):
            r = run("import", str(target), *extra)
            assert r.exit_code == 2 and f"plur ingest {target}" in r.stderr and "chat history (claude-code)" in r.stderr
            assert "missing required field" not in r.stderr
    messages = tmp_path / "chat.jsonl"
    messages.write_text("".join(json.dumps(m) + "\n" for m in json.loads((CHATS / "messages.json").read_text())))
    r = run("import", str(messages))
    assert r.exit_code == 2 and "chat history (messages)" in r.stderr
    with pytest.raises(ValidationError, match="plur ingest"):       # the Python door says the same
        read_engrams(session)
    odd = tmp_path / "settings.json"
    odd.write_text('{"theme": "dark"}')
    r = run("import", str(odd))
    assert r.exit_code == 2 and "looks like a chat export" not in r.stderr and "--format" in r.stderr and "JSON Lines" in r.stderr
    assert files_of(plur_home) == set()
    ok = tmp_path / "engrams.jsonl"                                  # engrams as JSON Lines still import
    ok.write_text(json.dumps({"statement": "The staging database is refreshed nightly."}) + "\n")
    assert run("import", str(ok)).exit_code == 0 and len(files_of(plur_home)) == 1


def test_chatgpt_memories_copied_with_the_dialogs_title_are_chatgpts(run, plur_home: Path, tmp_path: Path) -> None:
    """Copied from ChatGPT's memory dialog, the list comes under its title: that line became a note of its own
    and the whole list was read as notes (type fact, notes-import) instead of ChatGPT's (type user)."""
    want = FIX.joinpath("chatgpt_memories.txt").read_text().splitlines()
    for head in ("Saved memories\n\n", "Saved memories\n", "Manage memories:\n"):
        for bullet in ("", "- "):
            src = tmp_path / "memories.txt"
            src.write_text(head + "".join(f"{bullet}{line}\n" for line in want))
            r = run("import", str(src), "--dry-run", "--json")
            assert r.exit_code == 0, r.output
            got = json.loads(r.stdout)["preview"]
            assert [e["statement"] for e in got] == want, (head, bullet)
            assert {e["type"] for e in got} == {"user"} and all("chatgpt-import" in e["tags"] for e in got)
    prose = tmp_path / "notes.txt"                 # a title over prose paragraphs stays notes
    prose.write_text("Memories\n\nWe hiked the Rota Vicentina in May.\nIt rained on day two.\n\n"
                     "The ferry to Porto Santo leaves at 8.\nBook it a week ahead.\n")
    r = run("import", str(prose), "--dry-run", "--json")
    assert r.exit_code == 0 and all("notes-import" in e["tags"] for e in json.loads(r.stdout)["preview"])
    assert files_of(plur_home) == set()


def test_ingest_of_a_projects_folder_names_the_memory_folders_it_left_alone(run, plur_home: Path,
                                                                            tmp_path: Path) -> None:
    """`plur ingest ~/.claude/projects` read the sessions and said nothing of the memory folders beside them."""
    projects = _claude_projects(tmp_path / "claude", tmp_path / "app")
    memory = next(projects.iterdir()) / "memory"
    memory.mkdir()
    (memory / "MEMORY.md").write_text("# Memory index\n\n- [tabs](feedback_tabs.md) — indentation\n")
    (memory / "feedback_tabs.md").write_text("---\nname: tabs\ndescription: indentation\ntype: feedback\n---\n\n"
                                             "Indent with tabs.\n")
    for target in (projects, memory.parent):
        r = run("ingest", str(target), "--dry-run")
        assert r.exit_code == 0 and f"1 Claude Code memory folder beside the sessions (e.g. {memory})" in r.stderr
        assert f"plur import {memory}" in r.stderr
    r = run("ingest", str(projects), "--dry-run", "--json")        # --json: the document alone
    assert r.exit_code == 0 and "memory folder" not in r.stderr
    assert "memory folder" not in run("ingest", str(CHATS / "claude_code.jsonl"), "--dry-run").stderr
