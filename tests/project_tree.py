"""Build the folder tree of ``tests/data/project_identity.json`` (the table the DSH plugin's node test reads too)."""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parent / "data" / "project_identity.json"


def load_table() -> dict[str, Any]:
    return json.loads(TABLE.read_text(encoding="utf-8"))


def build(base: Path, table: dict[str, Any]) -> None:
    """Make the table's tree under ``base`` (git repositories as plain .git folders and files, no git needed)."""
    for item in table["tree"]:
        if "dir" in item:
            (base / item["dir"]).mkdir(parents=True, exist_ok=True)
        elif "git" in item:
            (base / item["git"] / ".git").mkdir(parents=True, exist_ok=True)
        elif "worktree" in item:
            name = Path(item["worktree"]).name
            gitdir = base / item["of"] / ".git" / "worktrees" / name
            gitdir.mkdir(parents=True, exist_ok=True)
            (gitdir / "commondir").write_text("../..\n", encoding="utf-8")
            tree = base / item["worktree"]
            tree.mkdir(parents=True, exist_ok=True)
            rel = item.get("relative", False)
            (tree / ".git").write_text(f"gitdir: {os.path.relpath(gitdir, tree) if rel else gitdir}\n", encoding="utf-8")
            back = tree / ".git"  # the backlink git writes: the repository lists this worktree
            (gitdir / "gitdir").write_text(f"{os.path.relpath(back, gitdir) if rel else back}\n", encoding="utf-8")
        elif "file" in item:
            (base / item["file"]).parent.mkdir(parents=True, exist_ok=True)
            (base / item["file"]).write_text(item["text"], encoding="utf-8")
        elif "submodule" in item:
            name = Path(item["submodule"]).name
            gitdir = base / item["in"] / ".git" / "modules" / name
            gitdir.mkdir(parents=True, exist_ok=True)
            (base / item["submodule"]).mkdir(parents=True, exist_ok=True)
            depth = len(Path(item["submodule"]).relative_to(item["in"]).parts)
            rel = "/".join([".."] * depth) + f"/.git/modules/{name}"
            (base / item["submodule"] / ".git").write_text(f"gitdir: {rel}\n", encoding="utf-8")


def absolute(base: Path, rel: str, is_absolute: bool = False) -> str:
    return rel if is_absolute else str(base / rel)


def registry_json(base: Path, table: dict[str, Any]) -> dict[str, Any]:
    reg = table["registry"]
    return {"version": 1, "roots": {absolute(base, k): v for k, v in reg["roots"].items()},
            "bound": {absolute(base, k): v for k, v in reg["bound"].items()}}


def expected_scope(base: Path, case: dict[str, Any]) -> str:
    if "scope" in case:
        return case["scope"]
    path = absolute(base, case["scope_hash_of"], case.get("absolute", False))
    return "project:folder-" + hashlib.sha256(unicodedata.normalize("NFC", path).encode("utf-8")).hexdigest()[:8]


def write_registry(home: Path, base: Path, table: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "projects.json").write_text(json.dumps(registry_json(base, table), ensure_ascii=False), encoding="utf-8")


__all__ = ["TABLE", "absolute", "build", "expected_scope", "load_table", "os", "registry_json", "write_registry"]
