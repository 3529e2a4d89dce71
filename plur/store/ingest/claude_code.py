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

from .turns import Turn, content_text, need, parse_when

NAME = "claude-code"
_EVENT_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}


def looks_like(data: Any) -> bool:
    """JSON Lines events: mappings with a Claude Code ``type`` and a ``sessionId`` or ``message``."""
    return (isinstance(data, list) and bool(data) and all(isinstance(e, Mapping) for e in data[:20])
            and any(e.get("type") in _EVENT_TYPES and ("sessionId" in e or "message" in e) for e in data[:20]))


def parse(data: Any, *, where: str, session: str | None = None, date: datetime | None = None) -> list[Turn]:
    """Turns of every session in the transcript, numbered per session in file order.

    Args:
        data: the decoded events (one per line), in file order.
        where: file name for error messages.
        session: session id for events without a ``sessionId`` (such events need one).
        date: time for events without a ``timestamp``.

    Raises:
        ValidationError: an event is not an object, or has text but no session id.
    """
    need(isinstance(data, list), where, "expected Claude Code transcript events, one JSON object per line")
    counts: dict[str, int] = {}
    out: list[Turn] = []
    for line, event in enumerate(data, 1):
        need(isinstance(event, Mapping), f"{where}:{line}", "expected a JSON object (one event per line)")
        role = event.get("type")
        if role not in ("user", "assistant") or event.get("isMeta") or event.get("isSidechain"):
            continue
        message = event.get("message")
        text = content_text(message.get("content")) if isinstance(message, Mapping) else ""
        if not text:
            continue
        sid = event.get("sessionId") or session
        need(isinstance(sid, str) and bool(sid), f"{where}:{line}",
             "event has no sessionId; pass a session id (--session)")
        n = counts.get(sid, 0)
        counts[sid] = n + 1
        extra = {k: event[k] for k in ("uuid", "cwd", "gitBranch") if isinstance(event.get(k), str)}
        when = parse_when(event.get("timestamp"), f"{where}:{line}: timestamp") or date
        out.append(Turn(NAME, sid, n, role, text, when, extra=extra))
    return out
