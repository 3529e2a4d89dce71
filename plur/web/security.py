"""Request guards for the local web page: Host allow-list, same-origin check, CSRF tokens.

The page listens on loopback and can change the store, so three attacks matter:

* **DNS rebinding**: a foreign site's name is re-pointed at 127.0.0.1 so the browser
  talks to this server while believing it talks to the foreign site. The request then
  carries the foreign ``Host`` header, which :class:`HostGuard` refuses (400).
* **Cross-site request forgery**: a foreign page submits a form to this server. A
  mutating request must carry a same-origin ``Origin`` (or, lacking one, ``Referer``)
  *and* a CSRF token (:func:`check_mutation`).
* **Cookie tossing** from another localhost port (cookies ignore ports): the token is a
  *signed* double-submit cookie (OWASP CSRF Prevention Cheat Sheet, "Signed Double-Submit
  Cookie"): the cookie holds a random session id, the form field / ``X-CSRF-Token``
  header holds ``HMAC-SHA256(server secret, session id)``, so a cookie planted by
  another origin cannot be paired with a valid token.

Everything here is pure (no Starlette import) except the ASGI middlewares, which
only use the ASGI protocol itself.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

#: Host names always accepted in the ``Host`` header (loopback only).
LOOPBACK_HOSTS: frozenset[str] = frozenset({"127.0.0.1", "localhost", "::1"})
#: Name of the session cookie (holds the random session id, not the token).
COOKIE_NAME = "plur_session"
#: Form field and header that carry the CSRF token.
FORM_FIELD = "csrf_token"
HEADER_NAME = "x-csrf-token"
#: HTTP methods that never change state and need no token.
SAFE_METHODS: frozenset[str] = frozenset({"GET", "HEAD", "OPTIONS"})

_SESSION_RE = re.compile(r"\A[A-Za-z0-9_-]{43}\Z")  # secrets.token_urlsafe(32)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
                   Awaitable[None]]


def split_host(host_header: str) -> tuple[str, int | None]:
    """Split a ``Host`` header value into (lower-case host name, port or ``None``).

    ``"[::1]:7777"`` -> ``("::1", 7777)``; ``"LocalHost"`` -> ``("localhost", None)``.
    A malformed value gives ``("", None)``, which no allow-list contains.
    """
    value = host_header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return "", None
        name, rest = value[1:end], value[end + 1:]
        if rest and not rest.startswith(":"):
            return "", None
        port_text = rest[1:]
    elif value.count(":") == 1:
        name, port_text = value.split(":")
    elif ":" in value:  # bare IPv6 without brackets is not a valid Host header
        return "", None
    else:
        name, port_text = value, ""
    if port_text:
        if not port_text.isdigit() or int(port_text) > 65535:
            return "", None
        return name, int(port_text)
    return name, None


def is_loopback(host: str) -> bool:
    """True if ``host`` (a name or IP literal) is a loopback address or ``localhost``."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_warning(host: str) -> str | None:
    """The warning to print when the server binds to ``host``, or ``None`` for loopback.

    Binding elsewhere exposes every engram (and the forget action) to the network.
    """
    if is_loopback(host):
        return None
    return (f"WARNING: plur serve is bound to {host!r}, not loopback: anyone who can reach this machine "
            "can read and change your memory. Use --host 127.0.0.1 unless you mean it.")


def allowed_hosts(bound_host: str | None = None, extra: Iterable[str] = ()) -> frozenset[str]:
    """Host names accepted in the ``Host`` header: loopback names, the bound host and ``extra``.

    A wildcard bind (``0.0.0.0`` / ``::``) adds nothing: the names a client would use are
    unknown, so they must be passed in ``extra``.
    """
    names = set(LOOPBACK_HOSTS)
    if bound_host and bound_host not in ("0.0.0.0", "::", ""):
        names.add(split_host(bound_host)[0] or bound_host.strip("[]").lower())
    names.update(h.strip("[]").lower() for h in extra)
    return frozenset(names)


def host_allowed(host_header: str | None, allowed: frozenset[str]) -> bool:
    """True if the ``Host`` header names an allowed host (any port; port forwarding keeps working)."""
    if not host_header:
        return False
    name, _ = split_host(host_header)
    return bool(name) and name in allowed


def same_origin(origin: str | None, referer: str | None, host_header: str | None,
                scheme: str = "http") -> bool:
    """True if the request's ``Origin`` (or, when absent, ``Referer``) is this server's origin.

    The expected origin is ``<scheme>://<Host header>`` (the Host header has already been
    checked by :class:`HostGuard`). ``Origin: null`` (sandboxed frames, file:// pages) and
    a request with neither header are refused.
    """
    if not host_header:
        return False
    source = origin if origin is not None else referer
    if not source or source == "null":
        return False
    parts = urlsplit(source)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    return parts.scheme == scheme and split_host(parts.netloc) == split_host(host_header)


def new_session_id() -> str:
    """A fresh random session id (256 bits, URL-safe base64, 43 characters)."""
    return secrets.token_urlsafe(32)


def valid_session_id(value: str | None) -> bool:
    """True if ``value`` looks like :func:`new_session_id` output."""
    return bool(value) and bool(_SESSION_RE.match(value or ""))


def csrf_token(secret: bytes, session_id: str) -> str:
    """The CSRF token for a session: hex ``HMAC-SHA256(secret, session_id)`` (64 characters)."""
    return hmac.new(secret, session_id.encode("ascii"), hashlib.sha256).hexdigest()


def token_valid(secret: bytes, session_id: str | None, token: str | None) -> bool:
    """Constant-time check that ``token`` is :func:`csrf_token` of a well-formed ``session_id``."""
    if not valid_session_id(session_id) or not token:
        return False
    return hmac.compare_digest(csrf_token(secret, session_id or ""), token)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def _cookie(scope: Scope, name: str) -> str | None:
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    for part in raw.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


async def _plain(send: Callable[[Message], Awaitable[None]], status: int, text: str) -> None:
    body = text.encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class HostGuard:
    """ASGI middleware: refuse (400) any request whose ``Host`` is not in ``allowed``.

    Args:
        app: the wrapped ASGI app.
        allowed: host names from :func:`allowed_hosts`.
    """

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] in ("http", "websocket"):
            host = _header(scope, b"host")
            if not host_allowed(host, self.allowed):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await _plain(send, 400, f"refused: Host header {host!r} is not this local server; "
                                        "open the page at http://127.0.0.1:<port>/ (DNS rebinding guard)")
                return
        await self.app(scope, receive, send)


class SessionCookie:
    """ASGI middleware: give each browser a random session id cookie and expose its CSRF token.

    Sets ``scope["state"]["session_id"]`` and ``scope["state"]["csrf_token"]``; when the
    request had no valid cookie, the response sets one (``HttpOnly; SameSite=Strict;
    Path=<root_path>/``: the pages' secret prefix, so no other port's server receives it). Every response also carries the token in an ``X-CSRF-Token`` header, so a
    script using the JSON twins can send it back (only a same-origin reader can see it).
    Mutating requests are checked in :func:`check_mutation`, not here.

    Args:
        app: the wrapped ASGI app.
        secret: the per-process HMAC key (32 random bytes).
    """

    def __init__(self, app: ASGIApp, secret: bytes) -> None:
        self.app = app
        self.secret = secret

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith("/static/"):  # no data, no session
            await self.app(scope, receive, send)
            return
        path = scope.get("root_path", "") + "/"   # the pages' secret prefix (plur.web.login)
        sid = _cookie(scope, COOKIE_NAME)
        fresh = not valid_session_id(sid)
        if fresh:
            sid = new_session_id()
        state = scope.setdefault("state", {})
        state["session_id"] = sid
        state["session_valid"] = not fresh
        state["csrf_token"] = csrf_token(self.secret, sid or "")

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((HEADER_NAME.encode(), state["csrf_token"].encode()))
                if fresh:
                    cookie = f"{COOKIE_NAME}={sid}; Path={path}; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", cookie.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def check_mutation(*, method: str, secret: bytes, session_id: str | None, session_valid: bool,
                   token: str | None, origin: str | None, referer: str | None, host: str | None,
                   scheme: str = "http") -> str | None:
    """Decide whether a state-changing request may proceed.

    Args:
        method: HTTP method; safe methods (:data:`SAFE_METHODS`) are always refused here,
            so a mutating endpoint cannot be triggered by a link or an ``<img>``.
        secret: the server's HMAC key.
        session_id: the session id from the request's cookie.
        session_valid: whether that cookie was present and well formed.
        token: the CSRF token from the form field or ``X-CSRF-Token`` header.
        origin, referer, host: request headers.
        scheme: ``http`` or ``https``.

    Returns:
        ``None`` if allowed, else the reason (shown to the user with status 403).
    """
    if method.upper() in SAFE_METHODS:
        return f"{method} cannot change the store; use POST"
    if not same_origin(origin, referer, host, scheme):
        return (f"cross-origin request refused: Origin {origin!r} (Referer {referer!r}) is not "
                f"{scheme}://{host}; use the page itself")
    if not session_valid or not token_valid(secret, session_id, token):
        return "missing or invalid CSRF token; reload the page and try again"
    return None
