"""A small client of the local service's JSON API v1 (stdlib sockets only, so a CLI using it starts fast).

    >>> client, why = Client.discover(home)          # doctest: +SKIP
    >>> client.recall("what is my dog called?", k=3)["hits"][0]["engram"]["statement"]

Discovery reads ``<home>/service.json`` (:mod:`plur.service.files`). Requests go over the unix
socket when there is one (no TCP port, file-mode protected), else over loopback HTTP, always with
``Authorization: Bearer <token>``. Timeouts are short: :data:`CONNECT_TIMEOUT_S` to connect,
:data:`REQUEST_TIMEOUT_S` for an answer.

Errors: a service that cannot be reached raises :class:`Unreachable` (the caller falls back to
in-process work: nothing was sent); an API error is raised as the :class:`~plur.errors.PlurError`
subclass the service named (``ValidationError`` -> exit 2, ``NotFoundError`` -> 3, ...); no answer
within the timeout after the request was sent raises :class:`~plur.errors.ServiceError` (no
fallback then, so a write is never done twice).
"""

from __future__ import annotations

import json
from pathlib import Path
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is ~2 ms of a cold CLI recall
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any
from urllib.parse import quote, urlsplit

from ..errors import AuthError, PlurError, ServiceError
from .files import no_service, pid_alive, read_service_file
from .wire import Connection, ProtocolError, RemoteDisconnected

#: Seconds to wait for a connection (a live local service accepts in well under a millisecond).
CONNECT_TIMEOUT_S = 0.5
#: Seconds to wait for an answer (a recall that must first index a large batch of new engrams may take this long).
REQUEST_TIMEOUT_S = 30.0


#: What a kept-alive connection that the server closed while idle gives on the next request.
_STALE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, RemoteDisconnected)


class Unreachable(Exception):
    """No service answers at the discovered address (the request was not sent)."""


class Client:
    """Talks to one running service.

    Args:
        info: the parsed ``service.json`` (needs ``token`` and ``socket`` or ``url``).
        timeout_s: answer timeout in seconds (default :data:`REQUEST_TIMEOUT_S`).
        connect_timeout_s: connect timeout in seconds (default :data:`CONNECT_TIMEOUT_S`).
    """

    def __init__(self, info: dict[str, Any], *, timeout_s: float = REQUEST_TIMEOUT_S,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.info = info
        self.token: str = info["token"]
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._conn: Connection | None = None
        self._used = False  # the connection has carried a complete exchange (so the server may have closed it)
        self.via = ""
        #: files the service's store has quarantined, as its last answer said (``None``: not said yet)
        self.quarantined: int | None = None

    @classmethod
    def discover(cls, home: Path, **kwargs: Any) -> tuple["Client | None", str]:
        """A client for the service of ``home``, or ``None`` and the reason in words.

        The reason says where the service is (``"service pid 42 on unix socket <path>"``) or why there
        is none (no ``service.json``; its pid is not running; it runs with other settings than this
        process's, :func:`plur.service.stamp.drift`). Nothing is sent yet.
        """
        info = read_service_file(home)
        if info is None:
            return None, no_service(home)
        pid = info.get("pid")
        if isinstance(pid, int) and not pid_alive(pid):
            return None, f"stale {home / 'service.json'}: its pid {pid} is not running"
        from .stamp import drift

        kind, words = drift(home, info)
        if kind:  # answering with the service's settings would ignore this caller's
            return None, f"the service (pid {pid}) runs with other settings: {words}"
        return cls(info, **kwargs), f"service pid {pid}"

    # -- transport --------------------------------------------------------------------------
    def connect(self) -> Connection:
        """The kept-alive connection, opened on first use: the unix socket when there is one, else HTTP.

        Raises:
            Unreachable: neither address accepts a connection.
        """
        if self._conn is not None:
            return self._conn
        tried = []
        sock_path = self.info.get("socket")
        if isinstance(sock_path, str) and sock_path:
            try:
                self._conn = Connection.open_unix(sock_path, self.connect_timeout_s)
                self.via = f"unix socket {sock_path}"
            except OSError as exc:
                tried.append(f"{sock_path}: {exc.strerror or exc}")
        url = self.info.get("url")
        if self._conn is None and isinstance(url, str) and url:
            parts = urlsplit(url)
            try:
                self._conn = Connection.open_tcp(parts.hostname or "127.0.0.1", parts.port or 80,
                                                 self.connect_timeout_s)
                self.via = url
            except OSError as exc:
                tried.append(f"{url}: {exc.strerror or exc}")
        if self._conn is None:
            raise Unreachable("the service does not answer (" + "; ".join(tried or ["no address"]) + ")")
        assert self._conn.sock is not None
        self._conn.sock.settimeout(self.timeout_s)
        return self._conn

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send one API request; returns the decoded JSON answer.

        Args:
            method: ``GET``, ``POST`` or ``DELETE``. path: below ``/api/v1`` (e.g. ``"/recall"``).
            body: JSON object to send, or ``None``.

        Raises:
            Unreachable: no connection could be made (nothing was sent).
            PlurError: the API's error (its ``type`` names the subclass), :class:`AuthError` on 401.
            ServiceError: no complete answer within ``timeout_s``. A kept-alive connection that the server
                closed while idle is reopened and the request sent once more (it never reached the server).
        """
        payload = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            reused = self._conn is not None and self._used
            conn = self.connect()
            try:
                status, raw = conn.request(method, "/api/v1" + path, payload, headers)
                self._used = True
                break
            except _STALE as exc:
                # the server closes an idle kept-alive connection (uvicorn: after 5 s); a request on it
                # fails before the server read it, so sending it once more on a new connection is safe
                self.close()
                if reused and attempt == 1:
                    continue
                raise ServiceError(f"the plur service ({self.via}) did not answer {method} {path}: "
                                   f"{type(exc).__name__}: {exc}; see <home>/service.log") from None
            except (OSError, ProtocolError) as exc:
                self.close()
                raise ServiceError(f"the plur service ({self.via}) did not answer {method} {path}: "
                                   f"{type(exc).__name__}: {exc}; see <home>/service.log") from None
        try:
            data = json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError:
            raise ServiceError(f"the plur service answered {status} with non-JSON to {method} {path}") from None
        if status >= 400:
            raise _error_of(status, data)
        if isinstance(data, dict) and isinstance(data.get("quarantined"), int):
            self.quarantined = data["quarantined"]
        return data

    def close(self) -> None:
        """Close the connection (a later request reconnects)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._used = False

    # -- the API ----------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """``GET /status``: version, pid, home, engram count, model, request counters."""
        return self.request("GET", "/status")

    def recall(self, query: str, k: int = 10, *, scope: str | None = None, mode: str = "hybrid",
               types: list[str] | None = None, tags: list[str] | None = None,
               agent: str | None = None, min_score: float | None = None,
               include_expired: bool = False, explain: bool = False) -> dict[str, Any]:
        """``POST /recall`` -> ``{"hits": [...], "took_ms": float}`` (hits best first, scores in [0, 1]);
        ``explain`` fills each hit's ``context_matches`` (query terms matched through neighbouring turns)."""
        body: dict[str, Any] = {"query": query, "k": k, "scope": scope, "mode": mode, "types": types, "tags": tags,
                                "min_score": min_score, "include_expired": include_expired}
        if explain:
            body["explain"] = True
        if agent is not None:
            body["agent"] = agent
        return self.request("POST", "/recall", body)

    def block(self, agent_id: str, query: str, scope: str | None = None) -> dict[str, Any]:
        """``POST /block``: recall and render the agent's memory block now."""
        return self.request("POST", "/block", {"agent_id": agent_id, "query": query, "scope": scope})

    def submit(self, agent_id: str, text: str, scope: str | None = None) -> dict[str, Any]:
        """``POST /agents/{id}/submit``: queue an off-turn recall (202)."""
        return self.request("POST", f"/agents/{quote(agent_id, safe='')}/submit", {"text": text, "scope": scope})

    def agent_block(self, agent_id: str) -> dict[str, Any]:
        """``GET /agents/{id}/block``: the agent's cached block ('' text when none)."""
        return self.request("GET", f"/agents/{quote(agent_id, safe='')}/block")

    def learn(self, statement: str, **fields: Any) -> dict[str, Any]:
        """``POST /learn`` -> ``{"engram": {...}, "created": bool}`` (type, scope, tags, pinned, ...)."""
        return self.request("POST", "/learn", {"statement": statement, **fields})

    def engram(self, engram_id: str) -> dict[str, Any]:
        """``GET /engrams/{id}`` -> ``{"engram": {...}}``."""
        return self.request("GET", f"/engrams/{quote(engram_id, safe='')}")

    def forget_session(self, session: str, *, dry_run: bool = False) -> dict[str, Any]:
        """``POST /forget-session`` -> ``{"session", "engrams": ids, "forgotten": ids}`` (every engram of the
        conversation, forgotten as one write; ``dry_run``: only found, ``forgotten`` empty)."""
        return self.request("POST", "/forget-session", {"session": session, "dry_run": dry_run})

    def forget(self, engram_id: str) -> dict[str, Any]:
        """``POST /forget`` -> ``{"forgotten": id}``."""
        return self.request("POST", "/forget", {"id": engram_id})

    def feedback(self, engram_id: str, useful: bool, *, agent_id: str | None = None,
                 query: str | None = None) -> dict[str, Any]:
        """``POST /feedback`` -> ``{"id", "useful": n, "not_useful": m}``."""
        return self.request("POST", "/feedback", {"id": engram_id, "useful": useful, "agent_id": agent_id,
                                                  "query": query})

    def list_engrams(self, **filters: Any) -> dict[str, Any]:
        """``POST /list`` -> ``{"engrams": [...]}`` newest first (scope, type, tag, status, text, limit)."""
        return self.request("POST", "/list", filters)

    def update(self, engram_id: str, **changes: Any) -> dict[str, Any]:
        """``POST /update`` -> ``{"engram": {...}}`` (statement, tags, status, type, pinned)."""
        return self.request("POST", "/update", {"id": engram_id, **changes})

    def inject(self, query: str, **fields: Any) -> dict[str, Any]:
        """``POST /inject`` -> ``{"text", "engram_ids", "tokens"}``: engrams not in ``exclude`` only."""
        return self.request("POST", "/inject", {"query": query, **fields})

    def doctor(self) -> dict[str, Any]:
        """``GET /doctor``: the service's ``Memory.doctor()`` report (model already loaded)."""
        return self.request("GET", "/doctor")


def _error_of(status: int, data: Any) -> PlurError:
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return ServiceError(f"the plur service answered HTTP {status}")
    message = str(err.get("message") or f"HTTP {status}")
    if status == 401:
        return AuthError(message)
    cls = _error_classes().get(str(err.get("type")))
    if cls is not None:
        return cls(message)
    return PlurError(message) if status < 500 else ServiceError(message)


def _error_classes() -> dict[str, type[PlurError]]:
    """Every PlurError subclass by name (the API's ``error.type``)."""
    out: dict[str, type[PlurError]] = {}
    todo: list[type[PlurError]] = [PlurError]
    while todo:
        cls = todo.pop()
        out[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return out
