"""The secret screen: API keys, tokens and passwords found in text, and the text with them redacted.

Everything plur keeps from a conversation passes through :func:`screen` first: captured turns, the
recall log in ``stats.db`` (its ``query`` column), imported chats. A secret is replaced by
``[redacted <kind>]`` and the rest of the text is kept, so "the staging box is blue7, token
ghp_..." is still remembered as "the staging box is blue7, token [redacted github-token]". Only
the kinds found are counted (``stats.db``, table ``screened``); the secret text is never written.

Why redact instead of skipping the whole turn: the sentence around a key is often the very fact
worth keeping (which host, which service), and redaction here is conservative: a match is widened
to the whole whitespace-delimited word it sits in (a key glued to a longer token is not half-kept),
less the sentence punctuation that opens or closes that word (``key sk-..., keep it`` keeps its
comma; see :func:`_widen`), and a PEM block runs to its END line or to the end of the text. Only the password
of a ``scheme://user:password@host`` URL is cut, so the host stays.

What is found (patterns after gitleaks' and detect-secrets' rules for the same vendors):
AWS access key ids, GitHub (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``, ``github_pat_``), GitLab,
OpenAI (``sk-``, ``sk-proj-``), Anthropic (``sk-ant-``), Slack (``xox?-``, ``xapp-``, webhooks),
Stripe, Google API keys, Hugging Face, npm, JWTs, PEM private key blocks, passwords in URLs,
``password=...`` style assignments whose value is not a plain word, and other high-entropy words.

The high-entropy rule (:func:`_random_looking`) is tuned against false positives: a word of at
least 20 characters from the base64/url-safe alphabet that holds an upper-case letter, a
lower-case letter and a digit, whose Shannon entropy is at least 3.5 bits per character and whose
letters change case often (case runs averaging under 3.5 characters: random text does, CamelCase
names and paths do not). Hex-only words (commit ids, content hashes), UUIDs and engram ids never match
it; path segments of a URL do not either (a URL's query values do). Keys made only of hex digits
or lower case are therefore missed unless a vendor pattern knows them: documented, accepted.

Why not detect-secrets: its entropy plugins look only inside quoted strings (prose has none), its
keyword plugin fires on ordinary sentences, it needs process-global settings, and it gives no
spans to redact.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

__all__ = ["Finding", "Screened", "find_secrets", "redact", "screen"]


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


_W = r"[A-Za-z0-9_\-]"
#: Kinds whose pattern admits hyphenated words ("sk-learn-..."): a match must also mix cases and digits.
_MIXED = frozenset({"anthropic-key", "openai-key", "gitlab-token", "slack-token"})
#: (kind, pattern). Order matters where prefixes overlap: the more specific first.
_VENDOR: tuple[tuple[str, re.Pattern[str]], ...] = tuple((k, re.compile(p)) for k, p in (
    ("private-key", r"(?s)-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
                    r"(?:.*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*\Z)"),
    ("anthropic-key", rf"\bsk-ant-{_W}{{20,}}"),
    ("openai-key", rf"\bsk-(?:(?:proj|svcacct|admin|None)-{_W}{{20,}}|[A-Za-z0-9]{{20,}})"),
    ("aws-access-key", r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z2-7]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"\b(?:xox[abposr]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,})"),
    ("slack-webhook", r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/_\-]{20,}"),
    ("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("google-api-key", r"\bAIza[A-Za-z0-9_\-]{35}"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
))

#: ``scheme://user:password@host``: only the password (group 1) is redacted.
_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s:/@]+:([^\s/@]+)@[^\s/@]")
#: ``password = value``, ``api_key: value``, ``my password is value``: the value (group 1).
_ASSIGNED = re.compile(
    r"(?i)\b(?:password|passwd|passphrase|pwd|secret|client[_\- ]?secret|api[_\- ]?key|apikey|"
    r"access[_\- ]?key|secret[_\- ]?key|private[_\- ]?key|auth[_\- ]?token|access[_\- ]?token|token)"
    r"(?:\s*[:=]\s*|(?<=word)\s+is\s+|(?<=phrase)\s+is\s+)[\"'`]?([^\s\"'`]{6,})")
#: Words of the base64 / url-safe alphabet, at least 20 characters: candidates for the entropy rule.
_WORDISH = re.compile(r"[A-Za-z0-9+/_=\-]{20,}")
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://\S+")
_HEX = re.compile(r"[0-9a-fA-F\-]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ENGRAM_ID = re.compile(r"ENG-\d{4}-\d{2}-\d{2}-[0-9a-f]{6}")
_CASE_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+")
_SPACE = re.compile(r"\s")
#: Punctuation a widened match gives back where its word begins / ends (never a key's character).
_OPENING = frozenset("([{<\"'`\u201c\u2018\u00ab")
_CLOSING = frozenset(",.;:!?)]}>\"'`\u201d\u2019\u00bb")

#: Minimum Shannon entropy (bits per character) of a random-looking word. A random base62 word of
#: 20 characters averages about 4.0 bits (40 characters: 4.7); English CamelCase runs 3.3-3.9.
ENTROPY_MIN_BITS = 3.5
#: A random-looking word's letters, cut into runs (a capital and the lower case after it, or upper
#: case alone), average fewer characters than this; names made of words average 4 or more.
#: Measured on ``secrets.token_urlsafe``: under 1% of random 20-40 character words average more.
LETTER_RUN_MAX = 3.5
#: ... or that hold this share of their letters in runs of 4 or more ("v2v2getHttpCodeHandler": 0.75);
#: random words of 20 characters reach it 1 time in 100 or less.
WORDY_SHARE_MIN = 0.75
#: Minimum length of a word the entropy rule looks at.
RANDOM_MIN_CHARS = 20


def _entropy(word: str) -> float:
    """Shannon entropy of the characters of ``word``, bits per character."""
    n = len(word)
    return -sum(c / n * math.log2(c / n) for c in Counter(word).values())


def _mixed(word: str) -> bool:
    """Whether ``word`` holds a digit, an upper-case and a lower-case letter."""
    return any(c.isdigit() for c in word) and any(c.islower() for c in word) and any(c.isupper() for c in word)


def _random_looking(word: str) -> bool:
    """Whether ``word`` (from :data:`_WORDISH`) looks like a random token (a key) rather than a name."""
    core = word.strip("=-_/+")
    if len(core) < RANDOM_MIN_CHARS or _HEX.fullmatch(core) or _UUID.search(core) or _ENGRAM_ID.search(core):
        return False
    if not _mixed(core):
        return False
    runs = [len(r) for r in _CASE_RUN.findall(core)]
    letters = sum(runs)
    if letters / len(runs) >= LETTER_RUN_MAX or sum(n for n in runs if n >= 4) / letters >= WORDY_SHARE_MIN:
        return False                     # CamelCase, snake_case, paths: made of words
    return _entropy(core) >= ENTROPY_MIN_BITS


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to the whitespace-delimited word(s) it touches, less the sentence punctuation
    around them: opening brackets/quotes where the word begins and closing punctuation (``, . ; : ! ? ) ] }``,
    quotes) where it ends are given back, so ``key sk-..., keep it`` keeps its comma.

    Only characters outside the match itself are given back, and none of them is in a key's alphabet (base64
    and JWTs use letters, digits, ``-_+/=`` and inner dots), so no part of a key survives."""
    lo, hi = start, end
    while lo > 0 and not _SPACE.match(text[lo - 1]):
        lo -= 1
    while hi < len(text) and not _SPACE.match(text[hi]):
        hi += 1
    while lo < start and text[lo] in _OPENING:
        lo += 1
    while hi > end and text[hi - 1] in _CLOSING:
        hi -= 1
    return lo, hi


def find_secrets(text: str) -> list[Finding]:
    """The secrets in ``text``, sorted by start, overlapping spans merged (the first kind kept).

    Args:
        text: any text (a chat turn, a recall query).

    Returns:
        One :class:`Finding` per redacted span; ``[]`` for a clean text.
    """
    if not text:
        return []
    spans: list[Finding] = []
    for kind, pattern in _VENDOR:
        for m in pattern.finditer(text):
            if kind in _MIXED and not _mixed(m.group()):
                continue
            if kind == "private-key":
                spans.append(Finding(kind, m.start(), m.end()))
            else:
                spans.append(Finding(kind, *_widen(text, m.start(), m.end())))
    for m in _URL_PASSWORD.finditer(text):
        spans.append(Finding("url-password", m.start(1), m.end(1)))
    for m in _ASSIGNED.finditer(text):
        value = m.group(1).rstrip(".,;:!?)]}")
        if len(value) >= 6 and not value.isalpha():
            spans.append(Finding("password", m.start(1), m.start(1) + len(value)))
    urls = [(u.start(), u.end()) for u in _URL.finditer(text)]
    for m in _WORDISH.finditer(text):
        in_url = any(a <= m.start() < b for a, b in urls)
        if in_url and text[m.start() - 1] != "=":      # a URL's path is not a secret; its query values may be
            continue
        if _random_looking(m.group()):
            spans.append(Finding("high-entropy", *_widen(text, m.start(), m.end()) if not in_url
                                 else (m.start(), m.end())))
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


def screen(text: str) -> Screened:
    """``text`` with every secret replaced by ``[redacted <kind>]``, and the kinds found.

    >>> screen("deploy key AKIAIOSFODNN7EXAMPLE for the bucket").text
    'deploy key [redacted aws-access-key] for the bucket'
    """
    found = find_secrets(text)
    if not found:
        return Screened(text)
    out, pos = [], 0
    for f in found:
        out.append(text[pos:f.start])
        out.append(f"[redacted {f.kind}]")
        pos = f.end
    out.append(text[pos:])
    return Screened("".join(out), tuple(f.kind for f in found))


def redact(text: str) -> str:
    """:func:`screen`'s text alone."""
    return screen(text).text
