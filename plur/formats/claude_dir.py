"""A Claude-style memory folder (``MEMORY.md`` + one markdown file per memory), read and written.

``claude-dir``
A Claude-style memory folder: ``MEMORY.md`` with one ``- [title](file.md) — hook`` line
per memory, and one markdown file per memory with YAML frontmatter ``name``,
``description``, ``type`` (user | feedback | project | reference; or nested as ``metadata: type:``)
and the memory as body. Every other frontmatter key (``modified``, ``metadata``...) is kept on the
engram as it was written (a date keeps its spelling) and written back at the top of the frontmatter.
Exports add a ``plur`` frontmatter mapping (id, scope, tags, created...) so that a
re-import is lossless; folders written by other tools import without it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from ..errors import ValidationError
from ..store.safe_yaml import load_yaml
from .capped import check_depth
from ..store.engram import TYPES, Engram


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
    front = text[start:start + m.start()]
    meta = check_depth(load_yaml(front, what=f"{p}: frontmatter", max_bytes=1 << 20) or {}, f"{p}: frontmatter")
    if not isinstance(meta, dict):
        raise ValidationError(f"{p}: frontmatter must be a mapping (name, description, type)")
    _keep_date_spelling(meta, front)
    return meta, text[start + m.end():]


def _keep_date_spelling(meta: dict[Any, Any], front: str) -> None:
    """Dates (at any depth) as the text they were written as: YAML would read them as times and re-spell them."""
    for key, value in list(meta.items()):
        if isinstance(value, dict):
            _keep_date_spelling(value, front)
        elif isinstance(value, (date, datetime)) and isinstance(key, str):
            raw = re.search(rf"^[ \t]*{re.escape(key)}:[ \t]*['\"]?([^'\"\n]*?)['\"]?[ \t]*$", front, re.M)
            meta[key] = raw[1] if raw else value.isoformat()


def split_frontmatter(text: str, where: str = "memory file") -> tuple[dict[str, Any], str]:
    """``(frontmatter mapping, body)`` of a memory file's text (``{}`` when it has none).

    Raises:
        ValidationError: frontmatter that never ends or is not a mapping.
    """
    return _split_frontmatter(text, Path(where))


def read_claude_dir(folder: Path, scope: str, max_bytes: int | None = None,
                    skipped: list[str] | None = None) -> list[Engram]:
    """The engrams of a Claude memory folder (``MEMORY.md``'s files in its order, then the other ``*.md``).

    Each file is read within ``max_bytes`` (:mod:`plur.formats.capped`). A file that leads out of the folder (a
    symlink to ``../x``, a ``MEMORY.md`` line naming ``../x.md``) is not read (:mod:`plur.formats.inside`): a line
    saying so is appended to ``skipped``; a file in a subfolder or missing is no memory of this folder.

    Raises:
        ValidationError: a file that is not UTF-8, too large, or not a memory (naming it).
    """
    from . import capped
    from .inside import is_inside, outside_note, real_root

    root = real_root(folder)
    order: list[tuple[str, str, str]] = []  # (file, title, hook) from MEMORY.md
    index = folder / "MEMORY.md"
    if index.is_file() and not is_inside(root, index):
        if skipped is not None:
            skipped.append(outside_note(index, folder))
    elif index.is_file():
        for line in capped.read_text(index, max_bytes).splitlines():
            m = INDEX_LINE_RE.match(line)
            if m and not m["file"].startswith(("http://", "https://")):
                order.append((m["file"].strip(), m["title"].strip(), (m["hook"] or "").strip()))
    listed = {f for f, _, _ in order}
    others = sorted(p.name for p in folder.glob("*.md") if p.name != "MEMORY.md" and p.name not in listed)
    out = []
    for name, title, hook in order + [(n, "", "") for n in others]:
        p = (folder / name)
        if not is_inside(root, p):
            if skipped is not None and (p.exists() or p.is_symlink()):
                skipped.append(outside_note(p, folder))
            continue
        if os.path.dirname(os.path.realpath(p)) != root.rstrip(os.sep) or not p.is_file():
            continue  # a file in a subfolder, or a missing one, is no memory of this folder
        text = capped.read_text(p, max_bytes)
        meta, body = _split_frontmatter(text, p)
        try:
            out.append(_claude_engram(meta, body, title, hook, scope))
        except ValidationError as exc:
            raise ValidationError(f"{p}: {exc}") from None
    return out


def memory_type(meta: Mapping[str, Any]) -> str | None:
    """The plur type a memory file's frontmatter gives (``None`` when it gives none).

    ``type``, else Claude Code's nested ``metadata: type:``; but a ``fact`` or ``procedure`` written as
    Claude's ``reference`` or ``feedback`` (Claude Code has four types) keeps its plur type through the
    ``plur: type:`` the file carries (at the top, or moved under ``metadata`` as Claude Code does when it
    edits the file), as long as the file's type is still that type's Claude spelling: a type changed in
    the file wins.
    """
    nested = meta.get("metadata")
    ctype = meta.get("type") or (nested.get("type") if isinstance(nested, Mapping) else None)
    own = plur_block(meta).get("type")
    if own in TYPES and ctype == CLAUDE_TYPE_OUT.get(own, own):
        return str(own)
    return ctype if ctype in TYPES else None


def plur_block(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``plur:`` mapping of a memory file's frontmatter, at the top or under ``metadata`` (``{}``: none)."""
    nested = meta.get("metadata")
    for block in (meta.get("plur"), nested.get("plur") if isinstance(nested, Mapping) else None):
        if isinstance(block, Mapping):
            return block
    return {}


#: A word of any script: letters and digits (``_`` is a separator).
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased, in any script (``"Lena 住在维也纳."`` -> ``["lena", "住在维也纳"]``)."""
    return _WORD.findall(text.lower())


def joined(text: str, sep: str, limit: int) -> str:
    """``text``'s words joined by ``sep``, whole words up to ``limit`` characters (a longer first word is cut);
    ``""`` when it has none. Never an ellipsis: the result names, it does not quote."""
    out = ""
    for w in words(text):
        nxt = f"{out}{sep}{w}" if out else w
        if len(nxt) > limit:
            return out or w[:limit]
        out = nxt
    return out


def claude_name(name: str) -> str:
    """The ``name:`` Claude Code 2.1.328 writes back for ``name`` when it edits a memory file: kept when
    it is a slug of ASCII letters, digits, ``_`` and ``-``, else lower-cased with each run of other characters
    as ``-`` (so a name in another script loses its letters on Claude Code's side)."""
    if re.fullmatch(r"[a-z0-9_-]+", name):
        return name
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _claude_engram(meta: dict[str, Any], body: str, title: str, hook: str, scope: str) -> Engram:
    native = meta.get("plur")
    top = {k: v for k, v in meta.items() if k not in ("plur", "type", "name", "description")}
    if isinstance(native, Mapping):
        statement = body[1:] if body.startswith("\n") else body
        statement = statement[:-1] if statement.endswith("\n") else statement
        return Engram.from_dict({**native, **top, "statement": statement})
    name = meta.get("name") or title or None
    description = meta.get("description") or hook or None
    statement = body.strip() or (str(description) if description else "")
    extra = {k: v for k, v in meta.items() if k not in ("name", "description", "type")}
    if name:
        extra["name"] = str(name)
    if description:
        extra["description"] = str(description)
    nested = meta.get("metadata")
    modified = meta.get("modified") or (nested.get("modified") if isinstance(nested, Mapping) else None)
    return Engram.create(statement, scope=scope, type=memory_type(meta) or "reference",
                         created=_when(modified), extra=extra)


def _when(value: Any) -> datetime | None:
    """A ``modified`` date of a memory file as a time (``None`` when it is none)."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def respell(original: str, when: datetime) -> str:
    """``when`` written the way ``original`` writes a time (``2026-08-03``, ``...T10:00:00.000Z``, ``...+00:00``)."""
    when = when.astimezone(timezone.utc)
    if re.fullmatch(r"\d{4}-\d\d-\d\d", original.strip()):
        return when.strftime("%Y-%m-%d")
    sep = " " if re.match(r"\d{4}-\d\d-\d\d ", original.strip()) else "T"
    ms = re.search(r":\d\d\.(\d+)", original)
    text = when.strftime(f"%Y-%m-%d{sep}%H:%M:%S") + (f".{when.microsecond:06d}"[:1 + len(ms[1])] if ms else "")
    return text + ("Z" if original.strip().endswith("Z") or "+" not in original[10:] else "+00:00")


def _slug(text: str) -> str:
    return joined(text, "_", 40) or "memory"


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
    for k in ("statement", "content_hash", *(k for k in e.extra if k not in ("name", "description"))):
        native.pop(k, None)
    ctype = CLAUDE_TYPE_OUT.get(e.type, e.type)
    meta: dict[str, Any] = {"name": title, "description": hook}
    nested = e.extra.get("metadata")
    if isinstance(nested, Mapping) and "type" in nested:
        meta["metadata"] = {**nested, "type": ctype}
    else:
        meta["type"] = ctype
    for k, v in e.extra.items():
        meta.setdefault(k, v)
    for m in (meta, meta.get("metadata")):  # changed since: the new date, in the same spelling
        if isinstance(m, dict) and isinstance(m.get("modified"), str) and e.updated is not None \
                and (_when(m["modified"]) or e.updated) < e.updated:
            m["modified"] = respell(m["modified"], e.updated)
    meta["plur"] = native
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1 << 30)
    for m in (meta, meta.get("metadata")):  # a date read unquoted is written unquoted, as it came
        for k, v in (m.items() if isinstance(m, dict) else ()):
            if k != "plur" and isinstance(v, str) and _when(v) is not None:
                front = re.sub(rf"(\n[ ]*{re.escape(k)}: )'({re.escape(v)})'\n", r"\1\2\n", front)
    return f"{_slug(title)}_{e.id[-6:]}.md", title, hook, f"---\n{front}---\n\n{e.statement}\n"
