"""Owner-only pages: a one-time login link, exchanged for a signed session cookie scoped to a secret path.

Loopback is not a boundary between local accounts: any user of the machine can connect to
127.0.0.1, and run a server on another port of it. So every page and JSON twin needs proof that the
browser belongs to the owner of the home, and that proof must never reach another port's server:

1. The pages live under a per-start prefix ``/w/<random>/`` (:func:`plur.net.logincode.page_prefix`); any
   other path (but ``/static/*``, which holds no data, and ``/api/*``, the bearer-token API) answers 401.
2. ``plur service url`` prints ``http://127.0.0.1:7777/w/<random>/?login=<code>``: a code that works
   once, for a few minutes (:mod:`plur.net.logincode`). :class:`LoginGuard` redeems it and answers ``303``
   to the same page without it, setting ``plur_auth_<port>=<nonce>.<HMAC-SHA256(secret, nonce)>;
   Path=/w/<random>/; HttpOnly; SameSite=Strict``.
3. Cookies ignore ports (RFC 6265 section 8.5) but not paths: the browser sends the cookie only to URLs
   under the prefix, which a server on another port never sees. Only this process's secret can sign the
   cookie, so one tossed from another port cannot be forged.

Without a valid cookie every page answers ``401`` with one line naming the command that prints the URL.
CSRF, Origin and Host checks (:mod:`plur.web.security`) still apply after this one. Only the ASGI
protocol is used here.

Sources: Jupyter Server's token authentication (``?token=`` login, a redirect file for the browser);
OWASP Session Management Cheat Sheet (HttpOnly, SameSite=Strict, Path).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode


from ..net.logincode import CODE_PARAM, CODE_TTL_S, CodeBook, new_login_secret, page_prefix
from ..net.logincode import login_url as _login_url
from .security import _cookie, _header, split_host

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]

#: Prefix of the auth cookie's name (``plur_auth_<port>``).
COOKIE_PREFIX = "plur_auth"
#: The one line every unauthenticated request gets (status 401).
HINT = ("401: this page is the owner's; run `plur service url` and open the URL it prints "
        "(`plur service url --open` opens it)")
#: Why a login code was refused, by :class:`plur.net.logincode.CodeBook` answer.
CODE_REFUSED = {
    CodeBook.BAD: "401: this login link is not this server's (a new secret is made at each start); "
                  "run `plur service url` and open the URL it prints",
    CodeBook.EXPIRED: f"401: this login link has expired (a link works once, for {CODE_TTL_S // 60} minutes); "
                      "run `plur service url` for a new one",
    CodeBook.USED: "401: this login link was used already (a link works once); run `plur service url` for a "
                   "new one",
}


def new_login_token() -> str:
    """A fresh login secret: 256 random bits, URL-safe base64 (43 characters)."""
    return new_login_secret()


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
    """A fresh one-time login URL for the pages of the server whose login secret is ``token``."""
    return _login_url(base_url, token, path)


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


async def _continue_page(send: Callable[[Message], Awaitable[None]], target: str,
                         extra: list[tuple[bytes, bytes]]) -> None:
    """200 with a same-origin meta refresh to ``target``: a browser that arrived from another site (a
    ``file://`` redirect page, a link in another app) follows a 303 as part of that cross-site navigation
    and leaves a ``SameSite=Strict`` cookie out; a navigation started by this page sends it."""
    url = html.escape(target, quote=True)
    body = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">'
            f'<title>plur</title></head><body><p>Logged in. <a href="{url}">Continue</a>.</p></body></html>\n'
            ).encode("utf-8")
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()),
               *extra]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _target(path: str, query: list[tuple[str, str]]) -> str:
    rest = urlencode([(k, v) for k, v in query if k != CODE_PARAM])
    path = "/" + path.lstrip("/")  # never '//host': no open redirect
    return quote(path, safe="/-._~!$&'()*+,;=:@%") + ("?" + rest if rest else "")


class LoginGuard:
    """ASGI middleware: the pages under their secret prefix, for the owner's login cookie only, else 401.

    A request under the prefix reaches the app with ``root_path`` set to the prefix (ASGI), so its
    routes stay ``/``, ``/engrams/<id>``, ...; links and redirects prepend ``scope["root_path"]``.

    Args:
        app: the wrapped ASGI app (the pages).
        secret: this process's HMAC key (the one the CSRF tokens use).
        login_token: the login secret codes are signed with (:func:`new_login_token`).
    """

    def __init__(self, app: Any, secret: bytes, login_token: str) -> None:
        self.app = app
        self.secret = secret
        self.prefix = page_prefix(login_token)
        self.codes = CodeBook(login_token)

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path.startswith("/static/"):
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        as_json = ("format", "json") in query
        if path != self.prefix and not path.startswith(self.prefix + "/"):
            await _answer(send, 401, HINT, as_json)   # never a hint of the prefix
            return
        if path == self.prefix:   # the cookie's Path ends in '/': send the browser there
            await _answer(send, 308, "continue at " + self.prefix + "/", False,
                          [(b"location", (self.prefix + "/" + _target("", query)[1:]).encode("utf-8"))])
            return
        name = cookie_name(_header(scope, b"host"))
        has_cookie = auth_cookie_valid(self.secret, _cookie(scope, name))
        given = [v for k, v in query if k == CODE_PARAM]
        if given:
            verdict = self.codes.redeem(given[0]) if len(given) == 1 else CodeBook.BAD
            if verdict != CodeBook.OK and not has_cookie:
                await _answer(send, 401, CODE_REFUSED[verdict], as_json)
                return
            target = _target(path, query)
            extra = []
            if verdict == CodeBook.OK:
                cookie = f"{name}={auth_cookie_value(self.secret)}; Path={self.prefix}/; HttpOnly; SameSite=Strict"
                extra.append((b"set-cookie", cookie.encode("ascii")))
            if _header(scope, b"sec-fetch-site") in (None, "none", "same-origin"):
                await _answer(send, 303, "logged in; continue at " + target, False,
                              [(b"location", target.encode("utf-8")), *extra])
            else:   # arrived from elsewhere (the --open file): a redirect would not carry a SameSite=Strict cookie
                await _continue_page(send, target, extra)
            return
        if not has_cookie:
            await _answer(send, 401, HINT, as_json)
            return
        scope = dict(scope)
        scope["root_path"] = scope.get("root_path", "") + self.prefix
        await self.app(scope, receive, send)
