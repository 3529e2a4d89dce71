"""Capture: memory forms from the conversation, one turn at a time, through the ingest path.

Every door hands a turn here (:meth:`plur.memory.Memory.capture`): the Python worker
(:class:`plur.prompt.worker.RecallWorker`), ``POST /api/v1/capture`` (the DSH plugin, other
out-of-process hosts), and the Claude Code / Codex hook (through the service). In order:

1. the setting ``capture`` (``user`` | ``all`` | ``off``) decides whether this role is kept
   (``all`` adds assistant turns, stored as ``reference`` notes);
2. the secret screen (:mod:`plur.screen.text`): keys and tokens are replaced by ``[redacted <kind>]``
   and counted in ``stats.db`` (the kinds only, never the text);
3. a turn with nothing to remember (:func:`trivial`: "ok", "thanks", "continue", a bare shell command,
   a slash command) is not stored;
4. a user turn that asks to forget ("please forget my SSN"; setting ``forget_requests``) is not stored: what
   it points to is forgotten and the next block says so (:mod:`plur.memory.turns.forget_turn`); the rest
   of the turn, if any, goes on;
5. a user turn about the user (setting ``route_personal``, :mod:`plur.memory.turns.personal`) said in a
   project goes to ``global``, recalled in every project;
6. :func:`plur.memory.ingest.ingest` stores it with the conversation provenance
   ``{kind: conversation, format: capture, session, turn, role, capture: true, agent?}``, dated
   ``when``, in the scope given (the project of the conversation's folder, :mod:`plur.project`):
   the same ``(session, turn)`` again is skipped, a changed text supersedes the stored one (an edited turn);
   a text the same conversation already said (another turn) is not stored twice.

A turn that only asks (:func:`only_asks`: "What food allergy do I have?") is stored like any other (its
neighbours' context reads it, the conversation stays whole), but recall never returns it
(:func:`plur.memory.filters.blocked`): asked again in a later session, the stored question would match
itself almost perfectly, rank first and push the note that answers it ("I am allergic to peanuts") out of
the block. Measured in docs/concepts/capture.md#questions.

``plur forget --session S`` (:func:`forget_session`) removes a whole conversation; :func:`sessions`
lists them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import ValidationError
from ..store.engram import _check_scope

#: The ``format`` of captured turns' provenance.
FORMAT = "capture"
MODES = ("user", "all", "off")

_ACK = frozenset("""ok okay k kk ok. thanks thank thx ty you yes yeah yep yup no nope nah sure continue go on ahead
please do it that this lgtm great nice cool perfect done next proceed right good fine got sounds makes sense
alright all agreed agree correct exactly awesome wonderful excellent wow hi hello hey bye goodbye retry again
try keep going carry y n much very thumbs up cheers indeed of course np sorry hmm hm ah oh the same stop wait
looks ship approved approve works worked""".split())
_SHELL = frozenset("""ls cd pwd cat less more head tail grep rg find git npm npx pnpm yarn pip pip3 python python3 node
make cmake cargo go rustc gcc docker kubectl helm terraform rm mv cp mkdir rmdir touch chmod chown curl wget ssh scp
echo export source sudo apt apt-get brew systemctl journalctl top htop ps kill du df tar unzip zip pytest uv poetry
conda vim nano code open man which whoami env history clear exit ./""".split())
_PROSE = frozenset("""the a an is are was were my our your we i you he she they it's because why how what when where
should would could can please that this which who but and so if then than not don't doesn't""".split())
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_REDACTED = re.compile(r"\[redacted [a-z\-]+\]")
_SLASH = re.compile(r"^/[A-Za-z][\w:\-]*(?:\s|$)")
#: One sentence: up to its end mark (Latin, full-width CJK and Arabic marks).
_SENTENCE = re.compile(r"[^.!?。！？؟\n]+(?:[.!?。！？؟]+|$)")
_ASKS = ("?", "？", "؟")
_CLAUSE = re.compile(r"\s*[,;:，、；–—]\s*|\s+-\s+")
#: Words an English clause of a question starts with (a clause starting otherwise, of 3+ words, is a statement:
#: "..., my wife is vegan?"); conjunctions and fillers in front are skipped.
_ASK_START = frozenset("""what what's whats which who who's whom whose when when's where where's why why's how how's
how'd is are was were am do does did don't doesn't didn't can can't could couldn't will won't would wouldn't
shall should shouldn't may might must have has had haven't hasn't isn't aren't wasn't weren't any anything
remind tell""".split())
_SELF = frozenset("i i'm im i've i'd i'll we we're we've we'd my our me".split())
_FILLER = frozenset("""and or but so also then well by the way btw anyway quick question again just hey hi hello oh
um uh ok okay sorry please now""".split())


@dataclass(frozen=True)
class CaptureResult:
    """What :func:`capture` did with one turn.

    Attributes:
        stored: the engrams written (a new turn, or the new version of an edited one); empty otherwise.
        skipped: why nothing was written: ``""`` (stored), ``off`` (the setting), ``role`` (an
            assistant turn with ``capture = user``), ``trivial``, ``known`` (this turn is stored already),
            ``forget`` (the turn asked to forget something, :mod:`plur.memory.turns.forget_turn`).
        redacted: the kinds of secret the screen cut out (:attr:`plur.screen.text.Screened.kinds`).
        forgotten: ids of the notes the turn asked to forget (forgotten before it was stored, if at all).
    """

    stored: tuple[Any, ...] = ()
    skipped: str = ""
    redacted: tuple[str, ...] = ()
    forgotten: tuple[str, ...] = ()


def trivial(text: str) -> bool:
    """Whether a turn has nothing to remember: an acknowledgement ("ok", "thanks!", "go ahead"), a
    slash command (``/clear``), a bare shell command (``ls -la``, ``git status``), or almost no words.

    Pure; language-neutral for letters (any script counts as words), English for the acknowledgement
    and prose word lists.
    """
    t = _REDACTED.sub(" ", text).strip()
    if _SLASH.match(t):
        return True
    words = [w.lower() for w in _WORD.findall(t)]
    letters = sum(len(w) for w in words)
    if letters < 3 and not any(ord(c) > 0x2E7F for c in t):      # CJK: one or two characters can be a fact
        return True
    if len(words) <= 6 and all(w in _ACK for w in words):
        return True
    first = t.lstrip("$ ").split(None, 1)[0] if t.lstrip("$ ") else ""
    if "\n" not in t and (first in _SHELL or first.startswith("./")) and len(t.split()) <= 12 \
            and not any(w in _PROSE for w in words):
        return True
    return False


def only_asks(text: str) -> bool:
    """Whether a turn only asks for information: every sentence is a question (it ends with ``?``,
    ``？`` or ``؟``) and no clause of one is a statement ("Can you book a table, my wife is vegan?"
    holds a fact: its clause "my wife is vegan" does not start like a question; nor does "I'm planning a
    trip to Japan, could you recommend...?", which starts with the speaker); greetings and
    acknowledgements beside the question ("Hi! What is my dog called?") do not count as content.

    Pure. The question mark decides in any language; the clause checks read English clause starts,
    so in another language a question with a comma clause is kept (when unsure, store).
    """
    t = _REDACTED.sub(" ", text).strip()
    sentences = [s.strip() for s in _SENTENCE.findall(t) if s.strip()]
    if not sentences or not sentences[-1].endswith(_ASKS):
        return False
    asked = False
    for sentence in sentences:
        if not sentence.endswith(_ASKS):
            if trivial(sentence) or all(w.lower() in _FILLER or w.lower() in _ACK
                                        for w in _WORD.findall(sentence)):
                continue                                   # "Hi!", "Thanks."
            return False                                   # a statement beside the question
        asked = True
        clauses = [c for c in _CLAUSE.split(sentence.rstrip("?？؟ ")) if _WORD.search(c)]
        for clause in clauses:
            words = [w.lower() for w in _WORD.findall(clause)]
            while words and words[0] in _FILLER:
                words = words[1:]
            if len(words) >= 3 and (words[0] in _SELF or (len(clauses) > 1 and words[0] not in _ASK_START)):
                return False          # "I'm planning a trip to Japan and wondered if...?", "..., my wife is vegan?"
    return asked


def capture(mem: Any, text: str, *, session: str, turn: int, role: str = "user", scope: str = "global",
            when: Any = None, agent: str | None = None, mode: str | None = None) -> CaptureResult:
    """The body of :meth:`plur.memory.Memory.capture`, which documents it."""
    mode = mode or mem.settings.capture
    if mode not in MODES:
        raise ValidationError(f"capture mode {mode!r}: use one of {', '.join(MODES)}")
    if role not in ("user", "assistant"):
        raise ValidationError(f"role {role!r}: use user or assistant")
    if not isinstance(session, str) or not session.strip() or len(session) > 200:
        raise ValidationError(f"session {session!r:.60}: give the conversation's id (1-200 characters)")
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
        raise ValidationError(f"turn {turn!r}: give the turn's 0-based position in the conversation")
    if not isinstance(text, str):
        raise ValidationError(f"text must be a string, got {type(text).__name__}")
    if mode == "off":
        return CaptureResult(skipped="off")
    if role == "assistant" and mode != "all":
        return CaptureResult(skipped="role")
    shown = _screened(mem, text, session=session, turn=turn, role=role, scope=scope)
    if not text.strip() or trivial(shown.text):
        return CaptureResult(skipped="trivial", redacted=shown.kinds)
    statement = shown.text.strip()
    forgotten: tuple[str, ...] = ()
    if role == "user" and mem.settings.forget_requests:       # "please forget my SSN" (plur.memory.turns)
        from .turns.forget_turn import apply

        done = apply(mem, statement, session=session, turn=turn, scope=scope, trivial=trivial, raw=text.strip())
        if done.asked:
            forgotten = done.forgotten
            if not done.rest or trivial(done.rest):
                return CaptureResult(skipped="forget", redacted=shown.kinds, forgotten=forgotten)
            statement = done.rest
    if role == "user" and mem.settings.route_personal and scope.startswith("project:"):
        from .turns.personal import about_user

        if about_user(statement):                               # about the user: recalled in every project
            scope = "global"
    same = mem.store.find_duplicate(statement, scope)
    if same is not None and (_session_of(same) or ("", ""))[0] == session:
        return CaptureResult(skipped="known", redacted=shown.kinds, forgotten=forgotten)   # said again here
    from ..store.engram import parse_time
    from ..formats.chats.turns import Turn

    created = parse_time(when, "when") if when is not None else None
    extra = {"capture": True, **({"agent": agent} if agent else {})}
    item = Turn(FORMAT, session, turn, role, statement, created=created, extra=extra)
    result = mem.ingest([item], scope=scope, roles=(role,), date=created, progress=False)
    stored = tuple(result.added) + tuple(result.changed)
    if stored:  # counted when the screened text is written, not when the turn is a repeat (docs/security.md#secrets)
        mem.stats.record_screened(shown.kinds, "capture")
    return CaptureResult(stored=stored, skipped="" if stored else "known", redacted=shown.kinds, forgotten=forgotten)


def _screened(mem: Any, text: str, *, session: str, turn: int, role: str, scope: str) -> Any:
    """The secret screen of a turn (:mod:`plur.screen.text`), with the conversation's previous turn: when the two hold
    the pieces of one key (:func:`plur.screen.pieces.join`), the stored previous turn is rewritten without its piece
    (forgotten, then stored again as the same turn) and the key is counted once, with this turn."""
    from ..screen.pieces import join
    from ..screen.text import Screened, screen
    from .ingest import _provenance

    keep = bool(getattr(mem.settings, "keep_identity_numbers", False))
    with mem._lock:
        have = _provenance(mem, scope)
    earlier = next((e for back in (1, 2) if (e := have.get((FORMAT, session, turn - back, role))) is not None
                    and e.status == "active"), None)
    joined = join(earlier.statement, text) if earlier is not None else None
    if joined is None:
        return screen(text, keep_ids=keep)
    if joined.before != earlier.statement:
        _restore(mem, earlier, joined.before)
    shown = screen(joined.text, keep_ids=keep)
    return Screened(shown.text, (joined.kind,) * joined.new + shown.kinds)


def _restore(mem: Any, old: Any, statement: str) -> None:
    """Store captured turn ``old`` again as ``statement``, leaving no trace of its old text (:func:`plur.memory.forget`)."""
    from ..formats.chats.turns import Turn

    src = dict(old.source)
    extra = {k: v for k, v in src.items() if k not in ("kind", "format", "session", "turn", "role")}
    mem.forget(old.id)
    mem.ingest([Turn(FORMAT, src["session"], src["turn"], src["role"], statement, created=old.created, extra=extra)],
               scope=old.scope, roles=(src["role"],), date=old.created, progress=False)


@dataclass(frozen=True)
class Session:
    """One conversation memory holds turns of (:func:`sessions`).

    Attributes:
        session: its id. format: where it came from (``capture``, ``claude-code``, ``messages``...).
        turns: active engrams of it. scopes: the scopes they are in. first, last: ISO-8601 UTC of the
        oldest and newest turn.
    """

    session: str
    format: str
    turns: int
    scopes: tuple[str, ...]
    first: str
    last: str


def _session_of(e: Any) -> tuple[str, str] | None:
    src = e.source if isinstance(e.source, Mapping) else {}
    if src.get("kind") != "conversation" or not isinstance(src.get("session"), str):
        return None
    return src["session"], str(src.get("format") or "")


def sessions(mem: Any, scope: str | None = None) -> list[Session]:
    """Conversations memory holds turns of: :meth:`plur.memory.Memory.sessions`, which documents it."""
    if scope is not None:
        _check_scope(scope)
    groups: dict[str, list[Any]] = {}
    fmts: dict[str, str] = {}
    for e in mem.store.all():
        got = _session_of(e)
        if got is None or e.status != "active" or (scope is not None and e.scope != scope):
            continue
        groups.setdefault(got[0], []).append(e)
        fmts.setdefault(got[0], got[1])
    out = []
    for sid, es in groups.items():
        times = sorted(e.created for e in es)
        out.append(Session(sid, fmts[sid], len(es), tuple(sorted({e.scope for e in es})),
                           _iso(times[0]), _iso(times[-1])))
    return sorted(out, key=lambda s: (s.last, s.session), reverse=True)


def _iso(value: Any) -> str:
    return value.isoformat().replace("+00:00", "Z") if isinstance(value, datetime) else str(value)


def session_engrams(mem: Any, session: str) -> list[Any]:
    """Every engram (active or retired) of conversation ``session``."""
    mem._scan()
    return [e for e in mem.store.all() if (got := _session_of(e)) is not None and got[0] == session]


def forget_session(mem: Any, session: str) -> list[Any]:
    """Forget every engram of a conversation: :meth:`plur.memory.Memory.forget_session`, which documents it."""
    from ..errors import NotFoundError

    found = session_engrams(mem, session)
    if not found:
        raise NotFoundError(f"no conversation {session!r} in memory; list them with: plur sessions")
    from .forget import forget_many

    return forget_many(mem, [e.id for e in found])
