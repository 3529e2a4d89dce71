"""API v1 routes the MCP server and the hook commands need beyond the core ones (:mod:`plur.service.api`).

=======  ==============================  ==========================================================
method   path                            answer
=======  ==============================  ==========================================================
POST     /api/v1/list                    ``{engrams: [...], total}`` newest first (scope, type, tag, text, limit;
                                         ``total``: how many match in all)
POST     /api/v1/update                  ``{engram}`` (id + statement, tags, status, type, pinned)
POST     /api/v1/inject                  ``{text, engram_ids, tokens, overview}``: engrams not in ``exclude`` only
                                         (:func:`plur.prompt.increment.inject_block`, recorded as an injection)
POST     /api/v1/project                 ``{folder, root, scope, how, registered}``: the project of an existing
                                         absolute ``folder`` outside the home (:func:`plur.project.checked_folder`;
                                         :func:`plur.project.resolve`; a new root is registered)
=======  ==============================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ValidationError

#: Most engrams one ``/list`` answers; most ids an ``/inject`` may exclude.
MAX_LIST = 5000
MAX_EXCLUDE = 100000
_UPDATABLE = ("statement", "tags", "status", "type", "pinned")


def host_routes(memory: Any, endpoint: Callable[..., Any], required: object, prefix: str,
                lock: Any = None) -> list[Any]:
    """The routes above under ``prefix`` (``/api/v1``), built with :func:`plur.service.api.create_api`'s
    ``endpoint`` (locking, errors); each route reads ``c.memory`` (:class:`plur.service.api.Call`: the owner's
    Memory or a team member's view), never ``memory`` itself."""
    from starlette.routing import Route

    from ..prompt.increment import HOOK_BUDGET_TOKENS, HOOK_MAX_ENGRAMS, inject_block
    PREFIX = prefix

    text_or_none = (str, type(None))

    def list_(c: Any, scope: str | None, type: str | None, tag: str | None, status: str | None,
              text: str | None, limit: int) -> dict[str, Any]:
        if not 1 <= limit <= MAX_LIST:
            raise ValidationError(f"limit={limit} must be from 1 to {MAX_LIST}")
        found = c.memory.list(scope=scope, type=type, tag=tag, status=status, text=text)
        return {"engrams": [e.to_dict() for e in found[:limit]], "total": len(found)}

    def update(c: Any, id: str, **changes: Any) -> dict[str, Any]:
        given = {k: v for k, v in changes.items() if v is not None}
        if not given:
            raise ValidationError(f"update needs at least one of {', '.join(_UPDATABLE)}")
        return {"engram": c.memory.update(id, **given).to_dict()}

    def inject(c: Any, query: str, scope: str | None, agent_id: str | None, exclude: list[Any],
               max_engrams: int, budget_tokens: int, include_pinned: bool) -> dict[str, Any]:
        if len(exclude) > MAX_EXCLUDE or not all(isinstance(x, str) for x in exclude):
            raise ValidationError(f"field 'exclude' must be a list of at most {MAX_EXCLUDE} engram ids")
        if not 0 <= max_engrams <= 100 or not 0 <= budget_tokens <= 100000:
            raise ValidationError("max_engrams must be 0..100 and budget_tokens 0..100000")
        block = inject_block(c.memory, query, exclude=exclude, scope=scope, agent=agent_id or "hook",
                             max_engrams=max_engrams, budget_tokens=budget_tokens, include_pinned=include_pinned)
        return {"text": block.text, "engram_ids": list(block.engram_ids), "tokens": block.tokens, "mode": "hybrid",
                "overview": block.overview}

    def project(c: Any, folder: str) -> dict[str, Any]:
        from ..project import checked_folder, resolve

        got = resolve(checked_folder(folder, memory.home), memory.home)   # registered for good: real folders only
        return {"folder": got.folder, "root": got.root, "scope": got.scope, "how": got.how,
                "registered": got.registered}

    def forget_session(c: Any, session: str, dry_run: bool) -> dict[str, Any]:
        if not hasattr(c.memory, "forget_session"):
            raise ValidationError("forgetting a conversation is the owner's; a team member's token cannot")
        if dry_run:
            from ..errors import NotFoundError
            from ..memory.capture import session_engrams

            found = session_engrams(c.memory, session)
            if not found:
                raise NotFoundError(f"no conversation {session!r} in memory; list them with: plur sessions")
            return {"session": session, "engrams": [e.id for e in found], "forgotten": []}
        gone = [e.id for e in c.memory.forget_session(session)]
        return {"session": session, "engrams": gone, "forgotten": gone}

    from .capture_journal import CaptureJournal
    from .capture_queue import CaptureQueue

    queue = CaptureQueue(lock)
    journal = CaptureJournal(memory.home)

    def journaled(mem: Any, entry: dict[str, Any]) -> Callable[[], Any]:
        """The capture of one journal entry (text already screened; its kinds counted once, when stored)."""
        def run() -> Any:
            got = mem.capture(entry["text"], session=entry["session"], turn=entry["turn"], role=entry["role"],
                              scope=entry["scope"], when=entry["when"], agent=entry.get("agent_id"))
            if got.stored and entry.get("redacted"):
                mem.stats.record_screened(tuple(entry["redacted"]), "capture")
            if got.stored and hasattr(mem, "embed_queued"):
                mem.embed_queued()  # now, between turns, not in the next turn's /block (bench: capture-wait)
            return got
        return run

    for path, entry in journal.pending():  # turns a killed service acknowledged: stored before any new one
        queue.put(journaled(memory, entry), lambda p=path: journal.done(p))

    def capture(c: Any, text: str, session: str, turn: int, role: str, scope: str | None, cwd: str | None,
                when: str | None, agent_id: str | None, wait: bool) -> dict[str, Any]:
        import os

        if not hasattr(c.memory, "capture"):
            raise ValidationError("capture writes to the owner's memory; a team member's token cannot capture")
        if scope is None:
            if not cwd or "\x00" in cwd or not os.path.isabs(cwd):
                raise ValidationError(f"capture needs 'scope', or 'cwd' as an absolute folder (got {cwd!r:.200})")
            from ..project import resolve

            scope = resolve(cwd, memory.home).scope
        mem = c.memory

        def run() -> Any:
            got = mem.capture(text, session=session, turn=turn, role=role, scope=scope, when=when,
                              agent=agent_id)
            if got.stored and hasattr(mem, "embed_queued"):
                mem.embed_queued()  # now, between turns, not in the next turn's /block (bench: capture-wait)
            return got
        if not wait:
            from datetime import datetime, timezone

            from ..screen.text import screen
            from .capture_queue import check

            check(mem, text, session, turn, role, scope, when)   # bad input is answered now, not lost later
            keep = getattr(mem.settings, "keep_identity_numbers", False)
            shown = screen(text, keep_ids=keep)                  # the journal never holds a secret
            entry = {"text": shown.text, "redacted": list(shown.kinds), "session": session, "turn": turn,
                     "role": role, "scope": scope, "agent_id": agent_id,
                     "when": when or datetime.now(timezone.utc).isoformat()}
            path = journal.append(entry)                         # acknowledged = survives a kill of the service
            queue.put(journaled(mem, entry), lambda: journal.done(path))
            return {"queued": True, "scope": scope}
        got = run()
        return {"stored": [e.id for e in got.stored], "skipped": got.skipped, "redacted": list(got.redacted),
                "scope": got.stored[0].scope if got.stored else scope, "forgotten": list(got.forgotten)}

    R = required
    return [
        Route(PREFIX + "/capture", endpoint("capture", capture, {
            "text": ((str,), R), "session": ((str,), R), "turn": ((int,), R), "role": ((str,), "user"),
            "scope": (text_or_none, None), "cwd": (text_or_none, None), "when": (text_or_none, None),
            "agent_id": (text_or_none, None), "wait": ((bool,), False)}), methods=["POST"]),
        Route(PREFIX + "/forget-session", endpoint("forget_session", forget_session, {
            "session": ((str,), R), "dry_run": ((bool,), False)}), methods=["POST"]),
        Route(PREFIX + "/project", endpoint("project", project, {"folder": ((str,), R)}), methods=["POST"]),
        Route(PREFIX + "/list", endpoint("list", list_, {
            "scope": (text_or_none, None), "type": (text_or_none, None), "tag": (text_or_none, None),
            "status": (text_or_none, None), "text": (text_or_none, None), "limit": ((int,), 50)}), methods=["POST"]),
        Route(PREFIX + "/update", endpoint("update", update, {
            "id": ((str,), R), "statement": (text_or_none, None), "tags": ((list, type(None)), None),
            "status": (text_or_none, None), "type": (text_or_none, None), "pinned": ((bool, type(None)), None)}),
            methods=["POST"]),
        Route(PREFIX + "/inject", endpoint("inject", inject, {
            "query": ((str,), R), "scope": (text_or_none, None), "agent_id": (text_or_none, None),
            "exclude": ((list,), []), "max_engrams": ((int,), HOOK_MAX_ENGRAMS),
            "budget_tokens": ((int,), HOOK_BUDGET_TOKENS), "include_pinned": ((bool,), True)}), methods=["POST"]),
    ]
