"""Owner-only pages: a login token in the URL, exchanged for a signed session cookie (Jupyter-style).

Loopback is not a boundary between local accounts: any user of the machine can connect to
127.0.0.1. So every page and JSON twin needs proof that the browser belongs to the owner of the
home. The proof is the *login token*: a random value the service writes to ``<home>/service.json``
(mode 0600, readable by the owner alone) and ``plur service url`` prints as
``http://127.0.0.1:7777/?token=<login token>``. Opening that URL once:

1. :class:`LoginGuard` compares the token in constant time;
2. answers ``303`` to the same path without the token (so it leaves the address bar), setting
   ``plur_auth_<port>=<nonce>.<HMAC-SHA256(secret, nonce)>; HttpOnly; SameSite=Strict; Path=/``;
3. every later request carries the cookie, which only this process's secret can have signed
   (a cookie tossed from another localhost port cannot be forged; cookies ignore ports, hence the
   port in the name so two services in one browser keep their own).

Without a valid cookie every route except ``/static/*`` (the style sheet and script, which hold no
data) answers ``401`` with one line naming the command that prints the URL. CSRF, Origin and Host
checks (:mod:`plur.web.security`) still apply after this one. Only the ASGI protocol is used here.

Sources: Jupyter Server's token authentication (``ServerApp.token``, ``?token=`` login);
OWASP Session Management Cheat Sheet (HttpOnly, SameSite=Strict).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from .security import _cookie, _header, split_host

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]

#: Query parameter that carries the login token.
TOKEN_PARAM = "token"
#: Prefix of the auth cookie's name (``plur_auth_<port>``).
COOKIE_PREFIX = "plur_auth"
#: The one line every unauthenticated request gets (status 401).
HINT = ("401: this page is the owner's; run `plur service url` and open the URL it prints "
        "(`plur serve --open` opens it)")
BAD_TOKEN = ("401: the login token in this URL is not this server's (a new one is made at each start); "
             "run `plur service url` and open the URL it prints")


def new_login_token() -> str:
    """A fresh login token: 256 random bits, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def cookie_name(host_header: str | None) -> str:
    """``plur_auth_<port>`` for the port in the ``Host`` header (80 when it names none)."""
    port = split_host(host_header or "")[1]
    return f"{COOKIE_PREFIX}_{port or 80}"


def _sign(secret: bytes, nonce: str) -> str:
    return hmac.new(secret, b"plur-login:" + nonce.encode("ascii"), hashlib.sha256).hexdigest()


def auth_cookie_value(secret: bytes) -> str:
    """A new signed cookie value ``<nonce>.<hex HMAC-SHA256(secret, 'plur-login:' + nonce)>``."""
    nonce = secrets.token_urlsafe(24)
    return f"{nonce}.{_sign(secret, nonce)}"


def auth_cookie_valid(secret: bytes, value: str | None) -> bool:
    """Constant-time check that ``value`` was made by :func:`auth_cookie_value` with ``secret``."""
    if not value or value.count(".") != 1:
        return False
    nonce, sig = value.split(".")
    if not nonce.isascii() or not (16 <= len(nonce) <= 64):
        return False
    return hmac.compare_digest(_sign(secret, nonce), sig)


def login_url(base_url: str, token: str, path: str = "/") -> str:
    """The URL that logs a browser in: ``<base_url><path>?token=<token>``."""
    return base_url.rstrip("/") + path + "?" + urlencode({TOKEN_PARAM: token})


async def _answer(send: Callable[[Message], Awaitable[None]], status: int, text: str, as_json: bool,
                  extra: list[tuple[bytes, bytes]] | None = None) -> None:
    if as_json:
        body = json.dumps({"error": text, "kind": "Unauthorized"}).encode("utf-8")
        kind = b"application/json"
    else:
        body = (text + "\n").encode("utf-8")
        kind = b"text/plain; charset=utf-8"
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode())] + (extra or [])
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class LoginGuard:
    """ASGI middleware: the owner's login (``?token=``) and its session cookie, else 401.

    Args:
        app: the wrapped ASGI app (the pages).
        secret: this process's HMAC key (the one the CSRF tokens use).
        login_token: the token a login URL must carry (:func:`new_login_token`).
    """

    def __init__(self, app: Any, secret: bytes, login_token: str) -> None:
        self.app = app
        self.secret = secret
        self.login_token = login_token

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith("/static/"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        name = cookie_name(host)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        as_json = ("format", "json") in query
        given = [v for k, v in query if k == TOKEN_PARAM]
        if given:
            if len(given) != 1 or not hmac.compare_digest(given[0].encode("utf-8"),
                                                          self.login_token.encode("utf-8")):
                await _answer(send, 401, BAD_TOKEN, as_json)
                return
            rest = urlencode([(k, v) for k, v in query if k != TOKEN_PARAM])
            path = "/" + (scope.get("path") or "/").lstrip("/")  # never '//host': no open redirect
            target = quote(path, safe="/-._~!$&'()*+,;=:@%") + ("?" + rest if rest else "")
            cookie = f"{name}={auth_cookie_value(self.secret)}; Path=/; HttpOnly; SameSite=Strict"
            await _answer(send, 303, "logged in; continue at " + target, False,
                          [(b"location", target.encode("utf-8")), (b"set-cookie", cookie.encode("ascii"))])
            return
        if not auth_cookie_valid(self.secret, _cookie(scope, name)):
            await _answer(send, 401, HINT, as_json)
            return
        await self.app(scope, receive, send)
