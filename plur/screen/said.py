"""Passwords and keys given by name: assignments (``.env``, YAML, JSON, TOML, command-line flags, HTTP
``Authorization`` headers) and passwords said in words, in the languages the block's overview understands
(English, German, French, Spanish, Italian, Portuguese, Chinese, Japanese: :mod:`plur.prompt.overview`).

Only the value is cut; the name stays (``DB_PASSWORD=[redacted password]``), so what the setting was for
is still remembered. How sure the screen is that a value is a secret depends on how it was named:

* **a configuration name** (``DB_PASSWORD=``, ``db_password:``, ``"password":``, ``--api-key=``, an upper-case
  ``PASSWORD=``): any value of 3 characters or more, unless it is a placeholder or a reference (``${VAR}``,
  ``<your-key>``, ``os.environ[...]``, ``tokenizer.eos_token``, ``null``, ``***``);
* **a word in a sentence** ("my password is ...", "le mot de passe du wifi : ...", "密码是..."): a value of 4
  characters or more that is not a plain word: it holds a digit or a symbol, changes case inside, or is
  quoted ("the password is expired", "the secret is out" keep their word). Between a password word and its
  verb only a phrase that starts with a preposition may stand ("my password *for the company system* is
  ..."), so "my password manager is 1Password" is left alone. A token, key or secret is named right before its
  verb ("my api key is ...", "the token: ..."), and its value has 6 characters or more.

Names and verbs the screen reads, and placeholders it leaves alone, are the lists below.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["assignments", "said_passwords"]

#: Names whose value is a secret, as the last part of a configuration name (``DB_PASSWORD``, ``api_key``).
_CONFIG_NAME = (r"password|passwd|passphrase|pwd|pass|secret|token|api[_\-]?key|apikey|access[_\-]?key|"
                r"secret[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?token|access[_\-]?token|"
                r"account[_\-]?key|shared[_\-]?access[_\-]?key|credentials?")
_VALUE = r"""(?:"(?P<dq>[^"\n\x00]{1,500})"|'(?P<sq>[^'\n\x00]{1,500})'|(?P<bare>[^\s"'`,;\x00]{1,500}))"""
#: ``name = value``, ``name: value``, ``"name": "value"``, ``--name=value``, ``name => value``.
_ASSIGN = re.compile(
    rf"(?i)(?P<flag>--?)?(?P<quote>[\"'])?(?P<prefix>(?<![A-Za-z0-9_.\-])[A-Za-z0-9]+(?:[_.\-][A-Za-z0-9]+)*?[_.\-])?"
    rf"(?<![A-Za-z0-9])(?P<name>{_CONFIG_NAME})(?![A-Za-z0-9])(?P=quote)?"
    rf"(?P<sep>[ \t]*(?::=|=>|[:=])[ \t]*)(?!=){_VALUE}")
#: ``Authorization: Bearer <token>`` / ``Basic <base64>`` (the scheme's word, then the credential).
_AUTH_HEADER = re.compile(r"\b(?:[Bb]earer|Basic)[ \t]+(?P<value>[A-Za-z0-9._~+/\-]{8,}=*)")

#: Words for a password, in the overview's languages.
_PASSWORD_WORDS = (r"(?<![A-Za-z0-9])(?:passwords?|passwort|kennwort|passphrase|pass\s?phrase|passcode|mot\s+de\s+passe|"
                   r"mdp|contrase[ñn]a|clave(?:\s+de\s+acceso)?|parola\s+d['’]ordine|senha|palavra[\s\-]passe)"
                   r"|密码|密碼|口令|パスワード|暗証番号")
#: Words for a key or a token (named right before the verb).
_KEY_WORDS = (r"(?<![A-Za-z0-9])(?:api[\s\-_]?key|secret[\s\-_]?key|access[\s\-_]?key|access[\s\-_]?token|auth[\s\-_]?token|"
              r"bearer\s+token|token|secret|client\s+secret|api[\s\-]?schl[üu]ssel|cl[ée]\s+(?:d['’]\s*)?api|"
              r"clave\s+(?:de\s+)?(?:la\s+)?api|chiave\s+(?:dell['’]\s*)?api|chave\s+(?:de\s+|da\s+)?api|"
              r"api\s*密钥|api\s*キー)|密钥|秘钥|アクセストークン|トークン")
#: A phrase between a password word and its verb starts with one of these ("password *for the wifi* is").
_PREPOSITION = (r"for|to|of|on|at|from|in|f[üu]r|zu[mr]?|vo[mn]|bei|de|du|des|pour|del|de\s+la|d['’]|do|da|dos|"
                r"das|della|dello|per|para|al")
#: The verb (or sign) that gives the value.
_COPULA = (r"(?:\s*[:：]\s*|\s+(?:is|was|are|ist|lautet|hei[ßs]t|war|est|c['’]est|[ée]tait|es|era|[èé]|e['’]|"
           r"sono|s[ãa]o|changed\s+to|set\s+to|updated\s+to|reset\s+to)(?:\s+(?:now|still|jetzt|maintenant|"
           r"ahora|adesso|agora|ora))?\s*:?\s+|\s*(?:是|为|為|は|が)\s*(?:[:：]\s*)?)")
#: The value said: quoted, or up to a space, a quote or a CJK character (Chinese and Japanese need no space).
_SAID_VALUE = (r"""(?:["“'‘«「『](?P<quoted>[^"”'’»」』\n\x00]{1,200})["”'’»」』]|"""
               r"""(?P<plain>[^\s"'`<>\x00\u2e80-\uffff]{1,200}))""")
_SAID = re.compile(
    rf"(?i)(?:(?P<pw>{_PASSWORD_WORDS})(?P<phrase>\s+(?:{_PREPOSITION})(?:\s+[^\s.,;:!?=()\x00]+){{0,5}}?)?"
    rf"|(?P<key>{_KEY_WORDS})){_COPULA}{_SAID_VALUE}")
#: A PIN said in words: 4 to 8 digits only.
_PIN = re.compile(r"(?i)(?<![A-Za-z0-9])(?:PIN(?:[\s\-]?(?:code|number|nummer))?|code\s+PIN|Geheimzahl|暗証番号|PIN码)"
                  rf"{_COPULA}(?P<pin>\d{{4,8}})(?!\d)")

_PLACEHOLDER_WORDS = frozenset("""none null nil undefined true false yes no on off required optional empty string str
bool int number example sample placeholder redacted hidden masked todo tbd fake dummy""".split())
_REFERENCE = re.compile(r"[$%{<\[()\\]|your[_\-\s]|os\.|process\.env|env\(|getenv|secrets\.|vault:|ENC\[|!!|\*{2,}|\.{3}|"
                        r"x{4,}|X{4,}|•")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_CODE_REF = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+(?:\(\))?|[A-Za-z_][\w.]*[\[(].*")
#: Words that mark a value as an example, not a secret.
_EXAMPLE = re.compile(r"(?i)fake|dummy|example|placeholder|\.\.\.|…")
#: What follows a quoted value in an expression ("plur_" + ...): code, not a setting.
_EXPRESSION = re.compile(r"\s*[+%*(\[]|\.\w")
_TRAILING = ".,;:)]}>\"'”’»"
#: What may follow a value that stands alone on its line (a YAML entry, a comment after it).
_LINE_END = re.compile(r"[ \t]*(?:#.*)?(?:\r?\n|$)")


def _placeholder(value: str) -> bool:
    """Whether ``value`` names no secret: a placeholder, a reference to one, or a code expression."""
    v = value.strip()
    return (not v or v.lower() in _PLACEHOLDER_WORDS or bool(_REFERENCE.match(v)) or v.startswith(("your", "YOUR"))
            or bool(_ENV_NAME.fullmatch(v)) or bool(_CODE_REF.fullmatch(v)) or len(set(v)) == 1
            or "://" in v or v.startswith(("/", "~/", "./")) or _EXAMPLE.search(v) is not None)


def _not_plain(value: str) -> bool:
    """Whether ``value`` is not a plain word (nor words joined by ``_`` or ``-``): it holds a digit, a symbol, or a
    capital after a lower-case letter."""
    return (any(not c.isalpha() and c not in "_-" for c in value)
            or any(a.islower() and b.isupper() for a, b in zip(value, value[1:])))


def _quoted_expression(text: str, after: int, group: str) -> bool:
    """Whether the quoted value ending before ``after`` is part of an expression (``"plur_" + ...``)."""
    return group != "bare" and _EXPRESSION.match(text, after) is not None


#: What a name of a secret holds (lower-cased): where :data:`_ASSIGN` is tried. Same for the words of :data:`_SAID`
#: and :data:`_PIN`. Matching the patterns only near these (found as substrings, in C) keeps a clean text cheap.
_NAME_HINTS = ("pass", "pwd", "secret", "token", "key", "credential")
_SAID_HINTS = ("pass", "pwd", "secret", "token", "key", "mot de", "mdp", "contrase", "clave", "parola", "senha",
               "palavra", "schl", "clé", "chiave", "chave", "密", "口令", "パスワード", "暗証", "キー", "トークン")
_PIN_HINTS = ("pin", "geheimzahl", "暗証")
_IDENT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def _lower(text: str) -> str:
    """``text`` lower-cased, character for character (positions kept)."""
    low = text.lower()
    if len(low) != len(text):                 # only "\u0130" (I with a dot) lower-cases to two characters
        low = text.replace("\u0130", "i").lower()
    return low if len(low) == len(text) else "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


_HINT_RE: dict[tuple[str, ...], re.Pattern[str]] = {}


def _hits(low: str, hints: tuple[str, ...]) -> Iterator[int]:
    """Where in ``low`` one of ``hints`` starts (one scan: an alternation of literals)."""
    pattern = _HINT_RE.get(hints)
    if pattern is None:
        pattern = _HINT_RE[hints] = re.compile("|".join(re.escape(h) for h in hints))
    return (m.start() for m in pattern.finditer(low))


def _matches(pattern: re.Pattern[str], text: str, starts: set[int]) -> Iterator[re.Match[str]]:
    """``pattern``'s matches starting at one of ``starts``, leftmost first, none overlapping (what ``finditer``
    finds, when every match starts at one of them)."""
    end = -1
    for start in sorted(starts):
        if start >= end and (m := pattern.match(text, start)) is not None:
            end = max(m.end(), start + 1)
            yield m


def _word_starts(low: str, hints: tuple[str, ...], back: int) -> set[int]:
    """Where a phrase holding a hint may start: the hint itself, and the starts of words up to ``back`` characters
    before it ("mot de *passe*", "api *key*")."""
    return {p for i in _hits(low, hints) for p in range(max(0, i - back), i + 1) if p == i or not low[p - 1].isalnum()}


def _name_starts(text: str, low: str) -> set[int]:
    """Where an assignment may start: at the name holding a hint, at each part of it, and just before it (a quote,
    a flag's dashes)."""
    starts: set[int] = set()
    for i in _hits(low, _NAME_HINTS):
        j = i
        while j > 0 and i - j < 100 and low[j - 1] in _IDENT:
            j -= 1
        starts.update(range(max(0, j - 3), j + 1))
        starts.update(p for p in range(j + 1, i + 1) if text[p - 1] in "_.-")
    return starts


def assignments(text: str) -> Iterator[tuple[str, int, int]]:
    """``(kind, start, end)`` of the value of each secret assignment and ``Authorization`` credential in ``text``."""
    if ("earer" in text or "Basic" in text) and (":" in text or "=" in text or " " in text):
        yield from _auth_headers(text)
    if not ("=" in text or ":" in text):
        return
    for m in _matches(_ASSIGN, text, _name_starts(text, _lower(text))):
        group = "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "bare"
        value = m.group(group)
        start = m.start(group)
        if _EXAMPLE.search(value) or _quoted_expression(text, m.end(group) + 1, group):
            continue                                        # "sk-...", token = "plur_" + secrets.token_urlsafe()
        if group == "bare":
            value = value.rstrip(_TRAILING)
        name, prefix, sep = m.group("name"), m.group("prefix") or "", m.group("sep").strip()
        if name.lower() in ("pass", "credential", "credentials") and not prefix:
            continue                                        # "pass: true", "credentials: see below"
        if _placeholder(value) or value.lower() in (name.lower(), (prefix + name).lower()):
            continue                                        # "${DB_PASSWORD}", "self.token = token"
        quoted = group != "bare"
        alone = _LINE_END.match(text, start + len(value)) is not None
        configured = ((prefix + name).isupper() or (m.group("flag") and sep == "=")
                      or (quoted and (m.group("quote") or prefix or sep == "="))
                      or (prefix and sep == ":" and alone))
        if configured and len(value) >= 3 or len(value) >= 6 and _not_plain(value):
            yield "password", start, start + len(value)


def _auth_headers(text: str) -> Iterator[tuple[str, int, int]]:
    for m in _AUTH_HEADER.finditer(text):
        value = m.group("value")
        if _not_plain(value) and not _placeholder(value):          # "Bearer authentication" is a word
            yield "bearer-token", m.start("value"), m.end("value")


def said_passwords(text: str) -> Iterator[tuple[str, int, int]]:
    """``(kind, start, end)`` of each password, key or PIN said in words in ``text`` ("my password is ...")."""
    low = _lower(text)
    for m in _matches(_SAID, text, _word_starts(low, _SAID_HINTS, 16)):
        quoted = m.group("quoted") is not None
        value = m.group("quoted") if quoted else m.group("plain").rstrip(_TRAILING)
        start = m.start("quoted") if quoted else m.start("plain")
        shortest = 4 if m.group("pw") else 6
        if len(value) < shortest or _placeholder(value) or not (quoted or _not_plain(value)):
            continue
        yield "password", start, start + len(value)
    for m in _matches(_PIN, text, _word_starts(low, _PIN_HINTS, 8)):
        yield "pin", m.start("pin"), m.end("pin")
