"""DeepSeek Harness sessions: ``$DSH_HOME/sessions/--<cwd>--/<session id>/session.jsonl.zstd``.

DSH's JSONL session persistence (``@deepseek-ai/dsh-session-persistence-jsonl``, 0.1.0-rc.8) keeps one
append-only log per session, in a folder per workspace (``--<normalised cwd>--``) below one root that
every profile shares (``$DSH_HOME/sessions``). The log is JSON Lines, stored as concatenated Zstandard
frames (``session.jsonl.zstd``, the default) or raw (``session.jsonl``). Its first line is the session
header ``{"type": "session", "version": 0, "id", "cwd"?, "createdAt" (ms), ...}``; every later line is
one event ``{"type", "seq", "time" (ms), "data"}``.

Kept: ``user/message`` events whose message ``source.kind`` is ``user`` (what the person typed; DSH
also records runtime-context snapshots and plugin reminders as user-role messages, with
``source.kind`` ``plugin`` or none), and ``assistant/message`` events (the model's text). Tool calls,
tool results, reasoning, streamed chunks (also packed ``*-chunks`` rows) and every other event are
skipped. The session is the header's ``id``, the turn time the event's ``time``, and the workspace
(``cwd``) is kept in each turn's provenance so the caller can file it under that folder's project.

Turns are numbered as the DSH plugin's live capture numbers them (``hosts/dsh/src/capture.js``): a typed
message by its place among the session's typed messages, the model's answer (its last text before the next
typed message) by its question's number. So a session the plugin captured as it happened
(``format: capture``, the same session id) is recognised when its log is ingested later:
:data:`CAPTURED_AS` names that format, and :func:`plur.memory.ingest.ingest` skips those turns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...errors import ValidationError
from .. import capped
from .turns import SKIPPED_LINE, Turn, content_text, need

NAME = "dsh"
#: The provenance format under which the DSH plugin captures the same turns live (same session id and numbers).
CAPTURED_AS = "capture"
#: The file names a DSH session log has (compressed, raw).
FILE_NAMES = ("session.jsonl.zstd", "session.jsonl")


def header(path: Path) -> Mapping[str, Any] | None:
    """The session header (first line) of a DSH session log, ``None`` when it is not one.

    Only the first line is read (decompressed as read; at most :data:`plur.formats.capped.HEAD_BYTES`), so telling
    a log by its header never reads the rest of it.
    """
    try:
        with capped.open_file(path) as fh:
            stream = capped.zstd_stream(fh, str(path)) if path.name.endswith(".zstd") else fh
            first = json.loads(stream.readline(capped.HEAD_BYTES).decode("utf-8", errors="replace"))
    except (ValidationError, OSError, ValueError, RecursionError, *capped.zstd_errors()):
        return None
    return first if _is_header(first) else None


def _is_header(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") == "session" and isinstance(item.get("id"), str) \
        and "version" in item


def looks_like(data: Any) -> bool:
    """JSON Lines whose first record is a DSH session header."""
    return isinstance(data, list) and bool(data) and _is_header(data[0])


def sessions(folder: Path) -> list[tuple[Path, str | None]]:
    """Every DSH session log below ``folder`` with its workspace (``cwd``), in path order.

    ``folder`` may be a DSH home (``$DSH_HOME``: its ``sessions`` folder is read), the sessions folder
    (every workspace), one workspace's folder (``--<cwd>--``: that project's sessions) or one session's
    folder. Files that are not DSH session logs are left out.
    """
    root = folder / "sessions" if (folder / "sessions").is_dir() else folder
    out = []
    for name in FILE_NAMES:
        for depth in ("", "*/", "*/*/"):
            for path in sorted(root.glob(depth + name)):
                head = header(path)
                if head is not None:
                    out.append((path, head.get("cwd") if isinstance(head.get("cwd"), str) else None))
    return sorted(set(out))


def _time(ms: Any) -> datetime | None:
    if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms > 0:
        try:
            return datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def parse(data: Any, *, where: str, session: str | None = None, date: datetime | None = None,
          problems: list[tuple[str, str]] | None = None) -> list[Turn]:
    """The user-typed and assistant turns of one DSH session log, numbered in log order.

    Args:
        data: the decoded records (header first, then events), in file order.
        where: file name for error messages.
        session: ignored when the header names the session (it always does).
        date: time for events without a ``time``.
        problems: when given, a malformed event is appended as ``("<where>:<line>", reason)`` and skipped.

    Raises:
        ValidationError: the first record is not a DSH session header.
    """
    need(isinstance(data, list) and bool(data) and _is_header(data[0]), where,
         "expected a DSH session log (its first line is the session header {\"type\": \"session\", ...})")
    head = data[0]
    sid = head["id"]
    cwd = head.get("cwd") if isinstance(head.get("cwd"), str) else None
    started = _time(head.get("createdAt")) or date
    out: list[Turn] = []
    typed = -1  # number of the latest typed message
    answer: Turn | None = None  # the latest answer text of that message (the last one is kept)

    def flush() -> None:
        nonlocal answer
        if answer is not None:
            out.append(answer)
            answer = None

    for line, event in enumerate(data[1:], 2):
        if event is SKIPPED_LINE:
            continue
        if not isinstance(event, Mapping):
            if problems is None:
                need(False, f"{where}:{line}", "expected a JSON object (one event per line)")
            problems.append((f"{where}:{line}", "expected a JSON object (one event per line)"))
            continue
        kind, body = event.get("type"), event.get("data")
        if kind == "user/message" and isinstance(body, Mapping):
            source = body.get("source")
            if not (isinstance(source, Mapping) and source.get("kind") == "user"):
                continue  # runtime context, plugin reminders: DSH's words, not the user's
            role, message = "user", body
        elif kind == "assistant/message" and isinstance(body, Mapping) and isinstance(body.get("message"), Mapping):
            role, message = "assistant", body["message"]
        else:
            continue
        text = content_text(message.get("content"))
        if role == "user":
            typed += 1
            flush()
        if not text or typed < 0:
            continue
        extra: dict[str, Any] = {"seq": event.get("seq")}
        if cwd:
            extra["cwd"] = cwd
        if isinstance(message.get("id"), str):
            extra["message_id"] = message["id"]
        turn = Turn(format=NAME, session=sid, turn=typed, role=role, text=text,
                    created=_time(event.get("time")) or started, extra=extra)
        if role == "user":
            out.append(turn)
        else:
            answer = turn
    flush()
    return out
