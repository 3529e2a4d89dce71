"""The project identity of a folder (plur.project): git root, registry of roots, bound folders, no `global`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from plur.errors import ValidationError
from plur.project import bind, find, load, resolve, unbind
from plur.project.registry import Registry
from plur.store.engram import SCOPE_RE, check_scope
from project_tree import absolute, build, expected_scope, load_table, write_registry

TABLE = load_table()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = Path(os.path.realpath(tmp_path / "tree"))
    base.mkdir()
    build(base, TABLE)
    return base


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_the_identity_table(tree: Path, plur_home: Path, case: dict) -> None:
    write_registry(plur_home, tree, TABLE)
    project = find(absolute(tree, case["folder"], case.get("absolute", False)), load(plur_home))
    assert (project.scope, project.root, project.how) == (
        expected_scope(tree, case), absolute(tree, case["root"], case.get("absolute", False)), case["how"])
    assert SCOPE_RE.match(project.scope) and project.scope != "global"


def test_the_table_covers_what_the_issue_names() -> None:
    names = " ".join(c["name"] for c in TABLE["cases"])
    for what in ("CJK", "emoji", "spaces", "nested package", "worktree", "clone", "bound", "file system root"):
        assert what in names, what


def test_real_git_worktree_and_submodule(tmp_path: Path, plur_home: Path) -> None:
    """The .git files that real git writes (not only the table's hand-made ones) lead to the right root."""
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "protocol.file.allow=always"]
    main, dep = tmp_path / "main", tmp_path / "dep"
    for repo in (main, dep):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (repo / "f").write_text("x")
        subprocess.run([*git, "-C", str(repo), "add", "f"], check=True)
        subprocess.run([*git, "-C", str(repo), "commit", "-qm", "x"], check=True)
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(tmp_path / "wt" / "feature")], check=True)
    subprocess.run([*git, "-C", str(main), "submodule", "add", "-q", str(dep), "vendor/dep"], check=True,
                   capture_output=True)
    (tmp_path / "wt" / "feature" / "deep").mkdir()
    real = Path(os.path.realpath(tmp_path))
    got = find(tmp_path / "wt" / "feature" / "deep", Registry())
    assert (got.root, got.scope) == (str(real / "main"), "project:main")
    sub = find(main / "vendor" / "dep", Registry())
    assert (sub.root, sub.scope) == (str(real / "main" / "vendor" / "dep"), "project:dep")


def test_a_copied_worktree_git_file_does_not_join_the_repository(tmp_path: Path) -> None:
    """A real worktree's ``.git`` file copied into another folder (a download, an archive) names a git dir
    the repository lists for the worktree only: git's backlink points elsewhere, so the copy is its own project."""
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    main = tmp_path / "proj"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    (main / "f").write_text("x")
    subprocess.run([*git, "-C", str(main), "add", "f"], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-qm", "x"], check=True)
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(tmp_path / "feature")], check=True)
    copy = tmp_path / "downloads" / "feature"
    copy.mkdir(parents=True)
    (copy / ".git").write_bytes((tmp_path / "feature" / ".git").read_bytes())
    real = Path(os.path.realpath(tmp_path))
    assert find(tmp_path / "feature", Registry()).scope == "project:proj"
    got = find(copy, Registry())
    assert (got.root, got.scope) == (str(real / "downloads" / "feature"), "project:feature")


def test_two_clones_register_first_come_first_served(tmp_path: Path, plur_home: Path) -> None:
    for clone in ("a/app", "b/app", "c/app"):
        (tmp_path / clone / ".git").mkdir(parents=True)
    plur_home.mkdir()
    assert resolve(tmp_path / "b/app", plur_home).scope == "project:app"
    assert resolve(tmp_path / "a/app", plur_home).scope == "project:app-2"
    assert resolve(tmp_path / "b/app", plur_home).scope == "project:app"      # once registered, it sticks
    assert resolve(tmp_path / "c/app/sub-does-not-exist", plur_home).scope == "project:app-3"
    roots = json.loads((plur_home / "projects.json").read_text(encoding="utf-8"))["roots"]
    assert sorted(roots.values()) == ["project:app", "project:app-2", "project:app-3"]
    assert (plur_home / "projects.json").stat().st_mode & 0o077 == 0


def test_resolving_never_creates_the_home(tmp_path: Path, plur_home: Path) -> None:
    (tmp_path / "one" / "app" / ".git").mkdir(parents=True)
    got = resolve(tmp_path / "one" / "app", plur_home)
    assert (got.scope, got.registered) == ("project:app", False)
    assert not plur_home.exists()


def test_bind_and_unbind(tmp_path: Path, plur_home: Path) -> None:
    (tmp_path / "front" / ".git").mkdir(parents=True)
    (tmp_path / "back" / "srv").mkdir(parents=True)
    plur_home.mkdir()
    front = resolve(tmp_path / "front", plur_home).scope
    bind(plur_home, tmp_path / "back", front)
    assert resolve(tmp_path / "back" / "srv", plur_home).scope == "project:front"
    assert unbind(plur_home, tmp_path / "back") == "project:front"
    assert resolve(tmp_path / "back" / "srv", plur_home).scope == "project:srv"
    with pytest.raises(ValidationError, match="is not bound"):
        unbind(plur_home, tmp_path / "back")
    with pytest.raises(ValidationError, match="project scope"):
        bind(plur_home, tmp_path / "back", "global")
    with pytest.raises(ValidationError, match="not an existing folder"):
        bind(plur_home, tmp_path / "nowhere", "project:x")


def test_scopes_are_nfc_and_a_bad_one_names_its_character() -> None:
    assert check_scope("project:Cafe\u0301") == "project:Caf\u00e9"
    assert check_scope("project:我的项目") == "project:我的项目"
    with pytest.raises(ValidationError, match=r"'🚀' \(U\+1F680, ROCKET\) is not allowed"):
        check_scope("project:🚀")
    with pytest.raises(ValidationError, match="start with 'project:' or 'agent:'"):
        check_scope("team:x")


def test_an_invalid_registry_is_an_error_naming_it(plur_home: Path) -> None:
    from plur.errors import StoreError

    plur_home.mkdir()
    (plur_home / "projects.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(StoreError, match="projects.json is not valid JSON"):
        load(plur_home)
