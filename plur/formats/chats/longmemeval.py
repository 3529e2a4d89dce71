"""LongMemEval haystacks (Wu et al., ICLR 2025; github.com/xiaowu0162/LongMemEval).

An entry (one question) holds ``haystack_session_ids``, ``haystack_dates`` (``"2023/05/20 (Sat)
02:21"``) and ``haystack_sessions``: per session a list of ``{"role", "content", "has_answer"?}``
turns. The file is a JSON list of entries (the official ``longmemeval_s.json`` / ``_oracle.json``)
or one entry. Sessions are shared between questions; each session is read once (the first time
its id is seen). Turn numbers count every user and assistant turn, as the official turn ids do
(``<session id>_<turn index + 1>``). Turn time = the session's date.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .turns import ROLES, Turn, content_text, need, parse_when

NAME = "longmemeval"
_DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


def looks_like(data: Any) -> bool:
    """An entry, or a list of entries, with ``haystack_sessions``."""
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, Mapping) and "haystack_sessions" in first


def parse_date(value: Any, where: str) -> datetime | None:
    """``2023/05/20 (Sat) 02:21`` (taken as UTC; the dataset gives no zone), ISO-8601, or ``None``."""
    return parse_when(value, where, _DATE_FORMAT)


def parse(data: Any, *, where: str, session: str | None = None, date: datetime | None = None) -> list[Turn]:
    """Turns of every haystack session (each once), numbered per session.

    Args:
        data: the decoded JSON: a list of entries or one entry.
        where: file name for error messages.
        session: unused (sessions have ids); accepted for a uniform signature.
        date: time for sessions without a date.

    Raises:
        ValidationError: malformed entry (sessions, ids and dates of different lengths...).
    """
    entries = data if isinstance(data, list) else [data]
    seen: set[str] = set()
    out: list[Turn] = []
    for q, entry in enumerate(entries):
        here = f"{where}: entry {q}"
        need(isinstance(entry, Mapping) and isinstance(entry.get("haystack_sessions"), list), here,
             "expected a LongMemEval entry with 'haystack_sessions'")
        sessions = entry["haystack_sessions"]
        ids = entry.get("haystack_session_ids") or [f"{entry.get('question_id', q)}:{i}" for i in range(len(sessions))]
        dates = entry.get("haystack_dates") or [None] * len(sessions)
        need(len(ids) == len(sessions) == len(dates), here,
             f"{len(sessions)} haystack_sessions, {len(ids)} haystack_session_ids and {len(dates)} haystack_dates")
        for sid, when_text, turns in zip(ids, dates, sessions):
            sid = str(sid)
            if sid in seen:
                continue
            seen.add(sid)
            when = parse_date(when_text, f"{here}: session {sid} date") or date
            need(isinstance(turns, list), here, f"session {sid} is not a list of turns")
            for n, t in enumerate(turns):
                need(isinstance(t, Mapping), here, f"session {sid} turn {n} is not an object")
                text = content_text(t.get("content"))
                if t.get("role") in ROLES and text:
                    extra = {"has_answer": True} if t.get("has_answer") else {}
                    out.append(Turn(NAME, sid, n, t["role"], text, when, extra=extra))
    return out
