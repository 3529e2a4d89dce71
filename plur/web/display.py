"""Text shown to a person: control and bidi characters made visible, everywhere plur displays a statement.

An engram's statement is any Unicode text, typed by a user or taken from a conversation an agent
saw, so it may hold terminal escape sequences (an OSC title ``\\x1b]0;...\\x07``), other C0/C1
controls, or bidi overrides and isolates (U+202A-U+202E, U+2066-U+2069; the "Trojan Source" trick,
Boucher & Anderson 2021) and zero-width characters (U+200B...) that make displayed text read differently
from what is stored. Human
output (the CLI's lines, the web page's text) goes through :func:`safe_text`; JSON output and the
stored file keep the exact text, and an edit form shows the exact text to edit.
"""

from __future__ import annotations

import re

#: C0 controls except tab and newline, DEL, C1 controls, the Arabic letter mark, LRM/RLM, the bidi
#: embeddings/overrides and isolates; and the invisible format characters that make two different texts
#: look the same (``admin\u200b@\u200bexample.com`` reads as a normal address): soft hyphen, combining
#: grapheme joiner, Mongolian vowel separator, zero-width space / non-joiner / joiner, word joiner and the
#: invisible operators (U+2060-U+2064), and the BOM / zero-width no-break space (issue 38).
#: The zero-width joiner and non-joiner are kept where scripts and emoji need them (Persian, Devanagari, a
#: family emoji) and shown as escapes next to ASCII, where no script needs them.
UNSAFE_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u061c\u180e\u200b\u200e\u200f\u202a-\u202e"
                       "\u2060-\u2064\u2066-\u2069\ufeff]"
                       "|(?<=[\x00-\x7f])[\u200c\u200d]|[\u200c\u200d](?=[\x00-\x7f])")


def safe_text(text: str) -> str:
    """``text`` with each unsafe character (:data:`UNSAFE_RE`) written as ``\\xNN`` / ``\\uNNNN``.

    >>> safe_text("paid \\u202e$0001")
    'paid \\\\u202e$0001'
    """
    def esc(m: re.Match[str]) -> str:
        c = ord(m.group())
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return UNSAFE_RE.sub(esc, str(text))


__all__ = ["UNSAFE_RE", "safe_text"]
