"""A key pasted in pieces: two messages of one conversation that each hold part of one key.

Neither piece alone need look like anything (a 32-character key sent as two 16-character halves is under the
random-looking rule's 20 characters, and the half after a vendor prefix is too short for the vendor's
pattern), so the screen reads them together: :func:`join` takes the last key-like word of the earlier
message and the first key-like word of the later one, and when the two make one key (a vendor's pattern
that runs on into the second piece, or a random-looking word of 20 characters or more) both pieces are
redacted. When the earlier piece was redacted already (long enough to be a key alone) and the later
message opens with the rest of it, that rest is redacted too.

Who calls it: capture, with the conversation's previous turn as memory stored it (the earlier note is
then rewritten without its piece), ingest for consecutive turns of one conversation, and the recall log
for one agent's consecutive queries. A key-like word is 6 characters or more of the base64 / url-safe
alphabet mixing at least two of digits, lower case and upper case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .keys import LETTER_RUN_MAX, VENDOR, random_looking
from .text import MARKER

_CASE_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+")

__all__ = ["Joined", "join"]

_PIECE = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{6,}(?![A-Za-z0-9+/=_\-])")
#: The kinds a redacted earlier piece may carry for the rest of it to be cut too.
_KEY_KINDS = frozenset(k for k, _ in VENDOR) | {"high-entropy", "split-key", "password", "bearer-token"}
#: The last characters of an earlier message read for its piece (bounds the work).
_TAIL_CHARS = 400
#: A later message's piece starts within its first characters ("and the rest: ..."), and an earlier message's piece
#: is its last word (closing punctuation aside).
_LEAD_CHARS = 40
_CLOSING = " \t\r\n.,;:!?)]}\"'`"


@dataclass(frozen=True)
class Joined:
    """Two messages with the pieces of one key redacted.

    Attributes:
        before: the earlier message, its piece redacted (unchanged when it was redacted already).
        text: the later message, its piece redacted (the rest of it still to be screened).
        kind: the key's kind (a vendor's, else ``split-key``).
        new: whether the key is found here (to be counted); False when the earlier piece was redacted (and counted)
            already and only the rest of it is cut now.
    """

    before: str
    text: str
    kind: str
    new: bool = True


def _keylike(word: str) -> bool:
    """Whether ``word`` may be a piece of a key: it mixes two of digits, lower and upper case, and holds a digit or
    changes case often (``TypeScript``, ``McDonald`` do not)."""
    classes = (any(c.isdigit() for c in word), any(c.islower() for c in word), any(c.isupper() for c in word))
    if sum(classes) < 2:
        return False
    runs = [len(r) for r in _CASE_RUN.findall(word)]
    return classes[0] or (bool(runs) and sum(runs) / len(runs) < LETTER_RUN_MAX)


def _rest_of_key(word: str) -> bool:
    """Whether ``word`` reads as the rest of a key: 8 characters or more, mixing, changing case often."""
    runs = [len(r) for r in _CASE_RUN.findall(word)]
    return len(word) >= 8 and _keylike(word) and bool(runs) and sum(runs) / len(runs) < LETTER_RUN_MAX


def _kind_of(key: str, first_len: int) -> str | None:
    """The kind of ``key`` when it is one key running past its first ``first_len`` characters, else None."""
    for kind, pattern in VENDOR:
        m = pattern.match(key)
        if m is not None and m.end() > first_len:
            return kind
    return "split-key" if random_looking(key) else None


def join(before: str, text: str) -> Joined | None:
    """``before`` and ``text`` (consecutive messages of one conversation) with the two pieces of one key
    redacted, or None when they hold no such pair.

    Args:
        before: the earlier message as it was kept (screened already). text: the later message as it came.
    """
    if not before or not text:
        return None
    first = next((m for m in _PIECE.finditer(text[:_LEAD_CHARS + 100]) if _keylike(m.group())), None)
    if first is None or first.start() > _LEAD_CHARS:
        return None
    tail_at = max(0, len(before) - _TAIL_CHARS)
    tail = before[tail_at:]
    marks = list(MARKER.finditer(tail))
    after_mark = bool(marks) and not tail[marks[-1].end():].strip(_CLOSING)
    tail = tail.rstrip(_CLOSING)
    last = next((m for m in _PIECE.finditer(tail, max(0, len(tail) - 200)) if m.end() == len(tail)), None)
    if last is not None and _keylike(last.group()) and not after_mark:
        kind = _kind_of(last.group() + first.group(), len(last.group()))
        if kind is not None:
            cut = tail_at + last.start()
            return Joined(before[:cut] + f"[redacted {kind}]" + before[tail_at + last.end():],
                          _cut(text, first, kind), kind)
    if after_mark and marks[-1].group()[10:-1] in _KEY_KINDS and _rest_of_key(first.group()):
        return Joined(before, _cut(text, first, "split-key"), "split-key", new=False)
    return None


def _cut(text: str, m: re.Match[str], kind: str) -> str:
    return text[:m.start()] + f"[redacted {kind}]" + text[m.end():]
