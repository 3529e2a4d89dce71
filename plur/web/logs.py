"""Views of what memory did in conversations: the conversations it holds turns of, and the injection log.

Like :mod:`plur.web.views`, each returns a :class:`~plur.web.views.Page` (template + JSON-safe data) from the
:class:`plur.memory.Memory` facade and plain parameters.

* :func:`conversations_page`: every conversation memory holds turns of (``plur sessions``), each with a link
  to its turns in the table and a button that forgets it whole (:func:`forget_conversation`, the code path of
  ``plur forget --session``).
* :func:`injections_page`: which block went into which agent's prompt, when, and for which message (the
  recall log's ``injections`` rows, :meth:`plur.stats.db.StatsDB.injections`); a search finds the block a
  given message got.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from . import table
from .views import Caches, Page, _NO_CACHE, _engrams

if TYPE_CHECKING:  # pragma: no cover
    from ..memory import Memory

#: Rows per page of the injection log.
INJECTIONS_PER_PAGE = 50
#: Longest search text the injection log accepts (characters).
MAX_SEARCH_CHARS = 1000


def conversations_page(memory: "Memory", params: Mapping[str, str], caches: Caches = _NO_CACHE) -> Page:
    """Conversations memory holds turns of, newest first (:meth:`plur.memory.Memory.sessions`).

    Args:
        memory: the facade.
        params: ``forgotten`` and ``n`` after a forget (the notice says which conversation went, and how
            many notes with it).
        caches: unused (the signature every view shares).
    """
    rows = [asdict(s) for s in memory.sessions()]
    forgotten = (params.get("forgotten") or "").strip()
    n = (params.get("n") or "").strip()
    notice = None
    if forgotten and n.isdigit():
        notice = f"Forgot conversation {forgotten} ({int(n)} note{'s' if int(n) != 1 else ''})."
    return Page("conversations.html", {"conversations": rows, "notice": notice})


def forget_conversation(memory: "Memory", form: Mapping[str, str]) -> tuple[str, int]:
    """Forget every note of the conversation in form field ``session``: :meth:`plur.memory.Memory.forget_session`,
    the code path of ``plur forget --session`` (files, index rows, cached vectors, stats.db rows, the recall
    queries and injection messages that repeat its turns).

    Returns:
        ``(session, notes forgotten)``.

    Raises:
        ValidationError: no ``session`` field.
        NotFoundError: memory holds no turn of it.
    """
    session = form.get("session") or ""
    if not session.strip():
        raise ValidationError("forget a conversation: the form field 'session' is empty; pick one on /conversations")
    return session, len(memory.forget_session(session))


def _positive(params: Mapping[str, str], name: str, default: int) -> int:
    raw = (params.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ValidationError(f"{name}={raw!r} is not a positive whole number; use e.g. {name}={default}")
    return int(raw)


def injections_page(memory: "Memory", params: Mapping[str, str], caches: Caches = _NO_CACHE) -> Page:
    """The injection log: each memory block that went into a prompt, newest first, with the agent, the time,
    the message it was recalled for and its notes in block order.

    Args:
        memory: the facade.
        params: ``q`` (words of the message, case-insensitive), ``agent`` (exactly), ``engram`` (blocks that
            held this id), ``page`` (1-based, :data:`INJECTIONS_PER_PAGE` rows each).
        caches: unused (the signature every view shares).

    Raises:
        ValidationError: a bad ``page``, a search over :data:`MAX_SEARCH_CHARS` characters.
    """
    q = (params.get("q") or "").strip()
    if len(q) > MAX_SEARCH_CHARS:
        raise ValidationError(f"q is {len(q)} characters, over {MAX_SEARCH_CHARS}; search for fewer words")
    agent = (params.get("agent") or "").strip()
    engram = (params.get("engram") or "").strip()
    page = _positive(params, "page", 1)
    matched, rows = memory.stats.injections(text=q or None, agent=agent or None, engram_id=engram or None,
                                            limit=INJECTIONS_PER_PAGE, offset=(page - 1) * INJECTIONS_PER_PAGE)
    by_id = {e.id: e for e in _engrams(memory)}
    out: list[dict[str, Any]] = []
    for r in rows:
        notes = []
        for position, engram_id in enumerate(r["engram_ids"], 1):
            e = by_id.get(engram_id)
            notes.append({"position": position, "id": engram_id, "scope": e.scope if e else None,
                          **table.listed_statement(e.statement if e else None)})
        out.append({"id": r["injection_id"], "time": table.iso(r["time"]), "agent": r["agent"],
                    "message": r["message"], "tokens": r["tokens"], "block_hash": r["block_hash"], "engrams": notes})
    pages = max(1, -(-matched // INJECTIONS_PER_PAGE))
    agents = memory.stats.injection_agents()
    return Page("injections.html", {"filters": {"q": q, "agent": agent, "engram": engram}, "matched": matched,
                                    "page": page, "pages": pages, "injections": out, "agents": agents})
