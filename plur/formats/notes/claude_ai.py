"""claude.ai's memory, as people actually have it: four shapes of text, read into :class:`Note` s. Pure.

claude.ai offers no file format for its memory; what people hold is text copied from it. Four shapes
are read (:func:`shape` tells which; :data:`SHAPES`):

``settings``
    The settings page's export: a ``=== MEMORY EXPORT ===`` banner (or none, when copied without it), ``## SECTION`` headings
    (``IDENTITY``, ``PREFERENCES``, ``PROJECTS``, ``TECHNICAL SETUP``...) and one fact per line,
    ``[unknown] - fact`` or ``[2026-05-02] - fact``. One note per fact; the ``[unknown]`` marker is
    dropped, a date becomes the note's ``created``.
``prose``
    The older export: plain headings (``Work context``, ``Personal context``, ``Top of mind``,
    ``Brief history``...) each over paragraphs. One note per paragraph.
``cards``
    Transcripts of the memory screen's cards: ``### Title (updated 2026-08-03)`` then ``Summary:``
    and ``Details:`` lines. One note per title: cards with the same title are merged (their text
    once, in order), the latest date is ``created`` and every date is kept (``updated_on``).
``bold``
    The older export with bold headings (``**Work context**``) over paragraphs. One note per paragraph.

Each section heading gives the note's type and a ``section:<slug>`` tag (:mod:`.sections`); every
note carries the tag ``claude-import``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from .sections import Note, note, paragraphs

TAG = "claude-import"
SHAPES = ("settings", "prose", "cards", "bold")
#: The plain headings of the older prose export (lower case, no colon).
PROSE_HEADINGS = ("work context", "personal context", "top of mind", "brief history", "recent months",
                  "earlier context", "long-term background", "other instructions", "preferences",
                  "instructions", "about me")

_BANNER = re.compile(r"^\s*=+\s*(?:END\s+)?MEMORY EXPORT\s*=+\s*$", re.I | re.M)
_SECTION = re.compile(r"^\s*#{1,3}\s+(.+?)\s*#*\s*$")
_FACT = re.compile(r"^\s*(?:[-*]\s*)?\[(?P<when>[^\]]*)\]\s*[-–—:]?\s*(?P<text>.+)$")
_CARD = re.compile(r"^\s*#{2,4}\s+(?P<title>.+?)\s*\(\s*updated\s+(?P<date>\d{4}-\d{2}-\d{2})\s*\)\s*$", re.I)
_CARD_FIELD = re.compile(r"^\s*(?:\*\*)?(summary|details)(?:\*\*)?\s*:\s*(?:\*\*)?\s*(.*)$", re.I)
_BOLD = re.compile(r"^\s*\*\*(?P<title>[^*]{2,80})\*\*\s*:?\s*$")


def _plain_heading(line: str) -> str | None:
    text = line.strip().rstrip(":").strip().lstrip("#").strip()
    return text if text.lower() in PROSE_HEADINGS else None


#: A fact line of the settings export, by its marker alone: ``[unknown] - ...`` or ``[2026-05-02] - ...``.
_MARKED = re.compile(r"^\s*(?:[-*]\s*)?\[(?:unknown|\d{4}-\d{2}-\d{2})\]\s*[-–—:]\s*\S", re.I)


def shape(text: str) -> str | None:
    """Which of :data:`SHAPES` ``text`` is, or ``None`` when it is none of them. The settings export is told
    by its banner, or without one (copied from below it) by its fact lines: two or more lines marked
    ``[unknown] -`` or ``[<date>] -`` and no other text line outside headings."""
    if _BANNER.search(text):
        return "settings"
    body = [line for line in text.splitlines() if line.strip() and not _SECTION.match(line)]
    marked = sum(1 for line in body if _MARKED.match(line))
    if marked >= 2 and marked == len(body):
        return "settings"
    lines = text.splitlines()
    if any(_CARD.match(line) for line in lines):
        return "cards"
    bold = [m["title"] for line in lines if (m := _BOLD.match(line))]
    if sum(1 for t in bold if t.strip().rstrip(":").lower() in PROSE_HEADINGS) >= 1 and len(bold) >= 2:
        return "bold"
    if sum(1 for line in lines if _plain_heading(line)) >= 2:
        return "prose"
    return None


def read(text: str, kind: str | None = None) -> list[Note]:
    """The notes of a claude.ai memory text of shape ``kind`` (default :func:`shape`; ``None`` -> ``[]``)."""
    kind = kind or shape(text)
    if kind == "settings":
        return _settings(text)
    if kind == "cards":
        return _cards(text)
    if kind in ("prose", "bold"):
        return _headed(text, kind)
    return []


def _date(text: str) -> datetime | None:
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _settings(text: str) -> list[Note]:
    out: list[Note] = []
    heading = ""
    for line in text.splitlines():
        if not line.strip() or _BANNER.match(line):
            continue
        if m := _SECTION.match(line):
            heading = m[1].strip()
            continue
        if m := _FACT.match(line):
            fact, when = m["text"], _date(m["when"])
        else:  # a fact line without the bracket marker ("- fact" or plain text)
            fact, when = re.sub(r"^\s*[-*•]\s+", "", line), None
        if fact.strip():
            out.append(note(fact, heading, TAG, created=when))
    return out


def _cards(text: str) -> list[Note]:
    cards: dict[str, dict] = {}  # title (case-folded) -> {title, dates, parts}
    cur: dict | None = None
    for line in text.splitlines():
        if m := _CARD.match(line):
            key = " ".join(m["title"].split()).casefold()
            cur = cards.setdefault(key, {"title": " ".join(m["title"].split()), "dates": [], "parts": []})
            cur["dates"].append(m["date"])
            continue
        if cur is None or not line.strip():
            continue
        f = _CARD_FIELD.match(line)
        part = (f[2] if f else line).strip()
        if part and part not in cur["parts"]:
            cur["parts"].append(part)
    out = []
    for card in cards.values():
        if not card["parts"]:
            continue
        dates = sorted(set(card["dates"]))
        out.append(note("\n".join(card["parts"]), card["title"], TAG, created=_date(dates[-1]),
                        name=card["title"], updated_on=dates))
    return out


def _headed(text: str, kind: str) -> list[Note]:
    out: list[Note] = []
    heading, body = "", []

    def flush() -> None:
        out.extend(note(p, heading, TAG) for p in paragraphs(body))

    for line in text.splitlines():
        if kind == "bold":
            m = _BOLD.match(line)
            title = m["title"].strip().rstrip(":") if m else None
        else:
            title = _plain_heading(line)
        if title:
            flush()
            heading, body = title, []
        else:
            body.append(line)
    flush()
    return out
