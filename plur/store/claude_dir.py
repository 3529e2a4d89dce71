"""A Claude-style memory folder (``MEMORY.md`` + one markdown file per memory), read and written.

``claude-dir``
A Claude-style memory folder: ``MEMORY.md`` with one ``- [title](file.md) — hook`` line
per memory, and one markdown file per memory with YAML frontmatter ``name``,
``description``, ``type`` (user | feedback | project | reference) and the memory as body.
Exports add a ``plur`` frontmatter mapping (id, scope, tags, created...) so that a
re-import is lossless; folders written by other tools import without it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import ValidationError
from .safe_yaml import load_yaml
from .engram import TYPES, Engram


CLAUDE_TYPES = ("user", "feedback", "project", "reference")
#: plur types with no Claude equivalent, written as this Claude type (the ``plur`` frontmatter keeps the real one).
CLAUDE_TYPE_OUT = {"fact": "reference", "procedure": "feedback"}
INDEX_LINE_RE = re.compile(r"^\s*[-*]\s*\[(?P<title>[^\]]*)\]\((?P<file>[^)]+)\)\s*(?:[—–-]+\s*(?P<hook>.*))?$")


def _split_frontmatter(text: str, p: Path) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return {}, text
    start = text.index("\n") + 1
    m = re.search(r"^---[ \t]*\r?\n?", text[start:], re.M)
    if m is None:
        raise ValidationError(f"{p}: frontmatter starts with '---' but never ends; add a closing '---' line")
    meta = load_yaml(text[start:start + m.start()], what=f"{p}: frontmatter", max_bytes=1 << 20) or {}
    if not isinstance(meta, dict):
        raise ValidationError(f"{p}: frontmatter must be a mapping (name, description, type)")
    return meta, text[start + m.end():]


def read_claude_dir(folder: Path, scope: str) -> list[Engram]:
    order: list[tuple[str, str, str]] = []  # (file, title, hook) from MEMORY.md
    index = folder / "MEMORY.md"
    if index.is_file():
        for line in index.read_text(encoding="utf-8").splitlines():
            m = INDEX_LINE_RE.match(line)
            if m and not m["file"].startswith(("http://", "https://")):
                order.append((m["file"].strip(), m["title"].strip(), (m["hook"] or "").strip()))
    listed = {f for f, _, _ in order}
    others = sorted(p.name for p in folder.glob("*.md") if p.name != "MEMORY.md" and p.name not in listed)
    out = []
    for name, title, hook in order + [(n, "", "") for n in others]:
        p = (folder / name)
        if p.resolve().parent != folder.resolve() or not p.is_file():
            continue  # links outside the folder or to missing files are not memories of this folder
        try:
            text = p.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"{p}: not UTF-8 text ({exc})") from None
        meta, body = _split_frontmatter(text, p)
        try:
            out.append(_claude_engram(meta, body, title, hook, scope))
        except ValidationError as exc:
            raise ValidationError(f"{p}: {exc}") from None
    return out


def _claude_engram(meta: dict[str, Any], body: str, title: str, hook: str, scope: str) -> Engram:
    native = meta.get("plur")
    if isinstance(native, Mapping):
        statement = body[1:] if body.startswith("\n") else body
        statement = statement[:-1] if statement.endswith("\n") else statement
        return Engram.from_dict({**native, "statement": statement})
    name = meta.get("name") or title or None
    description = meta.get("description") or hook or None
    statement = body.strip() or (str(description) if description else "")
    ctype = meta.get("type")
    extra = {k: v for k, v in meta.items() if k not in ("name", "description", "type")}
    if name:
        extra["name"] = str(name)
    if description:
        extra["description"] = str(description)
    return Engram.create(statement, scope=scope, type=ctype if ctype in TYPES else "reference",
                         extra=extra)


def _slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = ""
    for w in words:
        if len(out) + len(w) + 1 > 40:
            break
        out = f"{out}_{w}" if out else w
    return out or "memory"


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0] if " " in line[:limit] else line[:limit]
    return cut.rstrip(" ,;:.") + "…"


def claude_file(e: Engram) -> tuple[str, str, str, str]:
    """-> (file name, title, hook, file text)."""
    title = str(e.extra.get("name") or _one_line(e.statement, 60))
    hook = str(e.extra.get("description") or _one_line(e.statement, 150))
    native = e.to_dict()
    native.pop("statement", None)
    native.pop("content_hash", None)
    meta = {"name": title, "description": hook, "type": CLAUDE_TYPE_OUT.get(e.type, e.type), "plur": native}
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1 << 30)
    return f"{_slug(title)}_{e.id[-6:]}.md", title, hook, f"---\n{front}---\n\n{e.statement}\n"
