"""Capture: memory forms from the conversation, one turn at a time, through the ingest path.

Every door hands a turn here (:meth:`plur.memory.Memory.capture`): the Python worker
(:class:`plur.prompt.worker.RecallWorker`), ``POST /api/v1/capture`` (the DSH plugin, other
out-of-process hosts), and the Claude Code / Codex hook (through the service). In order:

1. the setting ``capture`` (``user`` | ``all`` | ``off``) decides whether this role is kept
   (``all`` adds assistant turns, stored as ``reference`` notes); a turn handed over while capture is
   ``off`` is remembered as *not to keep* (:func:`mark_off`: its session, number and text hash, never its
   text), so a later ``plur ingest`` of the same conversation leaves it out too;
2. the secret screen (:mod:`plur.screen.text`): keys and tokens are replaced by ``[redacted <kind>]``
   and counted in ``stats.db`` (the kinds only, never the text);
3. the rules (setting ``capture_rules``, :mod:`plur.memory.rules`; :mod:`plur.memory.ingest` applies the same
   ones): a turn with nothing to remember (:func:`~plur.memory.rules.trivial`: "ok", "thanks", "continue", a bare
   shell command, a slash command such as ``/plur capture off``) is not stored;
4. a user turn that asks to forget ("please forget my SSN"; setting ``forget_requests``) is not stored: what
   it points to is forgotten and the next block says so (:mod:`plur.memory.turns.forget_turn`); the rest
   of the turn, if any, goes on;
5. the rules again: a turn that only asks (:func:`~plur.memory.rules.only_asks`: "What food allergy do I have?")
   is not stored (after the forget request: "Can you forget my address?" asks, and is a request), nor is a
   text the scope already holds (said in this conversation or another, captured or ingested);
6. a user turn about the user (setting ``route_personal``, :mod:`plur.memory.turns.personal`) said in a
   project goes to ``global``, recalled in every project;
7. :func:`plur.memory.ingest.ingest` stores it with the conversation provenance
   ``{kind: conversation, format: capture, session, turn, role, capture: true, agent?}``, dated
   ``when``, in the scope given (the project of the conversation's folder, :mod:`plur.project`):
   the same ``(session, turn)`` again is skipped, a changed text supersedes the stored one (an edited turn).

A question is never stored, so it can change nothing: not another note's score (BM25's statistics, the
fusion's scaling, the relevance floor), not its neighbours' context, not the overview. Stored, "What food
allergy do I have?" asked again in a later session matched itself first and pushed "I am allergic to
peanuts" out of the block. Questions captured by an earlier version stay in the store but are never
indexed (:func:`plur.memory.filters.asks`). Measured in docs/concepts/capture.md#questions.

``plur forget --session S`` (:func:`forget_session`) removes a whole conversation; :func:`sessions`
lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import ValidationError
from ..store.engram import _check_scope
from .rules import OFF_FILE, OffMarks, left_out, mark_off, off_marks, only_asks, trivial

__all__ = ["FORMAT", "MODES", "OFF_FILE", "CaptureResult", "OffMarks", "Session", "capture", "forget_session",
           "left_out", "mark_off", "off_marks", "only_asks", "session_engrams", "sessions", "trivial"]

#: The ``format`` of captured turns' provenance.
FORMAT = "capture"
MODES = ("user", "all", "off")

@dataclass(frozen=True)
class CaptureResult:
    """What :func:`capture` did with one turn.

    Attributes:
        stored: the engrams written (a new turn, or the new version of an edited one); empty otherwise.
        skipped: why nothing was written: ``""`` (stored), ``off`` (the setting), ``role`` (an
            assistant turn with ``capture = user``), ``trivial``, ``question`` (the turn only asks),
            ``known`` (this turn, or its text in this scope, is stored already), ``forget`` (the turn asked to
            forget something, :mod:`plur.memory.turns.forget_turn`).
        redacted: the kinds of secret the screen cut out (:attr:`plur.screen.text.Screened.kinds`).
        forgotten: ids of the notes the turn asked to forget (forgotten before it was stored, if at all).
    """

    stored: tuple[Any, ...] = ()
    skipped: str = ""
    redacted: tuple[str, ...] = ()
    forgotten: tuple[str, ...] = ()


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
        if text.strip():
            from ..screen.text import screen

            mark_off(mem.home, session, turn, role,
                     screen(text, keep_ids=bool(getattr(mem.settings, "keep_identity_numbers", False))).text)
        return CaptureResult(skipped="off")
    if role == "assistant" and mode != "all":
        return CaptureResult(skipped="role")
    shown = _screened(mem, text, session=session, turn=turn, role=role, scope=scope)
    rules = mem.settings.capture_rules
    if not text.strip() or (rules and trivial(shown.text)):
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
    if rules and only_asks(statement):     # after the forget request: "Can you forget my SSN?" asks, and forgets
        return CaptureResult(skipped="question", redacted=shown.kinds, forgotten=forgotten)
    if role == "user" and mem.settings.route_personal and scope.startswith("project:"):
        from .turns.personal import about_user

        if about_user(statement):                               # about the user: recalled in every project
            scope = "global"
    same = mem.store.find_duplicate(statement, scope)
    if same is not None and (rules or (_session_of(same) or ("", ""))[0] == session):
        return CaptureResult(skipped="known", redacted=shown.kinds, forgotten=forgotten)   # said before, here or elsewhere
    from ..store.engram import parse_time
    from ..formats.chats.turns import Turn

    created = parse_time(when, "when") if when is not None else None
    extra = {"capture": True, **({"agent": agent} if agent else {})}
    item = Turn(FORMAT, session, turn, role, statement, created=created, extra=extra)
    result = mem.ingest([item], scope=scope, roles=(role,), date=created, progress=False, rules=False,
                        personal=False, forget=False)     # capture applied them above
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
               scope=old.scope, roles=(src["role"],), date=old.created, progress=False, rules=False, personal=False,
               forget=False)


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
