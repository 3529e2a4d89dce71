"""Export never writes inside the home, never overwrites or deletes a file it did not write, and
replaces its own previous export whole (no stale files of forgotten engrams to resurrect)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import learn_id

from plur.store.export_target import MANIFEST_NAME


def test_force_never_overwrites_the_users_own_memory_md(run, tmp_path: Path) -> None:
    learn_id(run, "The dog is Rex.")
    folder = tmp_path / "claude-memory"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("# my own notes\n", encoding="utf-8")
    r = run("export", str(folder), "--force")
    assert r.exit_code == 2 and "did not export" in r.stderr and "MEMORY.md" in r.stderr
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == "# my own notes\n"
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md"]


def test_reexport_replaces_the_previous_export_and_drops_forgotten_engrams(run, tmp_path: Path) -> None:
    keep = learn_id(run, "The dog is Rex.")
    gone = learn_id(run, "The cat is Tom.")
    folder = tmp_path / "out"
    assert run("export", str(folder)).exit_code == 0
    assert (folder / MANIFEST_NAME).is_file()
    assert run("export", str(folder)).exit_code == 2  # a previous export: --force needed
    assert run("forget", "-y", gone).exit_code == 0
    r = run("export", str(folder), "--force")
    assert r.exit_code == 0, r.output
    assert not any(gone[-6:] in p.name for p in folder.iterdir())
    r = run("import", str(folder), "--json")
    assert json.loads(r.stdout)["added"] == [] and json.loads(r.stdout)["already_known"] == [keep]
    assert not list(tmp_path.glob(".out.plur-*"))  # no temp or old folders left beside it


def test_an_exported_file_edited_by_hand_is_not_overwritten(run, tmp_path: Path) -> None:
    learn_id(run, "The dog is Rex.")
    folder = tmp_path / "out"
    assert run("export", str(folder)).exit_code == 0
    note = next(p for p in folder.glob("*.md") if p.name != "MEMORY.md")
    note.write_text(note.read_text(encoding="utf-8") + "\nmy addition\n", encoding="utf-8")
    r = run("export", str(folder), "--force")
    assert r.exit_code == 2 and note.name in r.stderr
    assert note.read_text(encoding="utf-8").endswith("my addition\n")


@pytest.mark.parametrize("fmt", ["jsonl", "plur-yaml"])
def test_file_export_never_replaces_a_file_it_did_not_write(run, tmp_path: Path, fmt: str) -> None:
    learn_id(run, "The dog is Rex.")
    target = tmp_path / ("mine.jsonl" if fmt == "jsonl" else "mine.yaml")
    target.write_text("precious\n", encoding="utf-8")
    r = run("export", str(target), "--format", fmt, "--force")
    assert r.exit_code == 2 and "not written by a plur export" in r.stderr
    assert target.read_text(encoding="utf-8") == "precious\n"
    ours = tmp_path / ("ours.jsonl" if fmt == "jsonl" else "ours.yaml")
    assert run("export", str(ours), "--format", fmt).exit_code == 0
    assert run("export", str(ours), "--format", fmt, "--force").exit_code == 0  # its own: replaced


@pytest.mark.parametrize("where", ["home", "engrams", "engram-file", "index"])
def test_export_never_writes_inside_the_home(run, plur_home: Path, where: str) -> None:
    eid = learn_id(run, "The dog is Rex.")
    engram_file = plur_home / "engrams" / eid[4:11] / f"{eid}.yaml"
    before = engram_file.read_bytes()
    target = {"home": plur_home, "engrams": plur_home / "engrams", "engram-file": engram_file,
              "index": plur_home / "index" / "x.jsonl"}[where]
    fmt = "jsonl" if where in ("engram-file", "index") else "claude-dir"
    r = run("export", str(target), "--format", fmt, "--force")
    assert r.exit_code == 2 and "inside the plur home" in r.stderr
    assert engram_file.read_bytes() == before
    assert json.loads(run("list", "--json").stdout)[0]["id"] == eid


def test_export_through_a_link_into_the_home_is_refused(run, plur_home: Path, tmp_path: Path) -> None:
    learn_id(run, "The dog is Rex.")
    link = tmp_path / "sneaky"
    link.symlink_to(plur_home / "engrams", target_is_directory=True)
    r = run("export", str(link), "--force")
    assert r.exit_code == 2 and "inside the plur home" in r.stderr
