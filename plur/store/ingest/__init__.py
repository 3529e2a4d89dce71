"""Conversation parsers: a chat history file -> :class:`~plur.store.ingest.turns.Turn` list. Pure: no store, no index.

One module per format (:data:`FORMATS`), each with ``looks_like(data)`` and ``parse(data, where=,
session=, date=)``: :mod:`.messages` (OpenAI / mem0 message lists), :mod:`.claude_code` (Claude Code
session transcripts), :mod:`.chatgpt` (ChatGPT ``conversations.json``), :mod:`.longmemeval`
(LongMemEval haystacks), :mod:`.locomo` (LoCoMo conversations). :meth:`plur.memory.Memory.ingest`
turns the turns into engrams.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ...errors import ValidationError
from . import chatgpt, claude_code, locomo, longmemeval, messages
from ..transfer import read_text_file
from .turns import FORMATS, KEY_FIELDS, ROLES, IngestResult, Turn, source_key

_PARSERS = {m.NAME: m for m in (messages, claude_code, chatgpt, longmemeval, locomo)}
#: Detection order: the most specific shapes first (a message list is the loosest).
_DETECT = (claude_code, chatgpt, longmemeval, locomo, messages)


def detect_format(data: Any, where: str = "input") -> str:
    """The conversation format of decoded JSON (see each module's ``looks_like``).

    Raises:
        ValidationError: no format matches; the message lists them and asks for ``--format``.
    """
    for mod in _DETECT:
        if mod.looks_like(data):
            return mod.NAME
    if isinstance(data, list) and data and isinstance(data[0], dict) and "statement" in data[0]:
        raise ValidationError(f"{where} holds engrams (a 'statement' per line), not a conversation; "
                              "use `plur import` for it")
    raise ValidationError(f"cannot tell the conversation format of {where}; pass --format "
                          f"({', '.join(FORMATS)})")


def parse(data: Any, fmt: str | None = None, *, where: str = "input", session: str | None = None,
          date: datetime | None = None) -> list[Turn]:
    """Turns of decoded conversation data.

    Args:
        data: decoded JSON (a list of JSON Lines records for the JSONL formats).
        fmt: one of :data:`FORMATS`; default :func:`detect_format`.
        where: a name for error messages (the file).
        session: session id where the data has none (see each format).
        date: timestamp for turns that carry none and whose session has no date.

    Raises:
        ValidationError: unknown format or malformed data, naming ``where`` and the place.
    """
    if fmt is not None and fmt not in _PARSERS:
        raise ValidationError(f"unknown conversation format {fmt!r}; use one of {', '.join(FORMATS)}")
    name = fmt or detect_format(data, where)
    return _PARSERS[name].parse(data, where=where, session=session, date=date)


def load(path: str | os.PathLike[str]) -> Any:
    """Decode a conversation file: JSON, or JSON Lines (one value per line) -> a list.

    JSON Lines is recognised by a ``.jsonl``/``.ndjson`` suffix, or by a file that is not one JSON
    document but whose lines are.

    Raises:
        ValidationError: missing/unreadable file, or neither JSON nor JSON Lines (naming the line).
    """
    p = Path(path).expanduser()
    text = read_text_file(p, "utf-8-sig")
    if p.suffix.lower() not in (".jsonl", ".ndjson"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            if "\n" not in text.strip():
                raise ValidationError(f"{p}: not JSON ({exc.msg} at line {exc.lineno})") from None
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{p}:{n}: not JSON ({exc.msg}); expected JSON, or one JSON value per line") \
                from None
    return out


def read_conversation(path: str | os.PathLike[str], fmt: str | None = None, *, session: str | None = None,
                      date: datetime | None = None) -> list[Turn]:
    """:func:`load` then :func:`parse` a conversation file (nothing is written)."""
    return parse(load(path), fmt, where=str(path), session=session, date=date)


__all__ = ["FORMATS", "KEY_FIELDS", "ROLES", "IngestResult", "Turn", "detect_format", "load", "parse", "read_conversation",
           "source_key"]
