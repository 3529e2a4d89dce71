"""plur link claude-code: a Claude Code memory folder and a scope kept in step both ways (one sync at a time,
in-process), and the running service doing it on its own when a file or an engram changes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.hosts.claude_link import Link, reconcile, save_link
from plur.memory import Memory

SCOPE = "project:app"
PNPM = ("---\nname: Uses pnpm\ndescription: package manager convention\nmetadata:\n  type: project\n"
        "modified: 2026-08-03T10:00:00.000Z\n---\n\nThis repository uses pnpm; never npm install.\n")


@pytest.fixture
def mem(plur_home: Path) -> Any:
    m = Memory(plur_home, model="none")
    yield m
    m.close()


def linked(mem: Any, tmp_path: Path) -> tuple[Link, Path]:
    folder = tmp_path / "memory"
    folder.mkdir()
    link = Link("claude-code", str(folder), SCOPE, str(tmp_path))
    save_link(Path(mem.home), link)
    return link, folder


def scope_texts(mem: Any) -> dict[str, Any]:
    return {e.statement: e for e in mem.list(scope=SCOPE, status="active")}


def test_files_and_engrams_follow_each_other_both_ways(mem: Any, tmp_path: Path) -> None:
    link, folder = linked(mem, tmp_path)
    (folder / "project_pnpm.md").write_text(PNPM)
    (folder / "MEMORY.md").write_text("# Memory index\n\n- [Uses pnpm](project_pnpm.md) — package manager convention\n")
    report = reconcile(mem, link)
    assert report.to_engrams == ["project_pnpm.md"]
    e = scope_texts(mem)["This repository uses pnpm; never npm install."]
    assert e.type == "project" and e.extra["modified"] == "2026-08-03T10:00:00.000Z"
    assert not reconcile(mem, link).changed                                  # nothing changed: nothing written

    learned = mem.learn("Staging deploys go through Argo CD.", scope=SCOPE, type="project")
    report = reconcile(mem, link)
    assert len(report.to_files) == 1
    new_file = folder / report.to_files[0]
    assert "Staging deploys go through Argo CD." in new_file.read_text() and "type: project" in new_file.read_text()
    index = (folder / "MEMORY.md").read_text()
    assert f"]({new_file.name}) — " in index and "[Uses pnpm](project_pnpm.md)" in index   # Claude's line kept

    (folder / "project_pnpm.md").write_text(PNPM.replace("never npm install", "never npm or yarn"))
    assert reconcile(mem, link).to_engrams == ["project_pnpm.md"]
    assert "This repository uses pnpm; never npm or yarn." in scope_texts(mem)

    mem.update(e.id, statement="This repository uses pnpm 9; never npm or yarn.")
    assert reconcile(mem, link).to_files == ["project_pnpm.md"]
    text = (folder / "project_pnpm.md").read_text()
    assert "pnpm 9" in text and "metadata:\n  type: project\n" in text
    assert __import__("re").search(r"\nmodified: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n", text)  # same spelling

    new_file.unlink()                                                         # deleted in the folder
    assert reconcile(mem, link).forgotten == [learned.id]
    assert "Staging deploys go through Argo CD." not in scope_texts(mem)
    assert new_file.name not in (folder / "MEMORY.md").read_text()

    mem.forget(e.id)                                                          # forgotten in plur
    assert reconcile(mem, link).deleted_files == ["project_pnpm.md"]
    assert not (folder / "project_pnpm.md").exists() and "project_pnpm.md" not in (folder / "MEMORY.md").read_text()


def test_two_edits_that_cross_keep_both_texts_and_name_the_conflict(mem: Any, tmp_path: Path) -> None:
    link, folder = linked(mem, tmp_path)
    (folder / "user_tabs.md").write_text("---\nname: Tabs\ndescription: indentation\ntype: feedback\n---\n\n"
                                         "Indent with tabs.\n")
    reconcile(mem, link)
    e = scope_texts(mem)["Indent with tabs."]
    (folder / "user_tabs.md").write_text("---\nname: Tabs\ndescription: indentation\ntype: feedback\n---\n\n"
                                         "Indent with tabs, width 4.\n")
    mem.update(e.id, statement="Indent with tabs; Makefiles need them.")
    report = reconcile(mem, link)
    assert report.conflicts == ["user_tabs.md"]
    merged = mem.get(e.id)
    assert "Indent with tabs, width 4." in merged.statement and "Makefiles need them." in merged.statement
    assert "conflict" in merged.statement and "conflict" in merged.tags
    assert merged.statement in (folder / "user_tabs.md").read_text()
    assert not reconcile(mem, link).changed


def test_a_deleted_file_whose_engram_was_edited_meanwhile_comes_back(mem: Any, tmp_path: Path) -> None:
    link, folder = linked(mem, tmp_path)
    e = mem.learn("The cache runs on host cache7.", scope=SCOPE)
    name = reconcile(mem, link).to_files[0]
    (folder / name).unlink()
    mem.update(e.id, statement="The cache runs on host cache8.")
    reconcile(mem, link)
    assert "cache8" in (folder / name).read_text() and mem.get(e.id).status == "active"


def test_plur_link_claude_code_cli_links_the_project_folder(plur_home: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "app"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    run = CliRunner()
    r = run.invoke(cli, ["--home", str(plur_home), "link", "claude-code", str(project), "--json"],
                   env={"PLUR_MODEL": "none"}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    from plur.project import resolve
    from plur.formats.chats.sources import encode_project

    assert out["scope"] == resolve(project, plur_home).scope
    assert out["folder"] == str(tmp_path / "claude" / "projects" / encode_project(project) / "memory")
    r = run.invoke(cli, ["--home", str(plur_home), "link", "list"], env={"PLUR_MODEL": "none"})
    assert out["folder"] in r.stdout
    r = run.invoke(cli, ["--home", str(plur_home), "link", "remove", str(project)], env={"PLUR_MODEL": "none"})
    assert r.exit_code == 0 and "unlinked" in r.stdout


def test_plur_link_claude_code_refuses_a_project_folder_that_does_not_exist(plur_home: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo linked ~/.claude/projects/<typo>/memory (and made it) to project:<typo>, exit 0, like a real project."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    env = {"PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "0"}
    missing = tmp_path / "ap"
    r = CliRunner().invoke(cli, ["--home", str(plur_home), "link", "claude-code", str(missing)], env=env)
    assert r.exit_code == 2 and f"cannot link {str(missing)!r}: not an existing folder" in r.stderr, r.output
    assert "--memory-dir" in r.stderr and not (tmp_path / "claude").exists()
    assert "no linked folders" in CliRunner().invoke(cli, ["--home", str(plur_home), "link", "list"], env=env).stdout
    memory = tmp_path / "synced" / "memory"                  # a project of another machine: name its memory folder
    r = CliRunner().invoke(cli, ["--home", str(plur_home), "link", "claude-code", str(missing), "--memory-dir",
                                 str(memory), "--json"], env=env)
    assert r.exit_code == 0 and json.loads(r.stdout)["folder"] == str(memory), r.output


#: The shape Claude Code 2.1.328 gives a memory file it writes (it rewrites the Write tool's frontmatter so).
CLAUDE_WRITTEN = ("---\nname: sister-in-vienna\ndescription: \"where the user's sister lives\"\nmetadata:\n"
                  "  node_type: memory\n  type: user\n  originSessionId: 0a1b2c3d-0000-4000-8000-000000000001\n"
                  "  modified: 2026-11-02T09:14:15.764Z\n---\n\nThe user's sister Lena moved to Vienna.\n")


def test_claude_codes_own_frontmatter_round_trips_with_the_date_in_its_spelling(mem: Any, tmp_path: Path) -> None:
    link, folder = linked(mem, tmp_path)
    (folder / "user_sister.md").write_text(CLAUDE_WRITTEN)
    reconcile(mem, link)
    e = scope_texts(mem)["The user's sister Lena moved to Vienna."]
    assert e.type == "user" and e.extra["metadata"]["modified"] == "2026-11-02T09:14:15.764Z"
    assert e.created.isoformat().startswith("2026-11-02T09:14:15")
    mem.update(e.id, statement="The user's sister Lena moved to Vienna in March.")
    reconcile(mem, link)
    text = (folder / "user_sister.md").read_text()
    assert "name: sister-in-vienna\n" in text and "  node_type: memory\n  type: user\n" in text
    assert "originSessionId: 0a1b2c3d-0000-4000-8000-000000000001" in text
    import re

    assert re.search(r"\n  modified: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n", text), text
    assert "2026-11-02T09:14:15.764Z" not in text                     # re-dated: the engram changed


def test_two_files_with_one_text_share_an_engram_and_deleting_one_keeps_the_other(mem: Any, tmp_path: Path) -> None:
    link, folder = linked(mem, tmp_path)
    for name in ("project_a.md", "project_b.md"):
        (folder / name).write_text("---\nname: x\ndescription: y\ntype: project\n---\n\nThe API listens on 8080.\n")
    reconcile(mem, link)
    assert len(scope_texts(mem)) == 1
    (folder / "project_a.md").unlink()
    assert reconcile(mem, link).forgotten == []
    assert (folder / "project_b.md").exists() and "The API listens on 8080." in scope_texts(mem)


def test_a_key_in_a_memory_file_is_not_stored_in_plur(mem: Any, tmp_path: Path) -> None:
    link, folder = linked(mem, tmp_path)
    key = "ghp_" + "Kd7" * 12
    (folder / "reference_token.md").write_text(f"---\nname: t\ndescription: t\ntype: reference\n---\n\nCI uses {key}.\n")
    reconcile(mem, link)
    (e,) = mem.list(scope=SCOPE)
    assert key not in e.statement and "[redacted" in e.statement
    assert not [p for p in Path(mem.home).rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert not reconcile(mem, link).changed                                   # no loop between the two texts
