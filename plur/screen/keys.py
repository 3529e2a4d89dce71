"""Keys and tokens found by their shape: vendor prefixes, the password of a URL, and random-looking words.

Vendor patterns follow gitleaks' and detect-secrets' rules for the same vendors. The random-looking rule
(:func:`random_looking`) is what finds a key no vendor prefix names; it is tuned against the false positives
users meet (model ids such as ``BAAI/bge-small-en-v1.5``, paths, image tags, object ids; measured by
``tests/test_screen_corpus.py``):

* a candidate is a word of at least :data:`RANDOM_MIN_CHARS` characters of the base64 / url-safe alphabet
  holding a digit, an upper-case and a lower-case letter; hex words (commit ids, hashes), UUIDs, engram ids,
  digests named by their algorithm (``sha512-...``) and object ids with a known non-secret prefix
  (Stripe's ``cus_``, ``pi_``...) never are;
* the word is cut at ``/ - _ . + : =`` into segments; a segment that reads as a word or a version (``bge``,
  ``small``, ``Instruct``, ``v1``, ``8B``, ``MiniLM``) is a name's part, and what is left must hold at least
  :data:`RANDOM_MASS_MIN` characters (a random key has no such parts: all of it is left);
* what is left changes case often (case runs averaging under :data:`LETTER_RUN_MAX`) and the word carries
  at least :data:`ENTROPY_MIN_BITS` bits of entropy per character.

Every pattern here stops at :data:`WALL` (where the screen masks a ``[redacted ...]`` marker), so nothing
already redacted is found again (the screen's idempotence).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

__all__ = ["ENTROPY_MIN_BITS", "LETTER_RUN_MAX", "RANDOM_MASS_MIN", "RANDOM_MIN_CHARS", "WALL", "mixed",
           "random_looking", "random_words", "url_passwords", "vendor_keys", "wordy"]

#: The character a ``[redacted ...]`` marker is masked with while a text is screened (never part of a match).
WALL = "\x00"

_W = r"[A-Za-z0-9_\-]"
_HEXC = "[0-9a-f]"
#: Kinds whose pattern admits hyphenated words ("sk-learn-..."): a match must also mix cases and digits.
MIXED_KINDS = frozenset({"anthropic-key", "openai-key", "gitlab-token", "slack-token"})
#: (kind, pattern). Order matters where prefixes overlap: the more specific first.
VENDOR: tuple[tuple[str, re.Pattern[str]], ...] = tuple((k, re.compile(p)) for k, p in (
    ("private-key", r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
                    r"(?:[^\x00]*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|[^\x00]*)"),
    ("anthropic-key", rf"\bsk-ant-{_W}{{20,}}"),
    ("openai-key", rf"\bsk-(?:(?:proj|svcacct|admin|None)-{_W}{{20,}}|or-v1-{_HEXC}{{64}}|[A-Za-z0-9]{{20,}})"),
    ("aws-access-key", r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z2-7]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("gitlab-token", r"\bgl(?:pat|ptt|dt|rt|soat|cbt|ft|imt|agent)-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"\b(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,})"),
    ("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}"),
    ("discord-webhook", r"discord(?:app)?\.com/api/webhooks/\d{6,}/[A-Za-z0-9_\-]{30,}"),
    ("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}"),
    ("google-api-key", r"\bAIza[A-Za-z0-9_\-]{35}"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}"),
    ("pypi-token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    ("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ("shopify-token", rf"\bshp(?:at|ca|pa|ss)_{_HEXC}{{32}}"),
    ("digitalocean-token", rf"\bdo[por]_v1_{_HEXC}{{64}}"),
    ("databricks-token", rf"\bdapi{_HEXC}{{32}}"),
    ("postman-key", rf"\bPMAK-{_HEXC}{{24}}-{_HEXC}{{34}}"),
    ("vault-token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("telegram-bot-token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b"),
    ("groq-key", r"\bgsk_[A-Za-z0-9]{48,}"),
    ("xai-key", r"\bxai-[A-Za-z0-9]{60,}"),
    ("replicate-token", r"\br8_[A-Za-z0-9]{37}\b"),
    ("linear-key", r"\blin_api_[A-Za-z0-9]{40}\b"),
    ("notion-token", r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})\b"),
    ("atlassian-token", r"\bATATT3[A-Za-z0-9_\-=]{100,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
))

#: ``scheme://user:password@host``: only the password (group 1) is redacted.
_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s:/@\x00]+:([^\s/@\x00]+)@[^\s/@\x00]")
#: Words of the base64 / url-safe alphabet, at least 20 characters: candidates for the random-looking rule.
_WORDISH = re.compile(r"[A-Za-z0-9+/_=\-]{20,}")
URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s\x00]+")
_HEX = re.compile(r"[0-9a-fA-F\-]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_ENGRAM_ID = re.compile(r"ENG-\d{4}-\d{2}-\d{2}-[0-9a-f]{6}")
#: Not secrets though random: a digest named by its algorithm (subresource integrity, nix), object ids of
#: Stripe's API (``cus_``, ``pi_``...: public references; its keys are ``sk_``/``rk_``/``whsec_``).
_BENIGN_PREFIX = re.compile(
    r"(?:sha(?:1|224|256|384|512)|md5|blake2b|blake3)[-:]"
    r"|(?:cus|pi|ch|in|il|ii|sub|si|price|prod|evt|acct|pm|seti|txn|re|po|py|tr|cs_test|cs_live|card|src|ba|"
    r"btok|tok|file|payout|plink|prv|qt|sli|ipi|cn|dp|du|mbur|ich|ics|inrtem)_")
_CASE_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+")
_SEGMENT = re.compile(r"[^/\-_.+:=]+")
#: A segment that reads as a version or a size (``v1``, ``8B``, ``8x7B``, ``L6``, ``Q4``): a name's part.
_VERSIONISH = re.compile(r"[a-zA-Z]\d{1,3}|\d{1,4}[a-zA-Z]{1,2}|\d{1,3}[a-z]\d{1,3}[A-Z]?|[A-Z][a-z]?\d{1,2}")
_LETTERS_THEN_DIGITS = re.compile(r"[A-Za-z]+\d*")
_MODEL_NUMBER = re.compile(r"[A-Z]?\d+$")

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
#: Minimum length of a word the random-looking rule looks at.
RANDOM_MIN_CHARS = 20
#: Characters of a candidate left once its word-like segments are set aside, at least (a name made of
#: words and versions, ``Alibaba-NLP/gte-base-en-v1.5``, leaves almost none; a key of 20 leaves 20, or 12 or more
#: when a separator cuts a short piece off it: the random-looking rule then misses as many keys as without this).
RANDOM_MASS_MIN = 12


def entropy(word: str) -> float:
    """Shannon entropy of the characters of ``word``, bits per character."""
    n = len(word)
    return math.log2(n) - sum(c * math.log2(c) for c in Counter(word).values()) / n


_DIGIT, _LOWER, _UPPER = re.compile(r"\d"), re.compile(r"[a-z]"), re.compile(r"[A-Z]")


def mixed(word: str) -> bool:
    """Whether ``word`` holds a digit, an upper-case and a lower-case letter (ASCII)."""
    return bool(_DIGIT.search(word) and _LOWER.search(word) and _UPPER.search(word))


def wordy(segment: str) -> bool:
    """Whether ``segment`` (a part of a candidate between separators) reads as a word, a number or a version
    (``bge``, ``Instruct``, ``MiniLM``, ``Qwen2``, ``2024``, ``v1``, ``8x7B``) rather than random characters:
    letters in case runs of 2 or more averaging 3 or more (then digits), or up to 3 letters of one case."""
    if segment.isdigit() or _VERSIONISH.fullmatch(segment):
        return True
    if not _LETTERS_THEN_DIGITS.fullmatch(segment):
        return False
    if len(segment) <= 3:                # "en", "hf", "It", "AWQ"; not "xK", "aBc"
        return segment.isalpha() and (segment.islower() or segment.isupper() or segment.istitle())
    runs = [len(r) for r in _CASE_RUN.findall(_MODEL_NUMBER.sub("", segment))]   # "HuggingFaceH4": "HuggingFace"
    return bool(runs) and min(runs) >= 2 and sum(runs) / len(runs) >= 3


def random_looking(word: str, min_chars: int = RANDOM_MIN_CHARS) -> bool:
    """Whether ``word`` (base64 / url-safe characters) looks like a random token (a key) rather than a name.

    Args:
        word: the candidate. min_chars: the shortest word considered (the split-key check joins two pieces).
    """
    core = word.strip("=-_/+.")
    if (len(core) < min_chars or _HEX.fullmatch(core) or _UUID.search(core) or _ENGRAM_ID.search(core)
            or _BENIGN_PREFIX.match(core) or not mixed(core)):
        return False
    rest = "".join(s for s in _SEGMENT.findall(core) if not wordy(s))
    if len(rest) < min(RANDOM_MASS_MIN, min_chars):
        return False                     # a name made of words and versions: a model id, a path, an image tag
    runs = [len(r) for r in _CASE_RUN.findall(core)]
    letters = sum(runs)
    if not runs or letters / len(runs) >= LETTER_RUN_MAX or sum(n for n in runs if n >= 4) / letters >= WORDY_SHARE_MIN:
        return False                     # CamelCase, snake_case: made of words
    return entropy(core) >= ENTROPY_MIN_BITS


#: The fixed parts of each vendor's keys: a pattern is run only on a text that holds one (one scan finds them).
_VENDOR_HINTS: dict[str, tuple[str, ...]] = {
    "private-key": ("PRIVATE KEY",), "anthropic-key": ("sk-ant-",), "openai-key": ("sk-", "sk-ant-"),
    "aws-access-key": ("A3T", "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), "gitlab-token": ("gl",),
    "slack-token": ("xox", "xapp-"), "slack-webhook": ("hooks.slack.com",), "discord-webhook": ("/api/webhooks/",),
    "stripe-key": ("_live_", "_test_", "whsec_"), "google-api-key": ("AIza",), "huggingface-token": ("hf_",),
    "npm-token": ("npm_",), "pypi-token": ("pypi-",), "sendgrid-key": ("SG.",), "shopify-token": ("shp",),
    "digitalocean-token": ("_v1_",), "databricks-token": ("dapi",), "postman-key": ("PMAK-",),
    "vault-token": ("hvs.", "hvb.", "hvr."), "telegram-bot-token": (":AA",), "groq-key": ("gsk_",), "xai-key": ("xai-",),
    "replicate-token": ("r8_",), "linear-key": ("lin_api_",), "notion-token": ("secret_", "ntn_"),
    "atlassian-token": ("ATATT3",), "jwt": ("eyJ",)}
_VENDOR_HINT_RE = re.compile("|".join(re.escape(h) for h in sorted({h for hs in _VENDOR_HINTS.values() for h in hs},
                                                                     key=len, reverse=True)))


def vendor_keys(text: str) -> Iterator[tuple[str, int, int]]:
    """``(kind, start, end)`` of each vendor key or token in ``text`` (to be widened to its word)."""
    found = set(_VENDOR_HINT_RE.findall(text))
    if not found:
        return
    for kind, pattern in VENDOR:
        if found.isdisjoint(_VENDOR_HINTS[kind]):
            continue
        for m in pattern.finditer(text):
            if kind in MIXED_KINDS and not mixed(m.group()):
                continue
            yield kind, m.start(), m.end()


def url_passwords(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the password of each ``scheme://user:password@host`` in ``text``."""
    if "://" not in text or "@" not in text:
        return
    for m in _URL_PASSWORD.finditer(text):
        yield m.start(1), m.end(1)


def random_words(text: str) -> Iterator[tuple[int, int, bool]]:
    """``(start, end, in_url)`` of each random-looking word; a URL's path is never one, its query values may be
    (``in_url``: not to be widened past the URL's own characters)."""
    urls = [(u.start(), u.end()) for u in URL.finditer(text)] if "://" in text else []
    for m in _WORDISH.finditer(text):
        in_url = any(a <= m.start() < b for a, b in urls)
        if in_url and text[m.start() - 1] != "=":
            continue
        if random_looking(m.group()):
            yield m.start(), m.end(), in_url
