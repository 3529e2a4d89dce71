"""Which Claude Code memory folders are linked to which scope: ``<home>/links.json``, and each link's sync state.

``links.json`` (owner-only, written atomically)::

    {"version": 1, "links": [{"kind": "claude-code", "folder": "/home/u/.claude/projects/-home-u-app/memory",
                              "scope": "project:app", "project": "/home/u/app"}]}

A link's state (``<home>/links/<key>.json``, :class:`LinkState`) maps each memory file of the folder to its
engram and to the text both had when they last agreed, so a later change is seen on the side it happened.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import StoreError, ValidationError

LINKS_FILE = "links.json"
STATE_DIR = "links"
KINDS = ("claude-code",)


@dataclass(frozen=True)
class Link:
    """A memory folder kept in step with the engrams of ``scope``.

    Attributes:
        kind: ``claude-code``.
        folder: the memory folder (absolute).
        scope: the scope its memories live in.
        project: the project folder it belongs to (``None`` when given as a folder only).
    """

    kind: str
    folder: str
    scope: str
    project: str | None = None

    @property
    def key(self) -> str:
        """A file name for this link's state (a hash of its folder and scope)."""
        return hashlib.sha256(f"{self.folder}\n{self.scope}".encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "folder": self.folder, "scope": self.scope, "project": self.project}


def _write_json(path: Path, data: Any) -> None:
    from ...store.atomic import private_dirs

    private_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise StoreError(f"cannot write {path} ({exc}); check free space and permissions") from None


def _read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        raise StoreError(f"{path} is unreadable ({exc}); fix or remove it") from None


def load_links(home: Path) -> list[Link]:
    """The links of ``home`` (none when ``links.json`` does not exist).

    Raises:
        StoreError: ``links.json`` is not valid.
    """
    data = _read_json(home / LINKS_FILE, {"links": []})
    try:
        return [Link(d["kind"], d["folder"], d["scope"], d.get("project")) for d in data["links"]]
    except (KeyError, TypeError) as exc:
        raise StoreError(f"{home / LINKS_FILE} is not a list of links ({exc}); fix or remove it") from None


def save_link(home: Path, link: Link) -> list[Link]:
    """Add ``link`` (replacing one of the same folder and scope); the links now.

    Raises:
        ValidationError: the folder is linked to another scope (its notes there would be left unlinked, and
            the folder's files learned again into the new scope): ``remove_link`` it first.
    """
    if link.kind not in KINDS:
        raise ValidationError(f"unknown link kind {link.kind!r}; use one of {', '.join(KINDS)}")
    links = load_links(home)
    taken = next((x for x in links if x.folder == link.folder and x.scope != link.scope), None)
    if taken is not None:
        raise ValidationError(f"cannot link {link.folder!r} to {link.scope}: it is linked to {taken.scope}; unlink "
                              f"it first (plur link remove {link.folder}; the notes of {taken.scope} stay)")
    links = [x for x in links if x.folder != link.folder] + [link]
    _write_json(home / LINKS_FILE, {"version": 1, "links": [x.to_dict() for x in links]})
    return links


def remove_link(home: Path, folder: str) -> Link:
    """Remove the link of ``folder``; the link removed (its files and engrams stay as they are).

    Raises:
        ValidationError: no link has that folder (the message lists the linked folders).
    """
    links = load_links(home)
    gone = [x for x in links if x.folder == folder]
    if not gone:
        known = ", ".join(x.folder for x in links) or "none"
        raise ValidationError(f"{folder!r} is not linked (linked folders: {known}); see `plur link list`")
    _write_json(home / LINKS_FILE, {"version": 1, "links": [x.to_dict() for x in links if x.folder != folder]})
    (home / STATE_DIR / f"{gone[0].key}.json").unlink(missing_ok=True)
    return gone[0]


@dataclass
class LinkState:
    """file name -> ``{"id": engram id, "file": sha256 of the file's text, "engram": hash of the engram}``."""

    path: Path
    files: dict[str, dict[str, str]]

    @classmethod
    def load(cls, home: Path, link: Link) -> "LinkState":
        path = home / STATE_DIR / f"{link.key}.json"
        data = _read_json(path, {"files": {}})
        return cls(path, dict(data.get("files") or {}))

    def save(self) -> None:
        _write_json(self.path, {"version": 1, "files": self.files})
