"""What the note importers share: one note as parsed (:class:`Note`), a section's type and tag. Pure.

A section heading ("## IDENTITY", "Work context", "**Top of mind**", a Markdown ``#`` heading, a
memory card's title) decides the note's plur type by keywords (:data:`SECTION_TYPES`, first match
wins) and becomes a tag ``section:<slug>``; every note of one import also carries the importer's
tag (``claude-import``, ``chatgpt-import``, ``notes-import``), so an import can be listed or undone
as one (``plur list --tag claude-import``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: (keywords, type): a heading holding one of the keywords (lower-cased, whole words or word starts)
#: gives that type. Order matters: "work preferences" is a preference (feedback), not a project.
SECTION_TYPES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("instruction", "preference", "style", "tone", "format", "feedback", "correction", "rule"), "feedback"),
    (("identity", "personal", "about", "background", "career", "education", "academic", "family",
      "interest", "hobb", "biograph", "life", "history"), "user"),
    (("technical", "setup", "environment", "tool", "stack", "config", "reference", "link", "resource"),
     "reference"),
    (("project", "work", "top of mind", "goal", "plan", "current", "recent", "task"), "project"),
    (("procedure", "how to", "how-to", "workflow", "steps", "recipe"), "procedure"),
)


@dataclass(frozen=True)
class Note:
    """One note an importer read, before it becomes an engram.

    Attributes:
        statement: the text to remember (never blank).
        type: a plur type (``user``, ``project``, ``feedback``, ``reference``, ``fact``, ``procedure``).
        tags: the importer's tag and ``section:<slug>``.
        created: a date the source gave (a memory card's "updated", a fact's "[2026-05-02]"), else ``None``.
        extra: more fields kept on the engram (``name`` of a memory card, ``updated_on`` dates...).
    """

    statement: str
    type: str
    tags: tuple[str, ...]
    created: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def section_type(heading: str, default: str = "fact") -> str:
    """The plur type of a section heading (:data:`SECTION_TYPES`); ``default`` when no keyword matches."""
    words = " " + re.sub(r"[^\w]+", " ", heading.lower()).strip() + " "
    for keys, kind in SECTION_TYPES:
        if any((" " + k) in words for k in keys):
            return kind
    return default


def slug(heading: str) -> str:
    """``"TECHNICAL SETUP"`` -> ``"technical-setup"`` (letters and digits of any script kept; at most 48)."""
    out = "-".join(re.findall(r"\w+", heading.lower().replace("_", " ")))
    return out[:48].strip("-") or "untitled"


def note(statement: str, heading: str, importer_tag: str, *, default_type: str = "fact",
         created: datetime | None = None, **extra: Any) -> Note:
    """A :class:`Note` under ``heading`` (type from the heading, tags ``importer_tag`` and ``section:<slug>``)."""
    tags = (importer_tag, f"section:{slug(heading)}") if heading else (importer_tag,)
    return Note(statement.strip(), section_type(heading, default_type) if heading else default_type, tags,
                created, {k: v for k, v in extra.items() if v is not None})


def paragraphs(lines: list[str]) -> list[str]:
    """Blank-line separated paragraphs; a Markdown list item (``-``, ``*``, ``1.``) is a paragraph of its own."""
    out: list[str] = []
    cur: list[str] = []
    for line in lines:
        item = re.match(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(.*)$", line)
        if not line.strip() or item:
            if cur:
                out.append(" ".join(cur))
            cur = [item[1].strip()] if item else []
            continue
        cur.append(line.strip())
    if cur:
        out.append(" ".join(cur))
    return [p for p in out if p]
