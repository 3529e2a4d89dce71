"""What memory holds, in a few lines: the block's overview when recall finds nothing for a message.

A memory block that comes back empty tells the model nothing, not even that memory exists. So when no
recalled note clears the relevance floor, or the message asks about the user as a whole ("what do you
know about me?", :func:`about_the_user`), the block carries an :class:`Overview`, small enough that the
whole block holding it stays within 150 tokens (:data:`OVERVIEW_TOKENS` for its lines, counted by
:func:`plur.prompt.block.estimate_tokens`, the block budget's own count)::

    Memory overview (nothing recalled): 3 notes, 1 pinned above:
    - The user's dog is called Biscuit.
    - We deploy the billing service from the branch release-candidate.

One line per note, of any type (MEMORY.md's habit: an index, a line each): while the scope's notes fit, every
one of them; beyond that the most used (recalls that cleared the floor plus useful feedback, from
``stats.db``; ties and unused notes: newest first), and a last line naming the recall tool. A note too long
for its line ends with ``…``. No note the overview lists is counted as shown (the block's ``engram_ids``, the
injections the web page counts): its lines carry no id and may be cut, so a hook host that keeps what it was
shown still injects the note whole, with its id, when a prompt asks for it (issue 46: Claude Code's
session-start overview listed a note cut short and the prompt that asked for it got nothing). Captured questions
of an earlier version (:func:`plur.memory.filters.asks`) are never listed nor counted.

An overview is built once per (memory, scope) and reused until the store changes
(:attr:`plur.memory.Memory.generation`, bumped by every write, this process's or another's), so a host
asking every turn pays one dictionary read.
"""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..store.engram import Engram
from .block import estimate_tokens, neutralise

#: Most tokens an overview's lines may take (newlines included): with the block's fence and header (at most
#: 50 tokens) a block holding only the overview stays within 150.
OVERVIEW_TOKENS = 100
#: Most tokens one note's line may take (longer: clipped, and not counted as shown), and the most notes an
#: overview considers (no more can fit :data:`OVERVIEW_TOKENS`).
NOTE_TOKENS = 24
MAX_NOTES = 16
#: Why the overview is there: the first line says which.
WHY_FLOOR = "nothing recalled"
WHY_ASKED = "asked about the user"
TOOL_LINE = "More in memory: recall tool (recall, plur_recall; shell: plur recall)."

#: Messages that ask about the user as a whole, or what memory holds (case-insensitive, searched anywhere
#: in the message). English, German, French, Spanish, Italian, Portuguese, Chinese, Japanese; tested by
#: tests/test_overview.py, each pattern with a near miss that must not match.
ABOUT_USER_PATTERNS = (
    r"\bwhat\s+(?:else\s+)?(?:do|did|can)\s+you\s+(?:know|remember|recall)\s+(?:about|of)\s+me\b",
    r"\bwhat\s+(?:do|did)\s+you\s+remember\s*(?:\?|$|about\s+(?:me|us)\b)",
    r"\bwhat\s+(?:have\s+you|did\s+you)\s+(?:learn(?:ed|t)?|store[d]?|save[d]?)\s+about\s+me\b",
    r"\bwhat(?:'s|\s+is)\s+in\s+(?:your|my)\s+memory\b",
    r"\btell\s+me\s+(?:what\s+you\s+know\s+)?about\s+(?:me|myself)\b",
    r"\bwho\s+am\s+i\b\s*\??\s*$",
    r"\bwas\s+wei(?:ß|ss)t\s+du\s+(?:alles\s+)?(?:über|von)\s+mich\b",
    r"\bwas\s+hast\s+du\s+dir\s+(?:über\s+mich\s+)?gemerkt\b",
    r"\b(?:que|qu'est-ce\s+que)\s+(?:sais-tu|tu\s+sais|savez-vous|vous\s+savez)\s+(?:de|sur)\s+moi\b",
    r"\bqu[ée]\s+sabes\s+(?:de|sobre)\s+m[ií]\b",
    r"\bcosa\s+sai\s+(?:di|su)\s+me\b",
    r"\bo\s+que\s+(?:voc[êe]\s+sabe|sabes)\s+sobre\s+mim\b",
    r"你(?:都)?(?:知道|记得|記得|了解)(?:关于|關於)?我(?:的)?(?:什么|什麼|多少|哪些|些什么)",
    r"你对我(?:有)?(?:多少)?了解",
    r"私(?:について|のこと)(?:を)?(?:何|なに)(?:を)?(?:知って|覚えて)",
)
_ABOUT_USER = re.compile("|".join(f"(?:{p})" for p in ABOUT_USER_PATTERNS), re.I | re.M)


def about_the_user(text: str) -> bool:
    """Whether ``text`` asks about the user as a whole or what memory holds (:data:`ABOUT_USER_PATTERNS`)."""
    return bool(text) and _ABOUT_USER.search(text) is not None


@dataclass(frozen=True)
class Overview:
    """The overview's parts, rendered by :func:`render`.

    Attributes:
        head: what memory holds, after the reason (``"14 notes, 1 pinned above"``, ``"no notes in global yet"``).
        notes: ``(engram id, line)`` of the notes it may list, most used first (lines already neutralised and
            cut to :data:`NOTE_TOKENS`).
        total: how many notes it could list (current, not pinned, not a captured question).
    """

    head: str
    notes: tuple[tuple[str, str], ...]
    total: int = 0


def render(overview: Overview, why: str, *, skip: frozenset[str] | set[str] = frozenset()
           ) -> tuple[list[str], tuple[str, ...]]:
    """The overview's lines and the ids of the notes it lists, within :data:`OVERVIEW_TOKENS`.

    Args:
        overview: from :func:`overview_for`. why: :data:`WHY_FLOOR` or :data:`WHY_ASKED`.
        skip: ids already shown elsewhere in the block (not listed twice).

    Returns:
        ``(lines, engram ids)``: every note that fits is listed, most used first; the tool line ends it when
        some are not.
        ``estimate_tokens("\n".join(lines) + "\n") <= OVERVIEW_TOKENS``.
    """
    notes = [n for n in overview.notes if n[0] not in skip]
    listable = overview.total - (len(overview.notes) - len(notes))
    head = f"Memory overview ({why}): {overview.head}"
    picked: list[tuple[str, str]] = []
    used = estimate_tokens(head + ":\n")
    for note in notes:
        cost = estimate_tokens(note[1] + "\n")
        tail = 0 if len(picked) + 1 == listable else estimate_tokens(TOOL_LINE + "\n")
        if used + cost + tail <= OVERVIEW_TOKENS:
            picked.append(note)
            used += cost
    every = len(picked) == listable
    lines = [head + (":" if picked else "."), *(line for _, line in picked)]
    if not every:
        lines.append(TOOL_LINE)
    return lines, tuple(eid for eid, _ in picked)


# -- building (cached per memory and scope until the store changes) ------------------------------

_cache: "weakref.WeakKeyDictionary[Any, dict[str | None, tuple[Any, Overview]]]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _scopes(scope: str | None) -> str:
    return "every scope" if scope is None else scope if scope == "global" else f"{scope} + global"


def _uses(memory: Any, ids: list[str]) -> dict[str, int]:
    """Engram id -> recalls above the floor + useful feedback ({} when stats are off or unreadable)."""
    if not ids or not getattr(memory.settings, "record_stats", True):
        return {}
    try:
        return memory.stats.uses(ids)
    except Exception:  # noqa: BLE001 - an overview without usage is still an overview
        return {}


def build(memory: Any, scope: str | None, now: datetime | None = None) -> Overview:
    """The overview of what ``memory`` holds for ``scope`` (``None``: every scope; else it plus ``global``).

    Not cached: :func:`overview_for` is the cached entry point. Reads every engram once (active and
    current at ``now`` only) and one stats query for the notes it may list.
    """
    from ..memory.filters import asks

    when = now or datetime.now(timezone.utc)
    every: list[Engram] = [e for e in memory.list()
                           if (scope is None or e.scope in (scope, "global")) and e.is_current(when) and not asks(e)]
    pinned = sum(1 for e in every if e.pinned)
    if every:
        head = f"{len(every)} note{'s' * (len(every) != 1)}" + (f", {pinned} pinned above" if pinned else "")
    else:
        head = f"no notes in {_scopes(scope)} yet"
    listable = [e for e in every if not e.pinned]
    uses = _uses(memory, [e.id for e in listable])
    listable.sort(key=lambda e: (uses.get(e.id, 0), e.created, e.id), reverse=True)
    notes = tuple((e.id, note_line(e)) for e in listable[:MAX_NOTES])
    return Overview(head=head, notes=notes, total=len(listable))


def note_line(engram: Engram, max_tokens: int = NOTE_TOKENS) -> str:
    """``- statement`` (neutralised), cut at a word and ended with ``…`` to fit ``max_tokens`` (newline
    included); the whole note is recalled, or ``plur show <id>``."""
    head, body = "- ", neutralise(engram.statement)

    def fits(n: int) -> str | None:
        cut = body if n >= len(body) else body[:n].rsplit(" ", 1)[0].rstrip(" &") + " …"
        line = head + cut
        return line if estimate_tokens(line + "\n") <= max_tokens else None

    if (whole := fits(len(body))) is not None:
        return whole
    lo, hi = 0, min(len(body) - 1, 5 * max_tokens)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) is not None else (lo, mid - 1)
    return fits(lo) or head + "…"


def overview_for(memory: Any, scope: str | None) -> Overview:
    """:func:`build`, cached per (memory, scope) until the memory's store changes.

    The key is :attr:`plur.memory.Memory.generation` read after :meth:`~plur.memory.Memory.pinned`
    (which first looks for other processes' writes); a memory without ``generation`` is not cached.
    """
    memory.pinned(scope)  # sees other writers' changes (bumps the generation) before the key is read
    gen = getattr(memory, "generation", None)
    if gen is not None:
        with _lock:
            got = _cache.get(memory, {}).get(scope)
        if got is not None and got[0] == gen:
            return got[1]
    ov = build(memory, scope)
    if gen is not None:
        with _lock:
            try:
                per = _cache.setdefault(memory, {})
            except TypeError:  # not weak-referenceable: no cache
                return ov
            if len(per) > 64:
                per.clear()
            per[scope] = (gen, ov)
    return ov
