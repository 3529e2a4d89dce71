"""The secret screen: keys, tokens, passwords and personal numbers found in text, and the text with them redacted.

Everything plur keeps from a conversation passes through :func:`screen` first: captured turns, the
recall log in ``stats.db`` (its ``query`` column), imported chats and notes, and the logs
(:mod:`plur.screen.logs`). A secret is replaced by ``[redacted <kind>]`` and the rest of the text is kept, so
"the staging box is blue7, token ghp_..." is still remembered as "the staging box is blue7, token [redacted
github-token]". Only the kinds found are counted (``stats.db``, table ``screened``); the secret is never written.

What is found, each by a module of its own:

* :mod:`plur.screen.keys`: vendor keys and tokens by their shape, PEM private key blocks, the password of a
  ``scheme://user:password@host`` URL (only the password: the host stays), and random-looking words;
* :mod:`plur.screen.said`: values given by name (``DB_PASSWORD=...``, ``db_password: ...``, ``"password": ...``,
  ``--api-key=...``, ``Authorization: Bearer ...``) and passwords said in words, in the overview's languages;
* :mod:`plur.screen.numbers`: payment card numbers (Luhn) and national identity numbers (``keep_ids`` keeps these);
* :mod:`plur.screen.pieces`: a key pasted in two pieces over two messages (its callers hold the earlier message).

Why redact instead of skipping the whole turn: the sentence around a key is often the very fact worth keeping
(which host, which service), and redaction here is conservative: a key's match is widened to the whole
whitespace-delimited word it sits in (a key glued to a longer token is not half-kept), less the sentence
punctuation that opens or closes that word (``key sk-..., keep it`` keeps its comma; see :func:`_widen`), and a
PEM block runs to its END line or to the end of the text. A value given by name is cut alone.

**Idempotent.** A ``[redacted <kind>]`` marker is read as a wall (:data:`plur.screen.keys.WALL`): nothing is found
in it, and no match runs into it, so screening a screened text changes nothing and a secret is counted once however
many doors screen it (capture, then ingest). One :func:`screen` call repeats until nothing is found, so a secret
that a redaction reveals is cut in the same call.

Why not detect-secrets: its entropy plugins look only inside quoted strings (prose has none), its
keyword plugin fires on ordinary sentences, it needs process-global settings, and it gives no
spans to redact. Measured: ``tests/test_screen_corpus.py`` (docs/security.md#secrets).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .keys import WALL, random_words, url_passwords, vendor_keys
from .numbers import cards, identity_numbers
from .said import assignments, said_passwords

__all__ = ["MARKER", "Finding", "Screened", "find_secrets", "redact", "screen"]


@dataclass(frozen=True)
class Finding:
    """One secret in a text: ``text[start:end]`` is what gets redacted (never stored anywhere)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Screened:
    """A screened text.

    Attributes:
        text: the input with every secret replaced by ``[redacted <kind>]`` (the input when clean).
        kinds: the kind of each secret found, in text order (empty when clean).
    """

    text: str
    kinds: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """True when nothing was found."""
        return not self.kinds


#: What the screen puts where a secret was; never a secret itself (a text is screened as if it were a wall).
MARKER = re.compile(r"\[redacted [a-z\-]{1,40}\]")
_BREAK = re.compile(r"[\s\x00\u2e80-\uffff]")
#: Punctuation a widened match gives back where its word begins / ends (never a key's character).
_OPENING = frozenset("([{<\"'`\u201c\u2018\u00ab")
_CLOSING = frozenset(",.;:!?)]}>\"'`\u201d\u2019\u00bb")
#: Rounds of :func:`screen` at most (a redaction can reveal another secret around it, so rarely a second round is
#: needed; each round only shrinks what is left to read, so the rounds end).
_ROUNDS = 8


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to the word(s) it touches (a word ends at whitespace, at a marker's wall and at a
    Chinese or Japanese character, since those scripts put no space around a key), less the sentence punctuation
    around them: opening brackets/quotes where the word begins and closing punctuation (``, . ; : ! ? ) ] }``,
    quotes) where it ends are given back, so ``key sk-..., keep it`` keeps its comma.

    Only characters outside the match itself are given back, and none of them is in a key's alphabet (base64
    and JWTs use letters, digits, ``-_+/=`` and inner dots), so no part of a key survives."""
    lo, hi = start, end
    while lo > 0 and not _BREAK.match(text[lo - 1]):
        lo -= 1
    while hi < len(text) and not _BREAK.match(text[hi]):
        hi += 1
    while lo < start and text[lo] in _OPENING:
        lo += 1
    while hi > end and text[hi - 1] in _CLOSING:
        hi -= 1
    return lo, hi


def _masked(text: str) -> str:
    """``text`` with each ``[redacted <kind>]`` marker turned into walls of the same length: what was redacted
    is never read again (so screening a screened text changes nothing), and no match runs into a marker."""
    if "[redacted " not in text:
        return text
    return MARKER.sub(lambda m: WALL * len(m.group()), text)


def find_secrets(text: str, *, keep_ids: bool = False) -> list[Finding]:
    """The secrets in ``text``, sorted by start, overlapping spans merged (the first kind kept).

    Args:
        text: any text (a chat turn, a recall query). ``[redacted <kind>]`` markers in it are never findings.
        keep_ids: leave national identity numbers (:data:`plur.screen.numbers.ID_KINDS`) alone (the setting
            ``keep_identity_numbers``); payment cards are found regardless.

    Returns:
        One :class:`Finding` per redacted span; ``[]`` for a clean text.
    """
    if not text:
        return []
    text = _masked(text)
    spans: list[Finding] = []
    for kind, start, end in vendor_keys(text):
        spans.append(Finding(kind, start, end) if kind == "private-key" else Finding(kind, *_widen(text, start, end)))
    spans += [Finding("url-password", start, end) for start, end in url_passwords(text)]
    spans += [Finding(kind, start, end) for kind, start, end in assignments(text)]
    spans += [Finding(kind, start, end) for kind, start, end in said_passwords(text)]
    for start, end, in_url in random_words(text):
        spans.append(Finding("high-entropy", *((start, end) if in_url else _widen(text, start, end))))
    spans += [Finding(kind, start, end) for kind, start, end in cards(text)]
    if not keep_ids:
        spans += [Finding(kind, start, end) for kind, start, end in identity_numbers(text)]
    spans.sort(key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for f in spans:
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            if f.end > last.end:
                merged[-1] = Finding(last.kind, last.start, f.end)
            continue
        merged.append(f)
    return merged


def screen(text: str, *, keep_ids: bool = False) -> Screened:
    """``text`` with every secret replaced by ``[redacted <kind>]``, and the kinds found (each secret once).

    Idempotent: ``screen(screen(t).text)`` finds nothing (a marker is never read again, and a redaction that
    reveals another secret around it, "token: <key> Abc123def", is screened again here until nothing is left).

    Args:
        keep_ids: see :func:`find_secrets`.

    >>> screen("deploy key AKIAIOSFODNN7EXAMPLE for the bucket").text
    'deploy key [redacted aws-access-key] for the bucket'
    """
    kinds: list[str] = []
    for _ in range(_ROUNDS):
        found = find_secrets(text, keep_ids=keep_ids)
        if not found:
            break
        out, pos = [], 0
        for f in found:
            out.append(text[pos:f.start])
            out.append(f"[redacted {f.kind}]")
            pos = f.end
        out.append(text[pos:])
        text = "".join(out)
        kinds += [f.kind for f in found]
    return Screened(text, tuple(kinds))


def redact(text: str, *, keep_ids: bool = False) -> str:
    """:func:`screen`'s text alone."""
    return screen(text, keep_ids=keep_ids).text
