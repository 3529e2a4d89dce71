"""Claude Code session transcripts: ``~/.claude/projects/<project>/<session id>.jsonl``.

One JSON event per line. Kept: events of ``type`` ``user`` and ``assistant`` whose ``message.content``
(a string, or a list of content blocks) has text. Skipped: tool results (``tool_result`` blocks in
user events), tool calls, thinking and image blocks, ``isMeta`` events (command caveats), sidechain
events (sub-agent conversations, ``isSidechain: true``) and every other event type (``summary``,
``system``, ``file-history-snapshot``, ``queue-operation``...). The session is the event's
``sessionId``; its time is the event's ``timestamp``. A file may hold several sessions.

The format is not formally specified by Anthropic; the field names above are those of the
transcripts Claude Code writes (documented by the community, e.g. simonw/claude-code-transcripts).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ...errors import ValidationError
from .turns import SKIPPED_LINE, Turn, content_text, need, parse_when

NAME = "claude-code"
_EVENT_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}


def looks_like(data: Any) -> bool:
    """JSON Lines events: mappings with a Claude Code ``type`` and a ``sessionId`` or ``message``."""
    head = [e for e in data[:20] if isinstance(e, Mapping)] if isinstance(data, list) else []
    return (len(head) * 2 > min(len(data), 20) if head else False) and any(  # a stray non-object line is
        e.get("type") in _EVENT_TYPES and ("sessionId" in e or "message" in e) for e in head)  # a problem, later


def parse(data: Any, *, where: str, session: str | None = None, date: datetime | None = None,
          problems: list[tuple[str, str]] | None = None) -> list[Turn]:
    """Turns of every session in the transcript, numbered per session in file order.

    Args:
        data: the decoded events (one per line), in file order.
        where: file name for error messages.
        session: session id for events without a ``sessionId`` (such events need one).
        date: time for events without a ``timestamp``.
        problems: when given, a malformed event is appended as ``("<where>:<line>", reason)`` and
            skipped instead of raising.

    Raises:
        ValidationError: an event is not an object, or has text but no session id (``problems`` not given).
    """
    need(isinstance(data, list), where, "expected Claude Code transcript events, one JSON object per line")
    counts: dict[str, int] = {}
    out: list[Turn] = []
    for line, event in enumerate(data, 1):
        if event is SKIPPED_LINE:  # not JSON: load() reported it
            continue
        try:
            turn = _event_turn(event, line, where, session, date, counts)
        except ValidationError as exc:
            if problems is None:
                raise
            problems.append((f"{where}:{line}", str(exc).split(": ", 1)[-1]))
            continue
        if turn is not None:
            out.append(turn)
    return out


def _event_turn(event: Any, line: int, where: str, session: str | None, date: datetime | None,
                counts: dict[str, int]) -> Turn | None:
    """The turn of one event, ``None`` for an event that is not a turn (numbered per session in ``counts``)."""
    need(isinstance(event, Mapping), f"{where}:{line}", "expected a JSON object (one event per line)")
    role = event.get("type")
    if role not in ("user", "assistant") or event.get("isMeta") or event.get("isSidechain"):
        return None
    message = event.get("message")
    text = content_text(message.get("content")) if isinstance(message, Mapping) else ""
    if not text:
        return None
    sid = event.get("sessionId") or session
    need(isinstance(sid, str) and bool(sid), f"{where}:{line}",
         "event has no sessionId; pass a session id (--session)")
    n = counts.get(sid, 0)
    counts[sid] = n + 1
    extra = {k: event[k] for k in ("uuid", "cwd", "gitBranch") if isinstance(event.get(k), str)}
    when = parse_when(event.get("timestamp"), f"{where}:{line}: timestamp") or date
    return Turn(NAME, sid, n, role, text, when, extra=extra)
