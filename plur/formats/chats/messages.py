"""A plain list of chat messages, ``[{"role": "user", "content": "..."}, ...]`` (the OpenAI / mem0 shape).

Accepted inputs: a JSON list of messages; a JSON object with a ``messages`` list (and optionally
``session_id``/``session``/``id`` and ``date``/``created_at``); JSON Lines, one message per line.
``content`` is a string or a list of content parts (``{"type": "text", "text": ...}``; other parts
are skipped). ``system``, ``developer`` and ``tool`` messages are not turns. A message's own time may
be given as ``timestamp``, ``created_at`` or ``time`` (ISO-8601 or Unix seconds).

Formats: OpenAI Chat Completions ``messages`` (https://platform.openai.com/docs/api-reference/chat/create)
and mem0's ``add(messages)`` (https://docs.mem0.ai/core-concepts/memory-operations/add).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .turns import ROLES, Turn, content_text, need, parse_when, session_of

NAME = "messages"
_TIME_KEYS = ("timestamp", "created_at", "time")


def _messages(data: Any) -> list[Any] | None:
    if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
        return data["messages"]
    return data if isinstance(data, list) else None


def looks_like(data: Any) -> bool:
    """A list (or ``{"messages": [...]}``) whose first item is a mapping with ``role`` and ``content``."""
    msgs = _messages(data)
    return bool(msgs) and isinstance(msgs[0], Mapping) and "role" in msgs[0] and "content" in msgs[0]


def names_session(data: Any) -> bool:
    """True when the data carries its own session id (``session_id``/``session``/``id``)."""
    return isinstance(data, Mapping) and any(data.get(k) for k in ("session_id", "session", "id"))


def parse(data: Any, *, where: str, session: str | None = None, date: datetime | None = None) -> list[Turn]:
    """Turns of one message list, numbered 0.. in order (user and assistant messages only).

    Args:
        data: the decoded JSON (see the module docstring).
        where: file name for error messages.
        session: session id; default the object's ``session_id``/``session``/``id``, else a hash of the
            first message (stable when messages are appended).
        date: time for messages without their own (default: the object's ``date``/``created_at``).

    Raises:
        ValidationError: not a message list, or a message without a text ``role``.
    """
    msgs = _messages(data)
    need(msgs is not None, where, "expected a JSON list of {role, content} messages")
    assert msgs is not None
    if isinstance(data, Mapping):
        session = session or next((str(data[k]) for k in ("session_id", "session", "id") if data.get(k)), None)
        if date is None:
            date = parse_when(data.get("date") or data.get("created_at"), f"{where}: date")
    kept: list[tuple[int, Mapping[str, Any], str]] = []
    for i, m in enumerate(msgs):
        need(isinstance(m, Mapping) and isinstance(m.get("role"), str), f"{where}: message {i}",
             f"expected an object with a text 'role' and a 'content', got {m!r:.80}")
        if m["role"] not in ROLES:
            continue
        text = content_text(m.get("content"))
        if text:
            kept.append((i, m, text))
    if not kept:
        return []
    sid = session or session_of([(m["role"], text) for _, m, text in kept])
    out = []
    for n, (i, m, text) in enumerate(kept):
        when = next((parse_when(m[k], f"{where}: message {i} {k}") for k in _TIME_KEYS if m.get(k)), None)
        extra = {"name": m["name"]} if isinstance(m.get("name"), str) else {}
        out.append(Turn(NAME, sid, n, m["role"], text, when or date, extra=extra))
    return out
