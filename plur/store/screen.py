"""The secret screen of imports: the one call site the importers use, until capture's screen lands.

:func:`screen_text` redacts credentials in a note's text before it is stored (an imported note keeps its
other words). Issue 42 B builds plur's one secret screen for capture; this module then delegates to it,
so imports and capture screen alike. Pure.
"""

from __future__ import annotations

import re

#: Credentials with a recognisable shape (provider prefixes, JWT, PEM keys, a password inside a URL).
_PATTERNS = (
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
    re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),
)
REDACTED = "[secret removed]"


def screen_text(text: str) -> tuple[str, int]:
    """``text`` with each credential replaced by :data:`REDACTED`, and how many were replaced."""
    n = 0
    for pattern in _PATTERNS:
        text, k = pattern.subn(REDACTED, text)
        n += k
    return text, n
