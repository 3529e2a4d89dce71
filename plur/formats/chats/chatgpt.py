"""ChatGPT data export: ``conversations.json`` from Settings > Data controls > Export data.

The file is a JSON list of conversations. Each has ``id`` (or ``conversation_id``), ``title``,
``create_time`` (Unix seconds), ``current_node`` and ``mapping``: node id -> ``{"id", "message",
"parent", "children"}``, a tree, because an edited or regenerated message starts a new branch. The
branch the user last saw is the path from ``current_node`` up the ``parent`` links to the root; only
that branch is read (in root-to-leaf order). A node's ``message`` has ``author.role``,
``create_time`` and ``content``: ``{"content_type": "text" | "multimodal_text", "parts": [...]}``
(string parts are the text; images and other parts are skipped). System, tool and hidden
messages (``metadata.is_visually_hidden_from_conversation``) are not turns.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ...errors import ValidationError
from .turns import ROLES, Turn, content_text, need, parse_when

NAME = "chatgpt"


def looks_like(data: Any) -> bool:
    """A conversation object, or a list of them, with a ``mapping``."""
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, Mapping) and isinstance(first.get("mapping"), Mapping)


def _branch(conv: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    mapping = conv["mapping"]
    node_id = conv.get("current_node")
    if node_id is None:  # no current node recorded: the first child at each step from the root
        roots = [k for k, v in mapping.items() if isinstance(v, Mapping) and not v.get("parent")]
        node_id = roots[0] if roots else None
        while node_id is not None and (mapping.get(node_id) or {}).get("children"):
            node_id = mapping[node_id]["children"][-1]
    path: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    while node_id is not None:
        need(node_id not in seen, where, f"message tree has a cycle at node {node_id!r}")
        seen.add(node_id)
        node = mapping.get(node_id)
        need(isinstance(node, Mapping), where, f"current branch names node {node_id!r}, which is not in 'mapping'")
        path.append(node)
        node_id = node.get("parent")
    return path[::-1]


def parse(data: Any, *, where: str, session: str | None = None, date: datetime | None = None,
          problems: list[tuple[str, str]] | None = None) -> list[Turn]:
    """Turns of each conversation's current branch; the session is the conversation id.

    Args:
        data: the decoded ``conversations.json`` (a list, or one conversation object).
        where: file name for error messages.
        session: session id for a conversation without ``id``/``conversation_id``.
        date: time for messages without ``create_time`` (default: the conversation's ``create_time``).

        problems: when given, a malformed conversation is appended as ``("<where>: conversation N",
            reason)`` and left out instead of raising; the others are read.

    Raises:
        ValidationError: a conversation without ``mapping``, or a broken current branch (``problems``
            not given).
    """
    convs = data if isinstance(data, list) else [data]
    out: list[Turn] = []
    for c, conv in enumerate(convs):
        here = f"{where}: conversation {c}"
        try:
            out.extend(_conversation(conv, here, session, date))
        except (ValidationError, AttributeError, TypeError, KeyError) as exc:
            if problems is None:
                raise
            reason = str(exc) if isinstance(exc, ValidationError) else f"malformed ({type(exc).__name__}: {exc})"
            problems.append((here, reason.removeprefix(here + ": ")))
    return out


def _conversation(conv: Any, here: str, session: str | None, date: datetime | None) -> list[Turn]:
    """The turns of one conversation's current branch."""
    out: list[Turn] = []
    need(isinstance(conv, Mapping) and isinstance(conv.get("mapping"), Mapping), here,
         "expected a ChatGPT conversation object with a 'mapping'")
    sid = conv.get("conversation_id") or conv.get("id") or session
    need(isinstance(sid, str) and bool(sid), here, "conversation has no 'id'; pass a session id (--session)")
    conv_date = parse_when(conv.get("create_time"), f"{here}: create_time") or date
    n = 0
    for node in _branch(conv, here):
        msg = node.get("message")
        if not isinstance(msg, Mapping):
            continue
        role = (msg.get("author") or {}).get("role")
        meta = msg.get("metadata") or {}
        if role not in ROLES or (isinstance(meta, Mapping) and meta.get("is_visually_hidden_from_conversation")):
            continue
        content = msg.get("content") or {}
        text = content_text(content.get("parts") or content.get("text") or "") if isinstance(content, Mapping) else ""
        if not text:
            continue
        when = parse_when(msg.get("create_time"), f"{here}: create_time") or conv_date
        extra = {"title": conv["title"]} if isinstance(conv.get("title"), str) else {}
        out.append(Turn(NAME, sid, n, role, text, when, extra=extra))
        n += 1
    return out
