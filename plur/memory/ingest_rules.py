"""Capture's rules for ``plur ingest``: a chat history ingested later keeps what live capture would have kept of
it, and puts it where capture would have put it (:func:`plur.memory.ingest.ingest` applies :class:`IngestRules`).

Per turn, in capture's order (:mod:`plur.memory.capture`), each counted in the result's ``left_out`` by reason:

1. setting ``capture_rules``: a turn with nothing to remember (``trivial``: "ok", a slash or shell command) and a
   turn typed while capture was off (``off``: :func:`plur.memory.rules.off_marks`) are left out;
2. setting ``forget_requests``: a user turn that asks to forget ("please forget my SSN",
   :mod:`plur.memory.turns.forget_request`) is never stored (``forget``; the rest of the turn, if it says anything
   else, goes on). What it points to *in the same conversation*, said before it, is not stored either
   (``forgotten``), and a note of it stored earlier (an earlier ingest of this conversation, or the host's live
   capture of it) is forgotten as ``plur forget`` forgets (:func:`plur.memory.forget.forget_many`), every version
   of that turn. Only this conversation: live capture also looks in the project and the global notes, because
   the user asked it *now*; a request read from an old log says nothing of what memory learned since, so ingest
   never touches a note outside the conversation;
3. setting ``capture_rules``: a turn that only asks (``question``) and a text the scope already holds or an earlier
   turn of this ingest said (``repeat``) are left out;
4. setting ``route_personal``: a user turn about the user (:func:`plur.memory.turns.personal.about_user`) ingested
   into a ``project:`` scope goes to ``global``, recalled in every project, as capture routes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

__all__ = ["IngestRules"]


class IngestRules:
    """The rules for the turns of one ingest into ``scope``; counts what they leave out and collects what to forget.

    Args:
        mem: the :class:`~plur.memory.Memory`.
        scope: the scope the ingest writes (a personal turn may go to ``global`` instead).
        rules: capture's text rules (trivial, off, question, repeat; setting ``capture_rules``).
        personal: route turns about the user to ``global`` (setting ``route_personal``; only from a project).
        forget: read requests to forget (setting ``forget_requests``).

    Attributes:
        counts: reason -> turns left out (``trivial``, ``off``, ``forget``, ``forgotten``, ``question``, ``repeat``).
        forgotten: the stored engrams the conversation's requests point to, by id (the caller forgets them).
    """

    def __init__(self, mem: Any, scope: str, *, rules: bool, personal: bool, forget: bool) -> None:
        from .rules import OffMarks, off_marks

        self.mem, self.scope = mem, scope
        self.rules, self.forget = rules, forget
        self.personal = personal and scope.startswith("project:")
        self.marks = off_marks(mem.home) if rules else OffMarks()
        self.seen: set[tuple[str, str]] = set()       # (scope, content hash) this ingest stores
        self.counts: dict[str, int] = {}
        self.forgotten: dict[str, Any] = {}
        self._stored: dict[tuple[str, str], list[Any]] = {}   # (format, session) -> its stored engrams

    def __bool__(self) -> bool:
        return self.rules or self.personal or self.forget

    @property
    def scopes(self) -> tuple[str, ...]:
        """The scopes this ingest may write."""
        return (self.scope, "global") if self.personal else (self.scope,)

    def _count(self, why: str, n: int = 1) -> None:
        if n:
            self.counts[why] = self.counts.get(why, 0) + n

    def prepare(self, t: Any, new: list[tuple[Any, str]], edited: list[tuple[Any, Any]]) -> Any:
        """Steps 1-2 for turn ``t`` (screened), in conversation order: ``None`` when it is left out (counted), else
        the turn to go on with (its text without a request's sentences). A request drops what it points to from
        ``new`` (``(turn, scope)`` to add) and ``edited`` (``(stored engram, turn)``), in place."""
        text = t.text
        if self.rules:
            from ..store.engram import content_hash
            from .rules import trivial

            if not text.strip() or trivial(text):
                self._count("trivial")
                return None
            if self.marks and ((t.session, t.role, content_hash(text)) in self.marks.texts
                               or (_alias(t) and (t.session, t.turn, t.role) in self.marks.turns)):
                self._count("off")
                return None
        if self.forget and t.role == "user":
            from .rules import trivial
            from .turns.forget_request import split

            asked, rest = split(text)
            if asked:
                self._requests(t, asked, new, edited)
                if not rest or trivial(rest):
                    self._count("forget")
                    return None
                t = dataclasses.replace(t, text=rest)
        return t

    def scope_of(self, t: Any) -> str:
        """Step 4: where turn ``t`` goes."""
        if self.personal and t.role == "user":
            from .turns.personal import about_user

            if about_user(t.text):
                return "global"
        return self.scope

    def keep(self, t: Any, scope: str) -> bool:
        """Step 3 for turn ``t`` going to ``scope``: whether it is stored (else counted)."""
        if not self.rules:
            return True
        from ..store.engram import content_hash
        from .rules import only_asks

        if only_asks(t.text):
            self._count("question")
            return False
        h = (scope, content_hash(t.text))
        if h in self.seen or self.mem.store.find_duplicate(t.text, scope) is not None:
            self._count("repeat")
            return False
        self.seen.add(h)
        return True

    # -- requests to forget, within the conversation ---------------------------------------------------
    def _requests(self, t: Any, asked: list[Any], new: list[tuple[Any, str]],
                  edited: list[tuple[Any, Any]]) -> None:
        from .rules import trivial
        from .turns.forget_turn import _said_before, earlier_targets

        if any(r.back for r in asked) and _said_before(t.text, asked[0].sentence, trivial):
            return                            # "my SSN is ..., forget that": takes back its own turn only
        same = {t.format, _alias(t)}
        mine = [i for i, (u, _) in enumerate(new) if u.session == t.session and u.format in same]
        changed = [i for i, (_, u) in enumerate(edited) if u.session == t.session and u.format in same]
        olds = {edited[i][0].id for i in changed}
        stored = [e for e in self._session(t) if e.status == "active" and e.id not in olds]
        earlier = ([(new[i][0].turn, new[i][0].role, new[i][0].text) for i in mine]
                   + [(edited[i][1].turn, edited[i][1].role, edited[i][1].text) for i in changed]
                   + [(_turn(e), str(e.source.get("role") or ""), e.statement) for e in stored])
        hit: set[int] = set()
        for request in asked:
            hit.update(earlier_targets(request, earlier, t.turn))
        drop_new = {mine[i] for i in hit if i < len(mine)}
        drop_edited = {changed[i - len(mine)] for i in hit if len(mine) <= i < len(mine) + len(changed)}
        keys = {_key(edited[i][0]) for i in drop_edited}
        keys |= {_key(stored[i - len(mine) - len(changed)]) for i in hit if i >= len(mine) + len(changed)}
        for e in self._session(t):                   # every version of a turn it points to
            if _key(e) in keys:
                self.forgotten[e.id] = e
        self._count("forgotten", len(drop_new) + len(drop_edited))
        if self.rules:                               # said again after the request, it is stored then
            from ..store.engram import content_hash

            self.seen -= {(new[i][1], content_hash(new[i][0].text)) for i in drop_new}
        new[:] = [x for i, x in enumerate(new) if i not in drop_new]
        edited[:] = [x for i, x in enumerate(edited) if i not in drop_edited]

    def _session(self, t: Any) -> list[Any]:
        """Every stored engram (any status, any scope) of turn ``t``'s conversation: its format or the one its host's
        live capture writes (:func:`plur.formats.chats.captured_as`), and its session id."""
        from ..formats.chats import source_key

        want = (t.format, t.session)
        if want not in self._stored:
            same = {t.format, _alias(t)}
            self._stored[want] = [e for e in self.mem.store.all() if (k := source_key(e.source)) is not None
                                  and k[1] == t.session and k[0] in same and e.id not in self.forgotten]
        return [e for e in self._stored[want] if e.id not in self.forgotten]


def _alias(t: Any) -> str | None:
    from ..formats.chats import captured_as

    return captured_as(t.format)


def _turn(e: Any) -> int:
    got = e.source.get("turn") if isinstance(e.source, Mapping) else None
    return got if isinstance(got, int) and not isinstance(got, bool) else -1


def _key(e: Any) -> Any:
    from ..formats.chats import source_key

    return source_key(e.source)
