"""The JSON API v1 for hosts (``/api/v1/*``): recall, memory blocks, learn, forget, feedback, status.

Every route needs ``Authorization: Bearer <token>`` (the token in ``<home>/service.json``), compared
in constant time; without it the answer is 401, even from localhost. On a PostgreSQL store a team member's
token is accepted too, and its request sees only its scopes (:mod:`plur.service.access`; 403 outside them).
No cookies, no CSRF: a browser page cannot read the token, and a cross-origin script cannot send the header without a CORS
preflight that this API never grants. JSON in and out; errors are
``{"error": {"type": "<PlurError subclass>", "message": "<one line>"}}`` with 400 (bad input, bad
JSON, unknown field), 401, 403 (a member outside its scopes), 404 (no such engram / route), 405, 500 (logged).

=======  ==============================  ==========================================================
method   path                            answer
=======  ==============================  ==========================================================
GET      /api/v1/status                  ``{api, version, pid, home, engrams, model, served, worker}``
GET      /api/v1/schema                  the engram types, statuses and scopes (:func:`plur.store.schema.schema`)
POST     /api/v1/recall                  ``{hits: [{rank, score, bm25_rank, dense_rank, engram}], took_ms, quarantined}``
POST     /api/v1/block                   ``{agent_id, text, hash, engram_ids, tokens, took_ms, quarantined}`` (now)
POST     /api/v1/agents/{id}/submit      202 ``{queued: true}`` (off-turn, RecallWorker.submit)
GET      /api/v1/agents/{id}/block       the agent's cached block ('' text when none)
DELETE   /api/v1/agents/{id}             ``{dropped: id}`` (RecallWorker.drop; the agent is gone)
POST     /api/v1/learn                   ``{engram, created, quarantined}``
GET      /api/v1/engrams/{id}            ``{engram}``
POST     /api/v1/forget                  ``{forgotten: id, quarantined}``
POST     /api/v1/feedback                ``{id, useful, not_useful}``
GET      /api/v1/doctor                  ``Memory.doctor()`` with the model the service holds
POST     /api/v1/list, /update, /inject  see :mod:`plur.service.api_hosts`
POST     /api/v1/export, /import         see :mod:`plur.service.api_transfer` (also /project/bind, /project/unbind)
=======  ==============================  ==========================================================

Memory calls run in a worker thread, one at a time (the ``lock`` shared with the web page).
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import (AuthError, ConflictError, DatabaseUnavailableError, ForbiddenError, InvalidIdError,
                      NotFoundError, PlurError, ValidationError)
from ..net.bodylimit import MAX_BODY_BYTES, BodyLimit
from ..store.schema import DEFAULT_TYPE, schema
from ..jsonio import request_json
from ..values import parse_int
from .files import API_VERSION

if TYPE_CHECKING:  # pragma: no cover
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ..memory import Memory
    from ..prompt.worker import RecallWorker

log = logging.getLogger("plur.service")
PREFIX = "/api/v1"
#: Largest ``k`` a recall may ask for.
MAX_K = 1000
#: Answers that carry ``quarantined`` (files of the store that could not be loaded), so a client can warn.
QUARANTINE_NOTED = frozenset(("recall", "block", "learn", "forget", "agent_block", "inject", "list"))
_REQUIRED = object()


def status_of(exc: BaseException) -> int:
    """HTTP status for an error: 400 bad input, 401 auth, 403 a team member outside its scopes, 404 not found,
    409 conflict, 503 the engram database is unreachable, 500 anything else."""
    if isinstance(exc, DatabaseUnavailableError):
        return 503
    if isinstance(exc, ForbiddenError):
        return 403
    if isinstance(exc, AuthError):
        return 401
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, (NotFoundError, InvalidIdError)):
        return 404
    if isinstance(exc, ValidationError):
        return 400
    return 500


def error_body(exc: BaseException) -> dict[str, Any]:
    """``{"error": {"type", "message"}}`` with a one-line message."""
    name = type(exc).__name__ if isinstance(exc, PlurError) else "PlurError"
    message = str(exc) if isinstance(exc, PlurError) else "internal error; see <home>/service.log"
    return {"error": {"type": name, "message": " ".join(message.split())}}


#: What a team member is told when the database is down: the owner's message names the database's address
#: and socket path, which the README says members must not have.
MEMBER_DB_DOWN = ("the team's engram database is unreachable; nothing was half-written, try again later "
                  "(the service's owner sees why in its log)")


def for_member(exc: PlurError) -> PlurError:
    """``exc`` as a team member may see it: a database outage without the database's address, socket or reason."""
    if isinstance(exc, DatabaseUnavailableError):
        log.warning("member request: %s", exc)
        return DatabaseUnavailableError(MEMBER_DB_DOWN)
    return exc


def fields(body: Any, spec: dict[str, tuple[tuple[type, ...], Any]], where: str) -> dict[str, Any]:
    """Check a JSON body against ``spec`` (name -> (accepted types, default or required)).

    ``None`` is accepted where ``type(None)`` is listed. Unknown names are refused, so a typo
    is not silently ignored.

    Raises:
        ValidationError: naming the field, its value and what it must be.
    """
    if not isinstance(body, dict):
        raise ValidationError(f"{where}: the JSON body must be an object, got {type(body).__name__}")
    unknown = sorted(set(body) - set(spec))
    if unknown:
        raise ValidationError(f"{where}: unknown field {unknown[0]!r}; known fields: {', '.join(spec)}")
    out = {}
    for name, (types, default) in spec.items():
        if name not in body or (body[name] is None and default is not _REQUIRED and type(None) not in types):
            if default is _REQUIRED:
                raise ValidationError(f"{where}: field {name!r} is required")
            out[name] = default
            continue
        value = body[name]
        bad = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        if not bad and isinstance(value, list):
            bad = not all(isinstance(v, str) for v in value)
        if bad:
            kinds = " or ".join("null" if t is type(None) else {"str": "text", "list": "a list of text"}.get(
                t.__name__, t.__name__) for t in types)
            raise ValidationError(f"{where}: field {name!r} must be {kinds}, got {value!r:.80}")
        out[name] = value
    return out


class BearerAuth:
    """ASGI middleware: every request needs ``Authorization: Bearer <token>`` (else 401 JSON).

    Args:
        app: the wrapped API app.
        token: the service's token (compared with :func:`hmac.compare_digest`): the owner's.
        members: on a PostgreSQL store, token -> team member (:meth:`plur.service.access.MemberDoors.member`,
            blocking: run in a worker thread); a member's request carries it as ``scope["plur.member"]``.
    """

    def __init__(self, app: Any, token: str, members: Callable[[str], Any] | None = None) -> None:
        self.app = app
        self._expected = token.encode("latin-1")
        self._members = members

    async def _refuse(self, send: Callable[[Any], Awaitable[None]], exc: PlurError) -> None:
        body = json.dumps(error_body(exc)).encode("utf-8")
        await send({"type": "http.response.start", "status": status_of(exc), "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="plur"'), (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] == "http":
            got = b""
            for key, value in scope.get("headers", ()):
                if key == b"authorization":
                    got = value
            scheme, _, given = got.decode("latin-1").strip().partition(" ")
            given = given.strip()
            # the scheme is case-insensitive (RFC 9110 section 11.1): 'bearer <token>' is the same header
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode("latin-1"), self._expected):
                if self._members is not None and scheme.lower() == "bearer" and given.startswith("plur_"):
                    from starlette.concurrency import run_in_threadpool

                    try:
                        member = await run_in_threadpool(self._members, given)
                    except PlurError as exc:  # unknown token (401), database down (503: no URI, no socket)
                        await self._refuse(send, for_member(exc))
                        return
                    await self.app({**scope, "plur.member": member}, receive, send)
                    return
                reason = "no Authorization header" if not got else "wrong token"
                await self._refuse(send, AuthError(
                    f"{reason}: send 'Authorization: Bearer <token>' with the token from <home>/service.json "
                    "(readable by its owner only)" + (", or a team member's token" if self._members else "")))
                return
        await self.app(scope, receive, send)


class Call:
    """What a route function gets first: the path parameters, and the memory and recall worker of whoever
    asks (the service's own for the owner, a :class:`plur.service.access.MemberMemory` view for a member)."""

    __slots__ = ("params", "memory", "worker", "member")

    def __init__(self, params: dict[str, str], memory: Any, worker: Any, member: Any = None) -> None:
        self.params, self.memory, self.worker, self.member = params, memory, worker, member

    def __getitem__(self, name: str) -> str:
        return self.params[name]


def create_api(memory: "Memory", worker: "RecallWorker", token: str, *, lock: threading.Lock | None = None,
               info: dict[str, Any] | None = None, members: Any = None) -> "Starlette":
    """Build the API app (routes under ``/api/v1``) over an open Memory and its RecallWorker.

    Args:
        memory: the facade every call goes through (not closed by the app).
        worker: serves ``/agents/{id}/*`` (submit, cached block, drop).
        token: the bearer token requests must carry (non-empty).
        lock: serialises Memory calls with the web page's (default: a lock of its own).
        info: extra fields for ``/status`` (``version``, ``url``, ``socket``, ``started``).
        members: a :class:`plur.service.access.MemberDoors` (PostgreSQL store): member tokens are accepted too,
            and their requests served through the member's view; ``None`` = the owner's token only.

    Returns:
        A Starlette app wrapped in :class:`BearerAuth`.
    """
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response
    from starlette.routing import Route

    from ..prompt.injected import record_injected
    from ..prompt.selection import recall_block

    if not token:
        raise ValidationError("the API token must not be empty")
    lock = lock or threading.Lock()
    served: Counter[str] = Counter()
    extra = dict(info or {})

    def reply(data: Any, status: int = 200) -> Response:
        body = json.dumps(data, ensure_ascii=False, default=str)
        return Response(body, status_code=status, media_type="application/json",
                        headers={"cache-control": "no-store"})

    def endpoint(name: str, fn: Callable[..., Any], spec: dict[str, tuple[tuple[type, ...], Any]] | None = None,
                 status: int = 200) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            served[name] += 1
            try:
                args: dict[str, Any] = {}
                if spec is not None:
                    raw = await request.body()
                    if len(raw) > MAX_BODY_BYTES:
                        raise ValidationError(f"{name}: body of {len(raw)} bytes is over {MAX_BODY_BYTES}, too large")
                    body = request_json(raw, name)   # not JSON, too deep, a lone surrogate: 400 (plur.jsonio)
                    args = fields(body, spec, f"{request.method} {request.url.path}")

                member = request.scope.get("plur.member")
                call = (Call(request.path_params, memory, worker) if member is None
                        else Call(request.path_params, *members.door(member), member))

                def locked() -> Any:
                    with lock:
                        out = fn(call, **args)
                        if name in QUARANTINE_NOTED and isinstance(out, dict):
                            # the CLI repeats the store's quarantine warning from this (issue 14)
                            out["quarantined"] = memory.store.quarantined_count()
                        return out
                return reply(await run_in_threadpool(locked), status)
            except PlurError as exc:
                if request.scope.get("plur.member") is not None:
                    exc = for_member(exc)
                return reply(error_body(exc), status_of(exc))
            except Exception:  # noqa: BLE001 - one bad request must not take the service down
                log.exception("API %s failed", name)
                return reply(error_body(RuntimeError()), 500)
        return handle

    text_or_none = (str, type(None))
    list_or_none = (list, type(None))

    def status_(c: Call) -> dict[str, Any]:
        resolution = c.memory.model_resolution()
        model = resolution.as_dict()
        if resolution.embedder is not None:  # eager, torchscript or onnx (Memory.prepare_serving)
            model["query_runtime"] = getattr(resolution.embedder, "query_runtime", "eager")
        if c.member is not None:  # a team member: counts of what it may read, not the owner's machine
            seen = c.memory.list()
            return {"api": API_VERSION, "version": extra.get("version"), "member": c.member.name,
                    "read": sorted(c.memory.readable), "write": sorted(c.memory.writable), "engrams": len(seen),
                    "by_scope": dict(Counter(e.scope for e in seen)), "quarantined": 0, "model": model}
        return {"api": API_VERSION, "version": extra.get("version"), "pid": os.getpid(),
                "home": str(c.memory.home), "engrams": len(c.memory.list()),
                "by_scope": dict(Counter(e.scope for e in c.memory.list())),
                "quarantined": c.memory.store.quarantined_count(), "index": c.memory.index_state(), "model": model,
                "served": dict(served),
                "worker": c.worker.stats(), **extra}

    def schema_(c: Call) -> dict[str, Any]:
        return schema()

    def recall(c: Call, query: str, k: int, scope: str | None, mode: str, types: list[str] | None,
               tags: list[str] | None, agent: str | None, min_score: float | None,
               include_expired: bool, explain: bool) -> dict[str, Any]:
        k = parse_int(k, "k", lo=0, hi=MAX_K)
        t0 = time.perf_counter()
        hits = c.memory.recall(query, k, scope=scope, mode=mode, types=types, tags=tags, agent=agent,
                               min_score=min_score, include_expired=include_expired, explain=explain)
        return {"hits": [h.to_dict() for h in hits], "took_ms": (time.perf_counter() - t0) * 1000.0,
                **model_warnings(c)}

    def model_warnings(c: Call) -> dict[str, Any]:
        """``{"warnings": [...]}`` when the service's model fell back (the CLI says it as in-process), else {}."""
        from ..memory.models import fallback_warnings

        said = fallback_warnings(c.memory)
        return {"warnings": said} if said else {}

    def block_dict(agent_id: str, block: Any) -> dict[str, Any]:
        return {"agent_id": agent_id, "text": block.text, "hash": block.hash,
                "engram_ids": list(block.engram_ids), "tokens": block.tokens}

    def block(c: Call, agent_id: str, query: str, scope: str | None, inject: bool) -> dict[str, Any]:
        if not agent_id:
            raise ValidationError("field 'agent_id' must be a non-empty string, got ''")
        t0 = time.perf_counter()
        rendered = recall_block(c.memory, query, scope=scope, agent=agent_id)
        if inject and rendered.text:  # the host puts it into its prompt (DSH's section), notes or overview
            record_injected(c.memory, agent_id, rendered, message=query)
        return {**block_dict(agent_id, rendered), "took_ms": (time.perf_counter() - t0) * 1000.0,
                **model_warnings(c)}

    def submit(c: Call, text: str, scope: str | None) -> dict[str, Any]:
        c.worker.submit(c.params["agent_id"], text, scope)
        return {"queued": True}

    def agent_block(c: Call) -> dict[str, Any]:
        from ..prompt.block import EMPTY_BLOCK

        agent_id = c.params["agent_id"]
        return block_dict(agent_id, c.worker.read_block(agent_id) or EMPTY_BLOCK)

    def drop(c: Call) -> dict[str, Any]:
        c.worker.drop(c.params["agent_id"])
        return {"dropped": c.params["agent_id"]}

    def learn(c: Call, statement: str, type: str, scope: str, tags: list[str], pinned: bool,
              domain: str | None, rationale: str | None, created: str | None, ttl: str | None,
              valid_until: str | None, about: str | None) -> dict[str, Any]:
        if about is not None:      # a model's learn tool: its note about the user goes to global (route_personal)
            from ..memory.turns.personal import route

            if about == "auto" and "global" not in getattr(c.memory, "writable", {"global"}):
                about = None        # a team member who may not write global keeps the scope asked
            scope = route(scope, about, statement if isinstance(statement, str) else "",
                          enabled=c.memory.settings.route_personal)
        known = c.memory.store.find_duplicate(statement, scope) if isinstance(statement, str) else None
        engram, is_new = c.memory.learn_outcome(statement, scope=scope, type=type, tags=tags, pinned=pinned,
                                                domain=domain, rationale=rationale, created=created, ttl=ttl,
                                                valid_until=valid_until)
        added = [] if is_new or known is None else [t for t in engram.tags if t not in known.tags]
        return {"engram": engram.to_dict(), "created": is_new, "tags_added": added}

    def engram(c: Call) -> dict[str, Any]:
        return {"engram": c.memory.get(c.params["engram_id"]).to_dict()}

    def forget(c: Call, id: str) -> dict[str, Any]:
        return {"forgotten": c.memory.forget(id).id}

    def feedback(c: Call, id: str, useful: bool, agent_id: str | None,
                 query: str | None) -> dict[str, Any]:
        counts = c.memory.feedback(id, useful, agent=agent_id, query=query)
        return {"id": id, **counts}

    def doctor(c: Call) -> dict[str, Any]:
        report = c.memory.doctor(load_model=True)
        report["manifest"] = c.memory.store.manifest_info()
        return report

    R = _REQUIRED
    routes = [
        Route(PREFIX + "/status", endpoint("status", status_), methods=["GET"]),
        Route(PREFIX + "/schema", endpoint("schema", schema_), methods=["GET"]),
        Route(PREFIX + "/recall", endpoint("recall", recall, {
            "query": ((str,), R), "k": ((int,), 10), "scope": (text_or_none, None), "mode": ((str,), "hybrid"),
            "types": (list_or_none, None), "tags": (list_or_none, None), "agent": (text_or_none, None),
            "min_score": ((int, float, type(None)), None), "include_expired": ((bool,), False),
            "explain": ((bool,), False)}),
            methods=["POST"]),
        Route(PREFIX + "/block", endpoint("block", block, {
            "agent_id": ((str,), R), "query": ((str,), R), "scope": (text_or_none, None),
            "inject": ((bool,), False)}), methods=["POST"]),
        Route(PREFIX + "/agents/{agent_id}/submit", endpoint("submit", submit, {
            "text": ((str,), R), "scope": (text_or_none, None)}, status=202), methods=["POST"]),
        Route(PREFIX + "/agents/{agent_id}/block", endpoint("agent_block", agent_block), methods=["GET"]),
        Route(PREFIX + "/agents/{agent_id}", endpoint("drop", drop), methods=["DELETE"]),
        Route(PREFIX + "/learn", endpoint("learn", learn, {
            "statement": ((str,), R), "type": ((str,), DEFAULT_TYPE), "scope": ((str,), "global"),
            "tags": ((list,), []), "pinned": ((bool,), False), "domain": (text_or_none, None),
            "rationale": (text_or_none, None), "created": (text_or_none, None), "ttl": (text_or_none, None),
            "valid_until": (text_or_none, None), "about": (text_or_none, None)}), methods=["POST"]),
        Route(PREFIX + "/engrams/{engram_id}", endpoint("engram", engram), methods=["GET"]),
        Route(PREFIX + "/forget", endpoint("forget", forget, {"id": ((str,), R)}), methods=["POST"]),
        Route(PREFIX + "/feedback", endpoint("feedback", feedback, {
            "id": ((str,), R), "useful": ((bool,), R), "agent_id": (text_or_none, None),
            "query": (text_or_none, None)}), methods=["POST"]),
        Route(PREFIX + "/doctor", endpoint("doctor", doctor), methods=["GET"]),
    ]
    from .api_hosts import host_routes  # list, update, inject: what MCP and the hooks need (issue 26)

    routes += host_routes(memory, endpoint, R, PREFIX, lock)
    from .api_transfer import transfer_routes  # export, import, project bind/unbind: the DSH plugin's /plur

    routes += transfer_routes(endpoint, R, PREFIX)

    async def http_error(request: Request, exc: Exception) -> Response:
        code = getattr(exc, "status_code", 500)
        if code == 405:
            err: PlurError = ValidationError(f"{request.method} is not allowed at {request.url.path}")
            return reply(error_body(err), 405)
        err = NotFoundError(f"no API route {request.url.path!r}; see GET {PREFIX}/status and "
                            "docs/reference/http-api.md")
        return reply(error_body(err), 404 if code == 404 else code)

    app = Starlette(routes=routes, exception_handlers={404: http_error, 405: http_error})
    app.state.served = served
    # bodies bounded as they stream (chunked ones too), before any handler reads them (plur.net.bodylimit)
    return BodyLimit(BearerAuth(app, token, None if members is None else members.member))  # type: ignore[return-value]


class PathDispatch:
    """ASGI: requests under ``prefix`` go to ``api``, everything else to ``web`` (the browser pages).

    The API sits outside the page's cookie/CSRF middleware, so it never sets or reads cookies.
    """

    def __init__(self, api: Any, web: Any, prefix: str = "/api/") -> None:
        self.api, self.web, self.prefix = api, web, prefix

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and (scope.get("path", "") + "/").startswith(self.prefix):
            await self.api(scope, receive, send)
        else:
            await self.web(scope, receive, send)
