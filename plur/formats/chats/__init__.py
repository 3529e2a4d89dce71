"""Conversation parsers: a chat history file -> :class:`~plur.formats.chats.turns.Turn` list. Pure: no store, no index.

One module per format (:data:`FORMATS`), each with ``looks_like(data)`` and ``parse(data, where=,
session=, date=)``: :mod:`.messages` (OpenAI / mem0 message lists), :mod:`.claude_code` (Claude Code
session transcripts), :mod:`.chatgpt` (ChatGPT ``conversations.json``), :mod:`.claude_ai`
(claude.ai's ``conversations.json``), :mod:`.longmemeval`
(LongMemEval haystacks), :mod:`.locomo` (LoCoMo conversations). :meth:`plur.memory.Memory.ingest`
turns the turns into engrams.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ...errors import ValidationError
from .. import capped
from . import chatgpt, claude_ai, claude_code, dsh, locomo, longmemeval, messages
from .turns import FORMATS, KEY_FIELDS, ROLES, SKIPPED_LINE, IngestResult, Turn, fork_derived, source_key

_PARSERS = {m.NAME: m for m in (messages, claude_code, chatgpt, longmemeval, locomo, dsh, claude_ai)}
#: Detection order: the most specific shapes first (a message list is the loosest).
_DETECT = (dsh, claude_code, chatgpt, claude_ai, longmemeval, locomo, messages)


def detect_format(data: Any, where: str = "input") -> str:
    """The conversation format of decoded JSON (see each module's ``looks_like``).

    Raises:
        ValidationError: no format matches; the message lists them and asks for ``--format``.
    """
    if isinstance(data, list):
        data = [d for d in data if d is not SKIPPED_LINE]
    if data in ([], {}):
        raise ValidationError(f"{where} holds no messages (an empty {'list' if data == [] else 'object'}); "
                              "nothing to ingest: export the conversation again, or check the file")
    for mod in _DETECT:
        if mod.looks_like(data):
            return mod.NAME
    if isinstance(data, list) and data and isinstance(data[0], dict) and "statement" in data[0]:
        raise ValidationError(f"{where} holds engrams (a 'statement' per line), not a conversation; "
                              "use `plur import` for it")
    raise ValidationError(f"cannot tell the conversation format of {where}; pass --format "
                          f"({', '.join(FORMATS)})")


def parse(data: Any, fmt: str | None = None, *, where: str = "input", session: str | None = None,
          date: datetime | None = None, problems: list[tuple[str, str]] | None = None) -> list[Turn]:
    """Turns of decoded conversation data.

    Args:
        data: decoded JSON (a list of JSON Lines records for the JSONL formats).
        fmt: one of :data:`FORMATS`; default :func:`detect_format`.
        where: a name for error messages (the file).
        session: session id where the data has none (see each format).
        date: timestamp for turns that carry none and whose session has no date.
        problems: when given, a malformed item of a format made of independent items (a Claude Code
            event, a ChatGPT conversation) is appended here as ``(place, reason)`` and left out, and
            the rest is read; without it the first one raises.

    Raises:
        ValidationError: unknown format or malformed data, naming ``where`` and the place.
    """
    if fmt is not None and fmt not in _PARSERS:
        raise ValidationError(f"unknown conversation format {fmt!r}; use one of {', '.join(FORMATS)}")
    name = fmt or detect_format(data, where)
    if isinstance(data, list) and name != claude_code.NAME:
        data = [d for d in data if d is not SKIPPED_LINE]
    if problems is not None and name in (chatgpt.NAME, claude_ai.NAME, claude_code.NAME, dsh.NAME):
        return _PARSERS[name].parse(data, where=where, session=session, date=date, problems=problems)
    return _PARSERS[name].parse(data, where=where, session=session, date=date)


def captured_as(fmt: str) -> str | None:
    """The provenance format under which a host's plugin captures turns of format ``fmt`` live, if any
    (``dsh`` -> ``capture``: :data:`plur.formats.chats.dsh.CAPTURED_AS`)."""
    return getattr(_PARSERS.get(fmt), "CAPTURED_AS", None)


def keep_file_session(turns: list[Turn], stored: Any, data: Any, fmt: str, session: str | None,
                      file: str | None) -> list[Turn]:
    """Give a re-ingested message file the session its turns had before, when it names none of its own.

    A message list without a session id gets one from a hash of its first message
    (:func:`plur.formats.chats.turns.session_of`), so editing that message would make every turn new
    and store the conversation twice. When the same file (``source.file``) was ingested before into
    this scope under exactly one session, its turns keep that session: an edited turn then matches its
    old version (and supersedes it) and unchanged turns stay single.

    Args:
        turns: the parsed turns. stored: engrams already in the scope. data: the decoded file.
        fmt: its format. session: the session the caller gave (then nothing changes). file: its name.
    """
    if fmt != messages.NAME or session is not None or not file or not turns or messages.names_session(data):
        return turns
    before = {e.source.get("session") for e in stored if e is not None and isinstance(e.source, Mapping)
              and e.source.get("format") == messages.NAME and e.source.get("file") == file}
    if len(before) != 1 or turns[0].session in before:
        return turns
    sid = str(next(iter(before)))
    return [dataclasses.replace(t, session=sid) for t in turns]


def load(path: str | os.PathLike[str], problems: list[tuple[str, str]] | None = None, *,
         max_bytes: int | None = None) -> Any:
    """Decode a conversation file: JSON, or JSON Lines (one value per line) -> a list.

    JSON Lines is recognised by a ``.jsonl``/``.ndjson`` suffix, or by a file that is not one JSON
    document but whose lines are. With ``problems`` given, a JSON Lines line that is not JSON is
    appended there as ``("<file>:<line>", reason)`` and skipped (unless no line is JSON at all).

    A ``.zip`` is a ChatGPT or claude.ai export: its ``conversations.json`` is read. A ``.zstd`` file (a DSH
    session log) is decompressed as it is read. Nothing is read whole before it is measured: the file may take
    at most ``max_bytes`` of memory to read (:mod:`plur.formats.capped`; default the setting ``max_input_bytes``).

    Raises:
        ValidationError: missing/unreadable file, neither JSON nor JSON Lines (naming the line), over the limit
            (naming it and the setting), or nested deeper than the parser goes.
    """
    p = Path(path).expanduser()
    where = str(p)
    limit = capped.default_limit() if max_bytes is None else max_bytes
    if p.suffix.lower() == ".zip":
        return _zip_conversations(p, limit)
    budget = capped.Budget(where, limit, "json")
    with capped.open_file(p) as fh:
        try:
            if p.suffix.lower() == ".zstd":
                return _records(capped.zstd_stream(fh, where), budget, where, problems, "replace")
            if p.suffix.lower() in (".jsonl", ".ndjson"):
                return _records(fh, budget, where, problems)
            budget.check_size(os.fstat(fh.fileno()).st_size)
            raw = capped.read_all(fh, budget)
        except capped.zstd_errors() as exc:
            raise ValidationError(f"{p}: not a Zstandard file ({exc}); a DSH session log is session.jsonl.zstd "
                                  "or session.jsonl") from None
        except OSError as exc:
            raise ValidationError(f"cannot read {where!r} ({exc.strerror or exc})") from None
    try:
        return capped.parse_json(raw, where)
    except UnicodeDecodeError as exc:
        raise ValidationError(f"cannot read {where!r} as UTF-8 text ({exc})") from None
    except json.JSONDecodeError as exc:
        _notes_hint(p, raw)
        if not re.search(rb"\S[ \t\r\f\v]*\n\s*\S", raw):  # one line (raw.strip() would copy it all)
            raise ValidationError(f"{p}: not JSON ({exc.msg} at line {exc.lineno})") from None
    budget.spent = len(raw)  # read again as lines: the bytes are held, each line's values are charged anew
    return _records(io.BytesIO(raw), budget, where, problems)


def _records(stream: Any, budget: capped.Budget, where: str, problems: list[tuple[str, str]] | None,
             errors: str = "strict") -> list[Any]:
    """The JSON Lines records of a binary stream, read line by line within ``budget`` (see :func:`load`)."""
    out: list[Any] = []
    bad: list[tuple[str, str]] = []
    for n, line in capped.lines(stream, budget):
        try:
            text = line.decode("utf-8-sig" if n == 1 else "utf-8", errors)
        except UnicodeDecodeError as exc:
            raise ValidationError(f"cannot read {where!r} as UTF-8 text (line {n}: {exc})") from None
        try:
            out.append(json.loads(text))
        except (json.JSONDecodeError, RecursionError) as exc:
            reason = f"not JSON ({getattr(exc, 'msg', 'nested too deeply')})"
            if problems is None or (len(bad) >= 50 and len(bad) == len(out)):  # 50 bad lines, no good one
                raise ValidationError(f"{where}:{n}: {reason}; expected JSON, or one JSON value per line") from None
            bad.append((f"{where}:{n}", reason))
            out.append(SKIPPED_LINE)  # keeps the next lines' numbers (Claude Code places are line numbers)
    if bad and len(bad) == len(out):
        raise ValidationError(f"{bad[0][0]}: {bad[0][1]}; expected JSON, or one JSON value per line")
    if problems is not None:
        problems.extend(bad)
    return out


def _notes_hint(p: Path, raw: bytes | bytearray) -> None:
    """Raise when a file that is not JSON holds notes (claude.ai's memory, Markdown): they are imported, not ingested."""
    from ..notes import claude_ai

    text = bytes(raw[:capped.HEAD_BYTES]).decode("utf-8", errors="replace")  # a hint: the head is enough
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        json.loads(first)
        return  # JSON Lines: the caller reads them
    except (json.JSONDecodeError, RecursionError):
        pass
    if claude_ai.shape(text) or p.suffix.lower() in (".md", ".markdown", ".txt", ".text"):
        kind = "claude.ai's memory" if claude_ai.shape(text) else "notes"
        raise ValidationError(f"{p} holds {kind} (text), not a chat history; use `plur import {p}` for it")


def _zip_conversations(p: Path, limit: int) -> Any:
    """The decoded ``conversations.json`` of a ChatGPT or claude.ai export ``.zip`` (the one nearest the top),
    decompressed as read within ``limit`` (its declared size is checked first, and what it really holds).

    Raises:
        ValidationError: not a zip, no ``conversations.json`` in it (naming what it holds), not JSON, or too large.
    """
    import zipfile
    import zlib

    try:
        with zipfile.ZipFile(p) as z:
            names = [n for n in z.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"]
            if not names:
                some = ", ".join(z.namelist()[:5]) or "nothing"
                raise ValidationError(f"{p} holds no conversations.json (it holds {some}); a ChatGPT export "
                                      "(Settings > Data controls > Export data) or a claude.ai export (Settings > Privacy "
                                      "> Export data) has one at its top")
            info = z.getinfo(min(names, key=lambda n: (n.count("/"), n)))
            budget = capped.Budget(f"{p}: {info.filename}", limit, "json")
            budget.check_size(info.file_size)
            with z.open(info) as fh:
                raw = capped.read_all(fh, budget)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise ValidationError(f"cannot read {str(p)!r} as a zip file ({exc}); check the file") from None
    try:
        return capped.parse_json(raw, f"{p}: conversations.json")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationError(f"{p}: conversations.json is not JSON ({exc})") from None


def read_conversation(path: str | os.PathLike[str], fmt: str | None = None, *, session: str | None = None,
                      date: datetime | None = None, max_bytes: int | None = None) -> list[Turn]:
    """:func:`load` then :func:`parse` a conversation file (nothing is written)."""
    return parse(load(path, max_bytes=max_bytes), fmt, where=str(path), session=session, date=date)


__all__ = ["FORMATS", "KEY_FIELDS", "ROLES", "IngestResult", "Turn", "captured_as", "detect_format", "fork_derived", "keep_file_session",
           "load",
           "parse", "read_conversation",
           "source_key"]
