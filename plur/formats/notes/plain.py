"""Plain text and Markdown notes, and ChatGPT's saved memories (a plain list), read into :class:`Note` s. Pure.

``notes``
    Text or Markdown: a ``#`` heading opens a section (its type and ``section:<slug>`` tag, see
    :mod:`.sections`); each paragraph or list item is one note (type ``fact`` outside any section).
    YAML frontmatter at the top is skipped. Tag ``notes-import``.
``chatgpt-memory``
    What ChatGPT's Settings > Personalization > Manage memories shows, copied as text: one memory per
    line (a leading ``-``/``*``/number is dropped; the dialog's title "Saved memories", copied with it, is no
    memory but marks the list as ChatGPT's). ChatGPT's memories are about the user, so each is
    type ``user``. Tag ``chatgpt-import``.
"""

from __future__ import annotations

import re

from .sections import Note, note, paragraphs

NOTES_TAG = "notes-import"
CHATGPT_TAG = "chatgpt-import"
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
#: How ChatGPT words a saved memory: third person, the subject left out ("Prefers ...", "Is a ...").
_CHATGPT_START = re.compile(
    r"^(?:user(?:'s)?\b|the user\b|is|has|had|was|prefers?|likes?|loves?|enjoys?|wants?|lives?|works?|uses?|"
    r"owns?|plans?|studies|studying|speaks?|dislikes?|needs?|values?|goes by|name is|their)\b", re.I)


def read_notes(text: str) -> list[Note]:
    """Notes of plain text / Markdown (see the module doc)."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # frontmatter: not a note
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
        if end is not None:
            lines = lines[end + 1:]
    out: list[Note] = []
    heading, body = "", []
    for line in lines:
        m = _HEADING.match(line)
        if m:
            out.extend(note(p, heading, NOTES_TAG) for p in paragraphs(body))
            heading, body = m[1], []
        else:
            body.append(line)
    out.extend(note(p, heading, NOTES_TAG) for p in paragraphs(body))
    return out


#: The title of ChatGPT's memory dialog, copied with the list ("Saved memories"): not a memory, and it says
#: what the list is.
_CHATGPT_TITLE = re.compile(r"^\s*(?:#{1,6}\s*)?(?:saved memories|manage memories|memories)\s*:?\s*$", re.I)


def _untitled(text: str) -> tuple[str, bool]:
    """``text`` without a first line that is ChatGPT's memory dialog title, and whether it had one."""
    lines = text.strip().splitlines()
    if lines and _CHATGPT_TITLE.match(lines[0]):
        return "\n".join(lines[1:]), True
    return text, False


def read_chatgpt_memory(text: str) -> list[Note]:
    """One ``user`` note per non-blank line (see the module doc)."""
    out = []
    for line in _untitled(text)[0].splitlines():
        item = _BULLET.sub("", line).strip()
        if item and not _HEADING.match(line):
            out.append(note(item, "", CHATGPT_TAG, default_type="user"))
    return out


def looks_like_chatgpt_memory(text: str) -> bool | None:
    """``True`` when ``text`` is a list of ChatGPT-worded memories, ``False`` when it is not a one-per-line
    list at all (paragraphs separated by blank lines, headings), ``None`` when it is a plain list that could
    be either. A list under the dialog's title ("Saved memories") is ChatGPT's."""
    text, titled = _untitled(text)
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or any(_HEADING.match(line) for line in lines):
        return False
    blocks = re.split(r"\n\s*\n", text.strip())
    if len(blocks) > 1 and (not titled or any(len(b.splitlines()) > 1 for b in blocks)):
        return False  # paragraphs (text with blank lines between): notes, however each is worded
    items = [_BULLET.sub("", line).strip() for line in lines]
    if titled or sum(1 for i in items if _CHATGPT_START.match(i)) * 2 >= len(items):
        return True
    return None
