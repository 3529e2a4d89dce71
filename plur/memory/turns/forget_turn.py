"""Forgetting at the user's request, said in the conversation (:mod:`.forget_request` reads the request).

:func:`apply` is capture's step for a user turn that asks to forget: the request is not stored, the notes it
points to are forgotten as ``plur forget`` forgets them (:func:`plur.memory.forget.forget_many`: files, index
rows, cached vectors, stats.db rows), and the memory keeps a one-line notice for the conversation's next block
(:func:`take_notices`): ids, never text.

What a request points to (:func:`targets`), deterministic and conservative:

* "forget that", "what I just said": the user's previous turn of this conversation (within the last two turn
  numbers), and nothing else;
* a named thing ("my social security number", "what I told you about Alex", "where I live"): every note of
  this conversation, then of the conversation's project, then of the user's global notes that holds every
  word of the name (:func:`terms`: stemmed, function words dropped, with the common names of personal data
  folded together: "SSN" and "social security number", "phone" and "mobile", "address" and "I live at");
  never a note of another project;
* "everything about me": nothing (a bulk erase is ``plur forget``'s job); the notice says so.

When nothing matches, nothing is forgotten, and the notice names the forget tool and ``plur forget``.
"""

from __future__ import annotations

import re
import threading
import time
import unicodedata
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .forget_request import ForgetRequest, split

#: Most notes a notice names by id (the rest are counted).
NOTICE_IDS = 8
#: A notice no block took within this many seconds is dropped (the conversation has moved on).
NOTICE_TTL_S = 3600.0
#: Notes recalled (BM25) as candidates for a named thing, before the every-word check.
CANDIDATES = 200
TOOL = "the forget tool (forget or plur_forget; in a shell, plur forget ID)"

#: Names of personal data folded to one term, in the eight languages of :mod:`.forget_request` (the first that
#: matches a name takes its words: "email address" is an email, not an address).
_ALIASES: tuple[tuple[str, str, str], ...] = (
    ("ssn", r"\bssn\b|social security(?: numbers?| no\.?)?|social insurance number|national insurance number|"
            r"sozialversicherungsnummer|num[ée]ro de s[ée]curit[ée] sociale|s[ée]curit[ée] sociale|"
            r"n[úu]mero de (?:la )?seguridad social|n[úu]mero de seguro social|seguro social|codice fiscale|"
            r"previdenza sociale|previd[êe]ncia social|\bcpf\b|社保号码?|社会保障号码?|社会安全号码?|マイナンバー|社会保障番号",
     "ssn social security number"),
    ("email", r"e-?mail(?: address)?|\bmail address\b|courriel|correo(?: electr[óo]nico)?|邮箱|电子邮件|メールアドレス|メアド",
     "email mail courriel correo"),
    ("phone", r"\b(?:tele)?phone(?: numbers?)?\b|\bmobile(?: numbers?)?\b|\bcell(?:phone| numbers?)?\b|telefonnummer|handynummer|"
              r"\bhandy\b|t[ée]l[ée]phone|\bportable\b|tel[ée]fono|celular|m[óo]vil|cellulare|telefone|电话|手机|"
              r"電話番号|携帯",
     "phone mobile cell telephone telefonnummer handynummer téléphone teléfono celular telefono cellulare telefone"),
    ("address", r"\baddress(?:es)?\b|\blive[sd]? (?:at|on|in)\b|\bliving (?:at|on|in)\b|\bwohne (?:in|am|an)\b|"
                r"\badresse\b|\banschrift\b|\bwohnadresse\b|\bhabite (?:à|au|en|rue)\b|direcci[óo]n|domicilio|"
                r"\bvivo en\b|indirizzo|\babito (?:a|in)\b|endere[çc]o|\bmoro (?:em|na|no)\b|地址|住址|住所",
     "address live lives adresse anschrift wohne habite dirección domicilio vivo indirizzo abito endereço moro"),
    ("birthday", r"birthday|date of birth|birth ?date|\bdob\b|\bborn on\b|geburtstag|geburtsdatum|anniversaire|"
                 r"date de naissance|cumplea[ñn]os|fecha de nacimiento|compleanno|data di nascita|anivers[áa]rio|"
                 r"data de nascimento|生日|出生日期|誕生日|生年月日",
     "birthday born geburtstag anniversaire cumpleaños compleanno aniversário"),
    ("password", r"password|passcode|passphrase|passwort|kennwort|mot de passe|contrase[ñn]a|\bsenha\b|密码|パスワード",
     "password passcode passwort kennwort contraseña senha"),
    ("salary", r"\bsalary\b|\bincome\b|\bgehalt\b|\beinkommen\b|\bsalaire\b|\bsalario\b|\bsueldo\b|\bstipendio\b|"
               r"\bsal[áa]rio\b|\brenda\b|工资|薪水|収入|給料|年収",
     "salary income gehalt salaire salario sueldo stipendio salário"),
)
_ALIAS_RE = tuple((name, re.compile(rx, re.I), words) for name, rx, words in _ALIASES)
#: Words a name is made of that say nothing of what it names (English first; the possessives and articles of
#: the other languages). Matched after stemming.
_FUNCTION = frozenset("""
i me my mine myself we us our you your the a an about of what that this these those which who whom whose where when
how why is are was were be been being am do does did have has had will would can could should shall may might must
told tell said say mentioned shared wrote just already ever earlier before today yesterday now please also too
everything anything all some any note notes memory memories info information details data thing things stuff
old current new previous former exact real full personal private actual own present named called
mein meine meinen meiner meines meinem ich mir mich du dir dein deine der die das den dem des ein eine über zu von
alte alten aktuelle neue mon ma mes je moi tu te le la les un une des de du sur ce que mi mis yo tu el los las
del sobre lo il lo gli i le mio mia miei mie di su che meu minha meus minhas eu o os as do da dos das sobre que
我 我的 的 你 关于 有关 私 の 僕 俺 わたし
""".split())
_NORM_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Outcome:
    """What :func:`apply` did with one turn.

    Attributes:
        rest: what is left of the turn to store (the sentences that were not requests; '' = nothing).
        forgotten: ids of the notes forgotten. asked: the requests read from the turn.
        resolved: every request pointed to something (``False``: the notice says nothing matched).
    """

    rest: str
    forgotten: tuple[str, ...] = ()
    asked: tuple[ForgetRequest, ...] = ()
    resolved: bool = True


def _norm(text: str) -> str:
    return _NORM_SPACE.sub(" ", unicodedata.normalize("NFKC", text).replace("’", "'").lower())


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from ...index.tokenize import Tokenizer

    return Tokenizer(stemming=True)


@lru_cache(maxsize=1)
def _function_terms() -> frozenset[str]:
    tok = _tokenizer()
    return frozenset(t for w in _FUNCTION for t in tok(w)) | _FUNCTION


def terms(text: str, *, name: bool = False) -> frozenset[str]:
    """The terms of ``text`` for matching: plur's tokenizer (stemmed) plus one term per kind of personal data it
    names (``ssn``, ``phone``, ``address``...). ``name``: ``text`` is what a request names; the words of a data
    kind are replaced by its term and function words dropped, so "my social security number" is ``{ssn}``."""
    low = _norm(text)
    kinds = set()
    for kind, rx, _ in _ALIAS_RE:
        if rx.search(low):
            kinds.add("\x00" + kind)
            if name:
                low = rx.sub(" ", low)
    toks = set(_tokenizer()(low))
    if name:
        toks -= _function_terms()
    return frozenset(toks | kinds)


def _query(target: str) -> str:
    """A BM25 query that finds every way a note may spell the target (its words plus its kinds' surface words)."""
    low = _norm(target)
    extra = [words for _, rx, words in _ALIAS_RE if rx.search(low)]
    return " ".join([target, *extra])


def _session_notes(mem: Any, session: str) -> list[Any]:
    """The active notes of conversation ``session`` (any scope: a fact about the user went to global)."""
    mem._scan()
    return [e for e in mem.store.all() if e.status == "active" and isinstance(e.source, dict)
            and e.source.get("kind") == "conversation" and e.source.get("session") == session]


def _role(e: Any) -> str:
    return str(e.source.get("role") or "") if isinstance(e.source, dict) else ""


def _turn(e: Any) -> int:
    got = e.source.get("turn") if isinstance(e.source, dict) else None
    return got if isinstance(got, int) and not isinstance(got, bool) else -1


def targets(mem: Any, request: ForgetRequest, *, session: str | None, turn: int | None, scope: str | None
            ) -> list[Any]:
    """The notes ``request`` points to, this conversation's first, then ``scope``'s, then global's (read-only).

    Args:
        session, turn: the conversation and the request's turn (``None``: no conversation, e.g. a block's own
            request, so "forget that" points to nothing). scope: the conversation's scope (its project; only it
            and ``global`` are searched, never another project).

    Returns:
        Engrams, each once; ``[]`` when the request points to nothing (or asks for everything).
    """
    if request.bulk:
        return []
    mine = _session_notes(mem, session) if session else []
    if request.back:
        if turn is None:
            return []
        before = [e for e in mine if _role(e) in ("user", "") and 0 <= _turn(e) < turn]
        if not before:
            return []
        last = max(_turn(e) for e in before)
        return [e for e in before if _turn(e) == last and last >= turn - 2]
    want = terms(request.target, name=True)
    if not want:
        return []
    out: dict[str, Any] = {}
    for e in mine:
        if want <= terms(e.statement):
            out[e.id] = e
    hits = mem.recall(_query(request.target), CANDIDATES, scope=scope, mode="bm25", record=False)
    ranked = sorted((h.engram for h in hits), key=lambda e: e.scope == "global")   # the project's, then global
    for e in ranked:
        if e.id not in out and (scope is None or e.scope in (scope, "global")) and want <= terms(e.statement):
            out[e.id] = e
    return list(out.values())


def earlier_targets(request: ForgetRequest, earlier: Sequence[tuple[int, str, str]], turn: int) -> list[int]:
    """Which earlier turns of one conversation ``request``, said at turn ``turn``, points to (pure): the rule of
    :func:`targets` within the conversation alone, for ``plur ingest`` of an old one.

    Args:
        earlier: ``(turn number, role, text)`` of the conversation's turns kept so far (any order).
        turn: the request's turn number; only turns before it count.

    Returns:
        Indexes into ``earlier``: for ``back`` ("forget that"), the user's latest turn within the last two turn
        numbers; for a named thing, each turn holding every word of the name (:func:`terms`); ``[]`` for a bulk
        request ("everything about me") or when nothing matches.
    """
    if request.bulk:
        return []
    before = [i for i, (n, role, _) in enumerate(earlier) if 0 <= n < turn]
    if request.back:
        mine = [i for i in before if earlier[i][1] in ("user", "")]
        last = max((earlier[i][0] for i in mine), default=-1)
        return [i for i in mine if earlier[i][0] == last and last >= turn - 2] if mine else []
    want = terms(request.target, name=True)
    return [i for i in before if want and want <= terms(earlier[i][2])]


def apply(mem: Any, text: str, *, session: str, turn: int, scope: str,
          trivial: Callable[[str], bool] = lambda t: not t.strip(), raw: str | None = None) -> Outcome:
    """Capture's step for one user turn: forget what its requests point to and keep a notice; return what is
    left of the turn to store (``Outcome.rest``, '' when nothing). A turn with no request comes back whole.

    A request that points back ("forget that") after something said in the same turn takes that back: the
    turn is not stored, nothing else is forgotten. ``trivial``: capture's test of a turn with nothing to remember
    (:func:`plur.memory.capture.trivial`), for what is said before the request. ``raw``: the turn before the
    secret screen made ``text`` of it; what a request names is looked for as said and as screened ("forget
    078-05-1120" finds a note learned with the number and one captured as ``[redacted us-ssn]``), and only
    ``text`` is ever kept.
    """
    asked, rest = split(text)
    if not asked:
        return Outcome(rest=text)
    said = split(raw)[0] if raw is not None and raw != text else []
    names = asked + [r for r in said if len(said) == len(asked) and not r.back and not r.bulk]
    sentences_before_request = _said_before(text, asked[0].sentence, trivial)
    if any(r.back for r in asked) and sentences_before_request:
        _notice(mem, scope, (), "kept")
        return Outcome(rest="", asked=tuple(asked))
    found: dict[str, Any] = {}
    resolved = True
    for i, request in enumerate(asked):
        got = targets(mem, request, session=session, turn=turn, scope=scope)
        if len(names) > len(asked):                       # the same request as said, before the screen
            got += targets(mem, names[len(asked) + i], session=session, turn=turn, scope=scope)
        resolved = resolved and bool(got)
        found.update((e.id, e) for e in got)
    gone: list[str] = []
    if found:
        from ..forget import forget_many

        gone = [e.id for e in forget_many(mem, list(found))]
    _notice(mem, scope, tuple(gone), "done" if resolved else ("partly" if gone else "none"),
            bulk=any(r.bulk for r in asked))
    return Outcome(rest=rest, forgotten=tuple(gone), asked=tuple(asked), resolved=resolved)


def _said_before(text: str, sentence: str, trivial: Callable[[str], bool]) -> bool:
    """Whether ``text`` says something (not a mere filler) before the request ``sentence``."""
    head = text[: text.find(sentence)] if sentence and sentence in text else ""
    if not head.strip():
        # the request's own sentence may start with what it takes back: "My SSN is 078-05-1120, forget that."
        from .forget_request import _CLAUSE

        parts = _CLAUSE.split(sentence)
        return len(parts) > 1 and len(_tokenizer()(parts[0])) >= 3 and not re.match(
            r"^\s*(?:ok(?:ay)?|so|actually|oh|hey|wait|well|sorry|oops|no|yes|yeah|hmm+|um+|uh+)\b", parts[0], re.I)
    return not trivial(head) and len(_tokenizer()(head)) >= 2


# -- the notice the next block carries ------------------------------------------------------------

@dataclass(frozen=True)
class _Notice:
    scope: str
    ids: tuple[str, ...]
    kind: str            # done | partly | none | kept
    bulk: bool
    at: float


_notices: "weakref.WeakKeyDictionary[Any, list[_Notice]]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _notice(mem: Any, scope: str, ids: tuple[str, ...], kind: str, bulk: bool = False) -> None:
    with _lock:
        try:
            held = _notices.setdefault(mem, [])
        except TypeError:   # not weak-referenceable: no notice
            return
        held.append(_Notice(scope, ids, kind, bulk, time.monotonic()))
        del held[:-16]


def take_notices(mem: Any, scope: str | None) -> list[str]:
    """The notices waiting for a block of ``scope`` (``None``: every scope), as block lines; each is given once.

    Lines hold engram ids and fixed words only, never a note's or the request's text.
    """
    now = time.monotonic()
    with _lock:
        held = _notices.get(mem)
        if not held:
            return []
        mine = [n for n in held if scope is None or n.scope == scope]
        _notices[mem] = [n for n in held if n not in mine and now - n.at < NOTICE_TTL_S]
    return [notice_line(n.ids, n.kind, n.bulk) for n in mine if now - n.at < NOTICE_TTL_S]


def notice_line(ids: tuple[str, ...], kind: str, bulk: bool = False) -> str:
    """The block's line for one request (``kind``: done, partly, none or kept)."""
    if kind == "kept":
        return "At the user's request, their last message was not stored (it asked not to keep what it said)."
    named = ", ".join(ids[:NOTICE_IDS]) + (f" and {len(ids) - NOTICE_IDS} more" if len(ids) > NOTICE_IDS else "")
    if kind == "done":
        return (f"Forgotten at the user's request: {named} (erased from memory; do not repeat what they said)."
                if ids else "The user asked to forget something; nothing in memory held it.")
    what = "everything about them" if bulk else "something"
    head = f"Forgotten at the user's request: {named}. " if ids else ""
    return (f"{head}The user asked to forget {what}, but {'not all of it' if ids else 'no note'} matched, so "
            f"{'the rest was' if ids else 'nothing was'} forgotten: find it with plur's recall tool, then remove it "
            f"with {TOOL}.")
