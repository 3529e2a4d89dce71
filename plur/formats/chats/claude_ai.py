"""claude.ai's data export: ``conversations.json`` from Settings > Privacy > Export data (a ``.zip``).

The file is a JSON list of conversations: ``uuid``, ``name``, ``created_at``, ``updated_at`` and
``chat_messages``, in order, each with ``uuid``, ``sender`` (``human`` or ``assistant``), ``created_at``
(ISO-8601), ``text`` and ``content`` (blocks: ``text``, ``tool_use``, ``tool_result``...). A message's text
is its ``text`` blocks (else its ``text`` field); tool blocks and attachments are not turns. The session
is the conversation's ``uuid``. (Field names as in the exports people have; Anthropic does not publish a
schema.)
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ...errors import ValidationError
from .turns import Turn, content_text, need, parse_when

NAME = "claude-ai"
_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def looks_like(data: Any) -> bool:
    """A list of conversations (or one) with ``chat_messages``."""
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, Mapping) and isinstance(first.get("chat_messages"), list)


def parse(data: Any, *, where: str, session: str | None = None, date: datetime | None = None,
          problems: list[tuple[str, str]] | None = None) -> list[Turn]:
    """Turns of every conversation, numbered per conversation.

    Args:
        data: the decoded ``conversations.json`` (a list, or one conversation object).
        where: file name for error messages.
        session: session id for a conversation without ``uuid``.
        date: time for messages without ``created_at`` (default: the conversation's ``created_at``).
        problems: when given, a malformed conversation is appended as ``("<where>: conversation N", reason)``
            and left out instead of raising.

    Raises:
        ValidationError: a conversation that cannot be read (``problems`` not given).
    """
    out: list[Turn] = []
    for c, conv in enumerate(data if isinstance(data, list) else [data]):
        here = f"{where}: conversation {c}"
        try:
            out.extend(_conversation(conv, here, session, date))
        except (ValidationError, AttributeError, TypeError) as exc:
            if problems is None:
                raise
            problems.append((here, str(exc).removeprefix(here + ": ")))
    return out


def _conversation(conv: Any, here: str, session: str | None, date: datetime | None) -> list[Turn]:
    need(isinstance(conv, Mapping) and isinstance(conv.get("chat_messages"), list), here,
         "expected a claude.ai conversation with 'chat_messages'")
    sid = conv.get("uuid") or session
    need(isinstance(sid, str) and bool(sid), here, "conversation has no 'uuid'; pass a session id (--session)")
    conv_date = parse_when(conv.get("created_at"), f"{here}: created_at") or date
    extra = {"title": conv["name"]} if isinstance(conv.get("name"), str) and conv["name"] else {}
    out: list[Turn] = []
    for msg in conv["chat_messages"]:
        role = _ROLES.get(str(msg.get("sender", "")).lower()) if isinstance(msg, Mapping) else None
        if role is None:
            continue
        blocks = msg.get("content")
        text = content_text(blocks) if isinstance(blocks, list) and blocks else ""
        if not text and isinstance(msg.get("text"), str):
            text = msg["text"].strip()
        if not text:
            continue
        when = parse_when(msg.get("created_at"), f"{here}: created_at") or conv_date
        out.append(Turn(NAME, sid, len(out), role, text, when, extra=extra))
    return out
