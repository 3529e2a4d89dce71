"""Where an export may write: never inside the home, never over a file plur did not write.

Every export records what it wrote in a manifest, ``.plur-export.json``, in the folder it wrote
to (for a ``claude-dir`` export the folder itself; for a ``jsonl`` / ``plur-yaml`` file, the file's
folder)::

    {"plur_export": 1, "files": {"<file name>": "<sha256 hex of its bytes>", ...}}

Rules (:func:`check_file_target`, :func:`replace_folder`):

* the target may not be the home, lie inside it, or resolve (through links) into it;
* an existing file is replaced only with ``force`` *and* when the manifest says plur wrote it and
  its bytes are unchanged since (so a person's own ``MEMORY.md`` or an edited export is never
  overwritten, ``--force`` or not);
* a folder export is built beside the target and swapped in with two renames, so the previous
  export is replaced whole (files of engrams forgotten since disappear with it) and a crash leaves
  the old or the new folder; a folder holding anything plur did not write is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from ..errors import StoreError, ValidationError
from .atomic import private_dirs

MANIFEST_NAME = ".plur-export.json"


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(folder: Path) -> dict[str, str]:
    """``{file name: sha256}`` of what plur exported into ``folder`` ({} when none or unreadable)."""
    try:
        data = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def write_manifest(folder: Path, files: dict[str, str]) -> None:
    """Write ``folder/.plur-export.json`` atomically."""
    from .atomic import atomic_write

    atomic_write(folder / MANIFEST_NAME,
                 json.dumps({"plur_export": 1, "files": dict(sorted(files.items()))}, indent=1).encode("utf-8"))


def check_outside_home(target: Path, home: Path | None) -> None:
    """Refuse a target that is the home or inside it (links resolved).

    Raises:
        ValidationError: naming the target and the home.
    """
    if home is None:
        return
    t, h = target.resolve(), Path(home).expanduser().resolve()
    if t == h or h in t.parents:
        raise ValidationError(f"export target {str(target)!r} is inside the plur home {h}; an export there could "
                              "overwrite engram files: choose a path outside the home")


def _ours(folder: Path, name: str, manifest: dict[str, str]) -> bool:
    p = folder / name
    try:
        return name in manifest and p.is_file() and not p.is_symlink() and sha256_file(p) == manifest[name]
    except OSError:
        return False


def check_file_target(target: Path, force: bool) -> None:
    """May a ``jsonl`` / ``plur-yaml`` export write ``target``? See the module docstring.

    Raises:
        ValidationError: it exists and plur did not write it (or it changed since), or ``force`` is off.
    """
    if not target.exists() and not target.is_symlink():
        return
    if target.is_dir():
        raise ValidationError(f"{str(target)!r} is a folder; a file export needs a file path")
    if not _ours(target.parent, target.name, read_manifest(target.parent)):
        raise ValidationError(f"{str(target)!r} exists and was not written by a plur export (or was changed "
                              "since); plur never overwrites it: choose another path or move it away")
    if not force:
        raise ValidationError(f"{str(target)!r} holds a previous plur export; pass --force to replace it")


def record_file(target: Path) -> None:
    """After a file export: list ``target`` in its folder's manifest."""
    manifest = read_manifest(target.parent)
    manifest[target.name] = sha256_file(target)
    write_manifest(target.parent, manifest)


def replace_folder(target: Path, force: bool, build: Callable[[Path], dict[str, str]]) -> None:
    """Write a folder export: ``build(tmp)`` fills a new folder beside ``target``, which then replaces it.

    Args:
        target: the export folder (missing, empty, or a previous plur export).
        force: allow replacing a previous export.
        build: writes the export's files into the folder it is given; returns ``{name: sha256}``.

    Raises:
        ValidationError: ``target`` is a file, or holds anything plur did not write (or changed since),
            or is a previous export and ``force`` is off.
        StoreError: the disk write failed (the previous export is left as it was).
    """
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise ValidationError(f"{str(target)!r} is a file or a link; a claude-dir export needs a folder path")
    existing = sorted(p.name for p in target.iterdir()) if target.is_dir() else []
    if existing:
        manifest = read_manifest(target)
        foreign = [n for n in existing if n != MANIFEST_NAME and not _ours(target, n, manifest)]
        if foreign:
            shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
            raise ValidationError(f"folder {str(target)!r} holds files plur did not export (or that changed since): "
                                  f"{shown}; plur never overwrites or deletes them: choose an empty folder")
        if not force:
            raise ValidationError(f"folder {str(target)!r} holds a previous plur export; pass --force to replace it")
    parent = target.parent
    tag = secrets.token_hex(4)
    tmp = parent / f".{target.name}.plur-export-{tag}"
    old = parent / f".{target.name}.plur-old-{tag}"
    try:
        private_dirs(parent)
        tmp.mkdir(mode=0o700)  # an export holds the memory: owner-only like the home
        files = build(tmp)
        write_manifest(tmp, files)
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
    except (OSError, StoreError) as exc:
        if old.exists() and not target.exists():
            os.replace(old, target)
        raise StoreError(f"cannot write the export {target} ({exc}); check free space and permissions "
                         "(the previous export is unchanged)") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


__all__ = ["MANIFEST_NAME", "check_file_target", "check_outside_home", "read_manifest", "record_file",
           "replace_folder"]
