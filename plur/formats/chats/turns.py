"""The :class:`Turn` every conversation parser yields, and helpers the parsers share (pure, no I/O).

A turn becomes one engram (see :meth:`plur.memory.Memory.ingest`). Its provenance, written to the
engram's ``source``, follows the conversation-provenance contract the neighbour expansion of the index
reads::

    {"kind": "conversation", "format": <FORMATS>, "session": str, "turn": int (0-based position in
     that session), "role": "user" | "assistant", "speaker": str (optional), ...extra keys}

``turn`` counts every user and assistant turn the parser keeps, in file order, so it is stable when
turns are appended to a session and the same whether assistant turns are ingested or not.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ...errors import ValidationError
from ...store.engram import Engram, parse_time

#: Conversation formats, in the order :func:`plur.formats.chats.detect_format` tries them.
FORMATS: tuple[str, ...] = ("messages", "claude-code", "chatgpt", "longmemeval", "locomo", "dsh", "claude-ai")
ROLES: tuple[str, ...] = ("user", "assistant")
#: The keys of ``source`` that identify a turn; re-ingesting skips turns whose key is already stored.
KEY_FIELDS: tuple[str, ...] = ("format", "session", "turn", "role")

ProvenanceKey = tuple[str, str, int, str]


class _SkippedLine:
    """Stands in the decoded list for a JSON Lines line that was not JSON (already reported)."""

    def __repr__(self) -> str:
        return "SKIPPED_LINE"


#: The placeholder :func:`plur.formats.chats.load` leaves for a line it reported as a problem.
SKIPPED_LINE = _SkippedLine()


@dataclass(frozen=True)
class Turn:
    """One message of a conversation.

    Attributes:
        format: the parser that read it (one of :data:`FORMATS`).
        session: the conversation's id in its source (session id, conversation id...).
        turn: 0-based position in the session among the turns the parser keeps.
        role: ``user`` or ``assistant``.
        text: the message text (never blank).
        created: the message's own timestamp, else the session's date, else ``None`` (aware UTC).
        speaker: the speaker's name when the source has one (LoCoMo).
        extra: more provenance (``title``, ``uuid``...), copied into ``source``.
    """

    format: str
    session: str
    turn: int
    role: str
    text: str
    created: datetime | None = None
    speaker: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> ProvenanceKey:
        """``(format, session, turn, role)``: what makes a turn the same turn on re-ingest."""
        return (self.format, self.session, self.turn, self.role)

    def source(self, **more: Any) -> dict[str, Any]:
        """The engram ``source`` mapping of this turn (the provenance contract, plus ``extra``/``more``)."""
        out: dict[str, Any] = {"kind": "conversation", "format": self.format, "session": self.session,
                               "turn": self.turn, "role": self.role}
        if self.speaker:
            out["speaker"] = self.speaker
        for k, v in {**self.extra, **more}.items():
            out.setdefault(k, v)
        return out


@dataclass(frozen=True)
class IngestResult:
    """What :meth:`plur.memory.Memory.ingest` did.

    Attributes:
        format: the conversation format read.
        turns: turns kept by the ``roles`` filter.
        added: the engrams written, in conversation order.
        skipped: kept turns already stored unchanged (same provenance key in the scope, same text).
        changed: the new engrams of turns whose text changed since they were ingested: each
            supersedes the old one (``supersedes`` = its id; the old one is retired, not deleted).
        problems: ``(place, reason)`` of each item left out because it was malformed (a JSON Lines
            line that is not JSON, a Claude Code event or ChatGPT conversation that cannot be read,
            a turn over ``max_statement_bytes``); the rest of the file was ingested.
        secrets: credentials removed from the turns' text before anything was stored.
        dry_run: nothing was written; ``added`` and ``changed`` say what would be.
        left_out: ``(reason, turns)`` of the turns capture's rules left out (``trivial``, ``off``, ``forget``,
            ``forgotten``, ``question``, ``repeat``: :mod:`plur.memory.ingest_rules`), by reason; not counted in
            ``skipped``.
        forgotten: ids of notes stored before (an earlier ingest or live capture of the same conversation)
            that a request to forget in the conversation pointed to, forgotten (with ``dry_run``: to forget).
    """

    format: str
    turns: int
    added: tuple[Engram, ...]
    skipped: int
    problems: tuple[tuple[str, str], ...] = ()
    changed: tuple[Engram, ...] = ()
    secrets: int = 0
    dry_run: bool = False
    left_out: tuple[tuple[str, int], ...] = ()
    forgotten: tuple[str, ...] = ()


def source_key(source: Any) -> ProvenanceKey | None:
    """The :attr:`Turn.key` stored in an engram's ``source``, or ``None`` if it is not a conversation turn."""
    if not isinstance(source, Mapping) or source.get("kind") != "conversation":
        return None
    fmt, session, turn, role = (source.get(k) for k in KEY_FIELDS)
    if not isinstance(fmt, str) or not isinstance(session, str) or isinstance(turn, bool) \
            or not isinstance(turn, int) or not isinstance(role, str):
        return None
    return (fmt, session, turn, role)


def content_text(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of blocks/parts of which text ones are kept.

    Blocks: ``{"type": "text", "text": ...}`` (OpenAI, Anthropic), ``{"type": "input_text"}``, bare
    strings (ChatGPT ``parts``). Tool results, tool calls, images and thinking blocks are skipped.
    """
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        return ""
    out = []
    for block in content:
        if isinstance(block, str):
            out.append(block)
        elif isinstance(block, Mapping) and block.get("type") in ("text", "input_text", "output_text") \
                and isinstance(block.get("text"), str):
            out.append(block["text"])
    return "\n".join(t.strip() for t in out if t.strip())


def parse_when(value: Any, where: str, fmt: str | None = None) -> datetime | None:
    """A timestamp from ISO-8601 text or Unix seconds (int/float); ``None``/``''`` -> ``None``.

    Args:
        value: the timestamp as the file gives it.
        where: what it is, for the error message.
        fmt: a dataset's own ``strptime`` format tried first (taken as UTC: such datasets give no zone).

    Raises:
        ValidationError: naming ``where`` and the value.
    """
    if value is None or value == "":
        return None
    if fmt is not None and isinstance(value, str):
        try:
            return datetime.strptime(value.strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            pass
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise ValidationError(f"{where}: timestamp {value!r} is out of range") from None
    return parse_time(value, where)


def session_of(turns: list[tuple[str, str]]) -> str:
    """A stable session id for a conversation that has none: ``sha256:`` of its first message.

    Appending messages keeps the id; two conversations with different first messages get different ids.

    Args:
        turns: ``(role, text)`` of the conversation, first message first (non-empty).
    """
    role, text = turns[0]
    return "sha256:" + hashlib.sha256(f"{role}\n{text}".encode("utf-8")).hexdigest()[:16]


def derived(session: str) -> bool:
    """True for a session id :func:`session_of` derived (the data named none)."""
    return session.startswith("sha256:")


def fork_derived(turns: list[Turn], differs: Any) -> list[Turn]:
    """Re-key the turns of a derived session that disagrees with what is stored at some position.

    A derived id is the hash of the first message only, so two conversations that open alike ("Hi") share
    it. Where a turn's text differs from the stored turn at its position (``differs(turn)``), the input is
    another conversation that begins the same way, not an edit of the stored one: its turns move to a
    session derived from its messages up to the first disagreement, instead of superseding the stored
    turns. That id stays the same when messages are appended, so a re-ingest of the same file adds only
    the new ones. Sessions named in the data are returned as they are (their changed turns are edits).

    Args:
        turns: the kept turns, in conversation order within each session.
        differs: ``turn -> bool``, True when a stored turn with that key holds other text that is not an
            edit of the same source (the caller decides: another file, or none).
    """
    out: list[Turn] = []
    by_session: dict[str, list[Turn]] = {}
    for t in turns:
        by_session.setdefault(t.session, []).append(t)
    for sid, group in by_session.items():
        first = next((i for i, t in enumerate(group) if derived(sid) and differs(t)), None)
        if first is None:
            out += group
            continue
        prefix = "\n".join(f"{t.role}\n{t.text}" for t in group[: first + 1])
        fork = "sha256:" + hashlib.sha256(f"{sid}\n{prefix}".encode("utf-8")).hexdigest()[:16]
        out += [dataclasses.replace(t, session=fork) for t in group]
    return out


def need(cond: bool, where: str, what: str) -> None:
    """Raise a :class:`ValidationError` ``"<where>: <what>"`` unless ``cond``."""
    if not cond:
        raise ValidationError(f"{where}: {what}")
