"""Does a user turn ask memory to forget something, and what does it name? (pure; no LLM, no I/O)

"Actually, please forget my social security number.", "delete what I told you about Alex", "don't keep my
address", "vergiss meine Adresse", "忘掉我的地址": :func:`find` returns a :class:`ForgetRequest` naming what to
forget. "Don't forget to run the tests", "I forgot my keys", "forget it, let's move on", "delete the build
folder", "forget the tests for now" ask nothing of memory: :func:`find` returns ``None``.

The rule, per sentence and per clause (a clause starts the sentence or follows ``, ; : —``, or ``and``/``but``
before "please" or "can you"):

1. the clause starts (after fillers such as "ok", "actually", and "please", "can you", "I want you to") with a
   verb that forgets (*forget*), one that erases (*delete, remove, erase, wipe*...) or a negated keep (*don't
   keep / store / save / remember*, "I don't want you to remember"); a verb anywhere else ("I forget where",
   "the app forgets my login") or negated ("don't forget") is not a request;
2. what follows must name something memory holds, whole (nothing after it but politeness or "from memory"):

   * what was just said: "that", "this", "what I just said", "my last message" (an erasing verb only with
     "what I said" or "from memory": "delete that" is about code);
   * what the user told: "what I told you about Alex", "everything you know about my ex", "the note about the
     staging URL", "that I have diabetes", "where I live";
   * the user's own data: "my SSN", "my (old) address", "my wife's phone number", a number;
   * anything, with "from (your) memory".

   "forget it", "forget about it" and "forget that, let's..." (a change of topic) are idioms, never requests.

Languages: English, German, French, Spanish, Italian, Portuguese, Chinese, Japanese (the overview's,
:data:`plur.prompt.overview.ABOUT_USER_PATTERNS`). Measured on ``tests/data/forget_requests.tsv``
(``tests/test_forget_requests.py``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ["ForgetRequest", "find", "split"]


@dataclass(frozen=True)
class ForgetRequest:
    """One request to forget, read from a turn.

    Attributes:
        target: the words naming what to forget ("social security number", "alex", "where i live"), lower
            case; ``""`` when the request points at what was just said (``back``) or at everything (``bulk``).
        back: it points at what the user just said ("forget that", "what I just said").
        bulk: it asks for everything ("everything you know about me"): never resolved by itself (``plur forget``).
        sentence: the sentence that asks (as written). language: ``en``, ``de``, ``fr``, ``es``, ``it``, ``pt``,
            ``zh`` or ``ja``.
    """

    target: str
    back: bool = False
    bulk: bool = False
    sentence: str = ""
    language: str = "en"


# -- shared pieces ---------------------------------------------------------------------------------

_SENTENCE = re.compile(r"[^.!?。！？\n]+(?:[.!?。！？]+|$)")
_PUNCT = " \t.,;:!?¡¿。，、；：！？…\"'“”‘’«»()[]"
_CLAUSE = re.compile(r"(?:[,;:，、；：]|\s[—–-]\s|—)\s*")
_CONJ = re.compile(r"\s(?:and|but|so|und|aber|et|mais|y|pero|e|ma|mas|porém)\s+(?=(?:please|pls|kindly|can you|could you|"
                   r"would you|i want you|i'd like you|do not|don'?t|bitte|s'il te|s'il vous|por favor|per favore)\b)")
_DIGITS = re.compile(r"\d{3,}|\d+[\s./-]\d+[\s./-]\d+")
#: What the secret screen leaves of a number or key (:mod:`plur.screen.text`), as the whole object.
_SCREENED = re.compile(r"(?:(?:my|our|mein[e]?|mon|ma|mi|il mio|meu|minha)\s+)?(?:\w+\s+)?(\[redacted [a-z-]+\])")
_QUOTED = re.compile(r"[\"“«‘']([^\"”»’']{2,80})[\"”»’']")


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'").lower()


def _strip(obj: str, polite: re.Pattern[str]) -> str:
    obj = obj.strip(_PUNCT)
    while True:
        new = polite.sub("", obj).strip(_PUNCT)
        if new == obj:
            return obj
        obj = new


@dataclass(frozen=True)
class _Lang:
    """The compiled patterns of one language (:mod:`.forget_words` says what each one is)."""

    code: str
    asks: tuple[tuple[str, re.Pattern[str]], ...]
    polite: re.Pattern[str]
    cue: re.Pattern[str]
    back: re.Pattern[str]
    back_told: re.Pattern[str]
    told: tuple[re.Pattern[str], ...]
    data: re.Pattern[str]
    own: re.Pattern[str]
    bulk: re.Pattern[str]
    idiom: re.Pattern[str]
    topic: re.Pattern[str]
    that: re.Pattern[str] | None = None


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I | re.S)


def _compile(code: str, t: dict[str, Any]) -> _Lang:
    return _Lang(code, tuple((k, _c(p)) for k, p in t["asks"]), _c(t["polite"]), _c(t["cue"]), _c(t["back"]),
                 _c(t["back_told"]), tuple(_c(x) for x in t["told"]), _c(t["data"]), _c(t["own"]), _c(t["bulk"]),
                 _c(t["idiom"]), _c(t["topic"]), _c(t["that"]) if t.get("that") else None)


@lru_cache(maxsize=1)
def langs() -> tuple[_Lang, ...]:
    """Every language's compiled patterns (compiled on first use: ``import plur`` stays light)."""
    from .forget_words import TABLES

    return tuple(_compile(code, t) for code, t in TABLES.items())


#: Words before the verb that make an erasing verb a request about the user's data ("please delete my number").
_ASKED = re.compile(r"\b(?:please|pls|kindly|can you|could you|would you|will you|want you|like you|need you|"
                    r"bitte|kannst du|könntest du|s'il te|s'il vous|stp|svp|peux-tu|pouvez-vous|por favor|puedes|"
                    r"podrías|per favore|puoi|potresti|pode|poderia)\b|请|麻烦|ください", re.I)


# -- reading a turn ------------------------------------------------------------------------------------

def _qualify(lang: _Lang, kind: str, obj: str, verb: str, asked: bool) -> ForgetRequest | None:
    """What ``obj`` (the words after the verb, to the sentence's end) names, or ``None`` when not memory's."""
    obj = obj.strip()
    cue = bool(lang.cue.search(obj))
    if kind == "forget" and not cue and lang.idiom.match(obj.lstrip(_PUNCT)):
        return None                                           # "forget it", "forget to ...", "vergiss es"
    quoted = _QUOTED.fullmatch(obj.strip(" .!?,;"))
    if quoted and kind in ("forget", "keep"):
        return _req(lang, quoted.group(1))                    # forget "Hunter2"
    cut = _SCREENED.fullmatch(obj.strip(" .!?,;"))
    if cut and kind in ("forget", "keep", "gone"):
        return _req(lang, cut.group(1))                       # "forget 078-05-1120", as the screen left it
    whole = _strip(lang.cue.sub(" ", obj) if cue else obj, lang.polite)
    pieces = [(whole, "")]
    m = _CLAUSE.search(whole)
    if m:
        pieces.append((_strip(whole[:m.start()], lang.polite), whole[m.end():].strip(_PUNCT)))
    for head, rest in pieces:
        got = _names(lang, kind, head, verb, cue, asked)
        if got is None:
            continue
        if got.back and rest and lang.topic.match(rest):
            return None                                       # "forget that, let's move on"
        return got
    return None


def _req(lang: _Lang, target: str = "", *, back: bool = False, bulk: bool = False) -> ForgetRequest:
    return ForgetRequest(target.strip(_PUNCT), back=back, bulk=bulk, language=lang.code)


def _names(lang: _Lang, kind: str, obj: str, verb: str, cue: bool, asked: bool) -> ForgetRequest | None:
    """:func:`_qualify` of one candidate object (already stripped of politeness and "from memory")."""
    if not obj:
        return _req(lang, back=True) if cue or kind == "backkeep" else None
    if kind == "backkeep":
        return None                                           # "ne le garde pas dans le fichier"
    if lang.back_told.fullmatch(obj):
        return _req(lang, back=True)
    if lang.back.fullmatch(obj):
        # "delete that" / "don't save this" are about code; "forget that", "don't remember that" about memory
        ok = kind in ("forget", "gone") or cue or (kind == "keep" and not verb.startswith("sav"))
        return _req(lang, back=True) if ok else None
    for told in lang.told:
        m = told.fullmatch(obj)
        if m is None:
            continue
        about = _strip(m.groupdict().get("about") or "", lang.polite)
        if not about:
            return _req(lang, bulk=True) if lang.bulk.match(obj) else _req(lang, back=True)
        if lang.bulk.fullmatch(about):
            return _req(lang, bulk=True)                      # "everything you know about me"
        if lang.back.fullmatch(about):
            return _req(lang, back=True)
        return _req(lang, lang.own.sub("", about))
    if lang.that is not None and kind in ("forget", "keep"):
        m = lang.that.fullmatch(obj)
        if m:
            return _req(lang, m.group("x"))                  # "forget that I have diabetes"
    if lang.data.fullmatch(obj):
        if kind == "erase" and not (cue or asked):
            return None                                       # "remove my name" (from a page?): ask politely
        return _req(lang, lang.own.sub("", obj))
    if kind in ("forget", "keep", "gone") and _DIGITS.search(obj) and len(obj.split()) <= 4:
        return _req(lang, obj)                                # "forget 078-05-1120"
    if cue:
        return _req(lang, lang.own.sub("", obj))              # "remove the staging URL from your memory"
    return None


def _starts(sentence: str) -> list[int]:
    """Where a clause may start in ``sentence``: its start, after ``, ; : —``, and ``and``/``but`` + "please"."""
    out = {0}
    out.update(m.end() for m in _CLAUSE.finditer(sentence))
    out.update(m.end() for m in _CONJ.finditer(sentence))
    return sorted(out)


#: Every verb of every language's table, as a stem: a sentence holding none of them asks nothing (the check that
#: keeps :func:`find` cheap on the turns that ask nothing, nearly all of them).
_VERB_HINT = re.compile(
    r"forget|delet|remov|\beras|\bwipe|\bpurg|\bdrop|\bclear|discard|\bscrub|unlearn|get rid|throw away|scratch|"
    r"\bstrike|\bkeep|\bstor|\bsav|remember|\bretain|\brecord|memori|\bhold|\bhang on|note down|write down|"
    r"\bgone\b|vergiss|vergessen|lösch|entfern|streich|speicher|behalt|behält|\bmerk|notier|aufschreib|"
    r"oubli|supprim|effac|\bretir|\bgard|\breten|\bretien|enregistr|mémoris|conserv|\bstock|\bnote[zs]?\b|"
    r"sauvegard|olvid|\bborr|elimin|\bquit|suprim|\bguard|recuerd|almacen|registr|memoric|\bapunt|\banot|"
    r"dimentic|scord|cancell|rimuov|\bsalv|\bten(?:ere|erl|ga)|memorizz|ricord|annot|\bsegn|"
    r"esque|\bapag|\bexclu|lembr|armazen|\bgrav|"
    r"忘|删|清除|抹掉|去掉|移除|记|保存|存|保留|消し|消去|削除|覚え|記憶|記録|残さ|メモ")


def _in_sentence(sentence: str) -> ForgetRequest | None:
    low = _norm(sentence)
    if _VERB_HINT.search(low) is None:
        return None
    for start in _starts(low):
        clause = low[start:].lstrip(" ¿¡\"'“«")
        if not clause:
            continue
        for lang in langs():
            for kind, pattern in lang.asks:
                m = pattern.match(clause)
                if m is None:
                    continue
                asked = bool(_ASKED.search(clause[:m.start("v")] if m.start("obj") > m.start("v")
                                           else clause[m.end("v"):]))
                got = _qualify(lang, kind, m.group("obj"), (m.group("v") or "").strip(), asked)
                if got is not None:
                    return ForgetRequest(got.target, got.back, got.bulk, sentence.strip(), lang.code)
    return None


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (Latin and full-width end marks, newlines), blanks dropped."""
    return [s for s in (m.group().strip() for m in _SENTENCE.finditer(text)) if s]


#: Longest turn read for requests, characters: a request is one short sentence; a pasted document is not one.
MAX_CHARS = 4000


def find(text: str) -> ForgetRequest | None:
    """The first request to forget in ``text`` (a user turn), or ``None``. Pure."""
    asked, _ = split(text)
    return asked[0] if asked else None


def split(text: str) -> tuple[list[ForgetRequest], str]:
    """The requests in ``text``, and what is left of it once their sentences are taken out (stripped).

    A turn over :data:`MAX_CHARS` characters holds no request (``([], text)``).
    """
    if not text or not text.strip():
        return [], ""
    if len(text) > MAX_CHARS:
        return [], text.strip()
    asked: list[ForgetRequest] = []
    kept: list[str] = []
    for sentence in sentences(text):
        got = _in_sentence(sentence)
        (asked.append(got) if got is not None else kept.append(sentence))
    return asked, " ".join(kept).strip()
