"""Notes people bring along as text: claude.ai's memory, ChatGPT's saved memories, plain text and Markdown.

Formats (:data:`TEXT_FORMATS`): ``claude-memory`` (:mod:`.claude_ai`, four shapes), ``chatgpt-memory``
and ``notes`` (:mod:`.plain`). :func:`detect_text` tells them apart by content; :func:`read_text_notes`
parses; :func:`to_engrams` makes engrams of a scope. Pure: no store, no index.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import ValidationError
from ...store.engram import Engram
from . import claude_ai, plain
from .sections import Note

TEXT_FORMATS: tuple[str, ...] = ("claude-memory", "chatgpt-memory", "notes")
#: File suffixes read as text notes when no other format claims them.
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".text", "")


def detect_text(text: str, where: str, suffix: str = "") -> str:
    """The note format of ``text`` (one of :data:`TEXT_FORMATS`).

    A claude.ai shape wins; a Markdown file is ``notes``; a list of ChatGPT-worded lines is
    ``chatgpt-memory``; paragraphs are ``notes``.

    Raises:
        ValidationError: a plain one-per-line list that could be either list format (naming both
            candidates and the ``--format`` that picks one), or a file with no text.
    """
    if not text.strip():
        raise ValidationError(f"{where} is empty; nothing to import")
    if claude_ai.shape(text):
        return "claude-memory"
    if suffix.lower() in (".md", ".markdown"):
        return "notes"
    verdict = plain.looks_like_chatgpt_memory(text)
    if verdict is True:
        return "chatgpt-memory"
    if verdict is None:
        raise ValidationError(f"cannot tell the format of {where}: a list of one line each could be "
                              "chatgpt-memory (one memory per line, type user) or notes (one per paragraph); "
                              "pass --format chatgpt-memory or --format notes")
    return "notes"


def read_text_notes(text: str, fmt: str) -> list[Note]:
    """The notes of ``text`` in format ``fmt`` (one of :data:`TEXT_FORMATS`)."""
    if fmt == "claude-memory":
        return claude_ai.read(text)
    if fmt == "chatgpt-memory":
        return plain.read_chatgpt_memory(text)
    return plain.read_notes(text)


def to_engrams(notes: list[Note], scope: str, path: Path, fmt: str) -> list[Engram]:
    """Engrams of ``notes`` in ``scope``; ``source`` names the file and format.

    Raises:
        ValidationError: a note plur cannot hold (naming the file and the note's number).
    """
    out = []
    for n, item in enumerate(notes, 1):
        try:
            out.append(Engram.create(item.statement, scope=scope, type=item.type, tags=item.tags,
                                     created=item.created, source={"kind": "import", "format": fmt,
                                                                   "file": path.name},
                                     extra=dict(item.extra)))
        except ValidationError as exc:
            raise ValidationError(f"{path}: note {n}: {exc}") from None
    return out


__all__ = ["TEXT_FORMATS", "TEXT_SUFFIXES", "Note", "detect_text", "read_text_notes", "to_engrams"]
