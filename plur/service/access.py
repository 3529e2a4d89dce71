"""Team access at the service's doors: what a member's request may read and write (PostgreSQL store only).

A request carrying the service's own token (``service.json``) is the owner's and sees everything. On a
PostgreSQL store the API also accepts a member's token (:class:`plur.store.pg.team.TeamDirectory`, looked up
at every request, so a grant, a revoke or a removal takes effect on the member's next request); the request
is then served through a :class:`MemberMemory`, a view of the service's :class:`~plur.memory.Memory` that

* reads (recall, block, list, show, pinned, status counts) only engrams whose scope the member may read:
  ``global`` and the scopes granted to it (:func:`plur.store.pg.team.may_read`). Recall filters before the
  top-k cut (:func:`plur.index.recall.allowed_ids`), so hidden engrams neither appear nor take places;
* answers an id outside those scopes exactly as an absent id (same error, same message): no existence leak;
* refuses a write (learn, update, forget, a move to another scope) outside the member's writable scopes with
  :class:`~plur.errors.ForbiddenError` (HTTP 403) naming the scope and the grant that fixes it, before anything
  is written; asking to read an ungranted scope explicitly is refused the same way.

:class:`MemberDoors` keeps one view and one :class:`~plur.prompt.worker.RecallWorker` per member (agent ids of
two members never share a cached block) and replaces both when the member's grants change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..errors import ForbiddenError, NotFoundError
from ..store.engram import Engram, _check_scope


class MemberMemory:
    """A :class:`~plur.memory.Memory` as one team member may see it (the methods the API's routes call).

    Args:
        memory: the service's Memory (shared; this view never closes it).
        member: a :class:`plur.store.pg.team.Member` (name, read and write grants).
    """

    def __init__(self, memory: Any, member: Any) -> None:
        self._memory = memory
        self.member = member
        self.readable = frozenset({"global", *member.read, *member.write})
        self.writable = frozenset({"global", *member.write})
        self.settings = memory.settings
        self.home = memory.home
        self.store = _MemberStore(self)

    # -- the rule ---------------------------------------------------------------------------
    def _refuse(self, scope: str, what: str) -> ForbiddenError:
        flag = "--read" if what == "read" else "--write"
        return ForbiddenError(f"member {self.member.name!r} may not {what} scope {scope!r}; the team's "
                              f"administrator can allow it with `plur team grant {self.member.name} {flag} {scope}`")

    def check_read(self, scope: str | None) -> None:
        """Raise ForbiddenError when ``scope`` (asked for explicitly) is not readable; ``None`` passes."""
        if scope is not None:
            _check_scope(scope)
            if scope not in self.readable:
                raise self._refuse(scope, "read")

    def check_write(self, scope: str) -> None:
        """Raise ForbiddenError when the member may not write ``scope``."""
        _check_scope(scope)
        if scope not in self.writable:
            raise self._refuse(scope, "write")

    def _absent(self, engram_id: str) -> NotFoundError:
        # one message for "no such id" and "not yours to see": the two must not be told apart
        return NotFoundError(f"no engram {engram_id}; `plur list` (or POST /api/v1/list) shows the ids you may read")

    # -- reads ------------------------------------------------------------------------------
    def get(self, engram_id: str) -> Engram:
        """The engram, or NotFoundError (the same one) when it is absent or outside the readable scopes."""
        try:
            engram = self._memory.get(engram_id)
        except NotFoundError:
            raise self._absent(engram_id) from None
        if engram.scope not in self.readable:
            raise self._absent(engram_id)
        return engram

    def recall(self, query: str, k: int = 10, *, scope: str | None = None, **kwargs: Any) -> list[Any]:
        """:meth:`Memory.recall` among the readable scopes only (filtered before the top-k cut)."""
        self.check_read(scope)
        hits = self._memory.recall(query, k, scope=scope, scopes=self.readable, **kwargs)
        return [h for h in hits if h.engram.scope in self.readable]  # defence in depth

    def pinned(self, scope: str | None = None) -> list[Engram]:
        """:meth:`Memory.pinned` among the readable scopes."""
        self.check_read(scope)
        return [e for e in self._memory.pinned(scope) if e.scope in self.readable]

    def list(self, *, scope: str | None = None, **filters: Any) -> list[Engram]:
        """:meth:`Memory.list` among the readable scopes."""
        self.check_read(scope)
        return [e for e in self._memory.list(scope=scope, **filters) if e.scope in self.readable]

    # -- writes -----------------------------------------------------------------------------
    def learn(self, statement: str, *, scope: str = "global", **kwargs: Any) -> Engram:
        """:meth:`Memory.learn` into a writable scope (ForbiddenError before anything is written)."""
        return self.learn_outcome(statement, scope=scope, **kwargs)[0]

    def learn_outcome(self, statement: str, *, scope: str = "global", **kwargs: Any) -> tuple[Engram, bool]:
        """:meth:`Memory.learn_outcome` into a writable scope (ForbiddenError before anything is written)."""
        self.check_write(scope)
        return self._memory.learn_outcome(statement, scope=scope, **kwargs)

    def _writable_engram(self, engram_id: str) -> Engram:
        engram = self.get(engram_id)
        if engram.scope not in self.writable:
            raise self._refuse(engram.scope, "write")
        return engram

    def update(self, engram_id: str, **changes: Any) -> Engram:
        """:meth:`Memory.update` of an engram in a writable scope, not moved out of the writable scopes."""
        self._writable_engram(engram_id)
        if changes.get("scope") is not None:
            self.check_write(changes["scope"])
        return self._memory.update(engram_id, **changes)

    def forget(self, engram_id: str) -> Engram:
        """:meth:`Memory.forget` of an engram in a writable scope."""
        self._writable_engram(engram_id)
        return self._memory.forget(engram_id)

    def feedback(self, engram_id: str, useful: bool, **kwargs: Any) -> dict[str, int]:
        """:meth:`Memory.feedback` on an engram the member may read."""
        self.get(engram_id)
        return self._memory.feedback(engram_id, useful, **kwargs)

    # -- what the worker and the status route use -------------------------------------------
    @property
    def stats(self) -> Any:
        return self._memory.stats

    def on_close(self, fn: Callable[[], Any]) -> None:
        self._memory.on_close(fn)

    def model_resolution(self) -> Any:
        return self._memory.model_resolution()

    def doctor(self, **_: Any) -> dict[str, Any]:
        raise ForbiddenError(f"member {self.member.name!r} may not run doctor: it reports on the whole store; "
                             "ask the team's administrator")


class _MemberStore:
    """The two store calls the API makes (``find_duplicate`` before a learn, ``quarantined_count``)."""

    def __init__(self, view: MemberMemory) -> None:
        self._view = view

    def find_duplicate(self, statement: str, scope: str = "global") -> Engram | None:
        self._view.check_write(scope)
        return self._view._memory.store.find_duplicate(statement, scope)

    def quarantined_count(self) -> int:
        return 0  # a database quarantines nothing


class MemberDoors:
    """One :class:`MemberMemory` and one RecallWorker per member, replaced when its grants change.

    Args:
        memory: the service's Memory.
        lookup: token -> :class:`plur.store.pg.team.Member` (raises AuthError for an unknown token).
        make_worker: view -> a RecallWorker over it.
        on_close: called by :meth:`close` (the directory's connection).
    """

    def __init__(self, memory: Any, lookup: Callable[[str], Any], make_worker: Callable[[Any], Any],
                 on_close: Callable[[], Any] | None = None) -> None:
        self.memory = memory
        self._on_close = on_close
        self.lookup = lookup
        self._make_worker = make_worker
        self._doors: dict[str, tuple[Any, MemberMemory, Any]] = {}
        self._lock = threading.Lock()

    def member(self, token: str) -> Any:
        """The member of ``token`` as the database says now (AuthError, DatabaseUnavailableError)."""
        return self.lookup(token)

    def door(self, member: Any) -> tuple[MemberMemory, Any]:
        """``(view, worker)`` for ``member``; a member whose grants changed gets fresh ones (its cached
        blocks were built with the old grants and are dropped)."""
        stale = None
        with self._lock:
            got = self._doors.get(member.name)
            if got is None or got[0] != member:
                stale = got
                view = MemberMemory(self.memory, member)
                got = (member, view, self._make_worker(view))
                self._doors[member.name] = got
        if stale is not None:
            stale[2].close()
        return got[1], got[2]

    def close(self) -> None:
        """Close every member's worker."""
        with self._lock:
            doors, self._doors = list(self._doors.values()), {}
        for _, _, worker in doors:
            worker.close()
        if self._on_close is not None:
            self._on_close()
