"""Bearer-token authentication for MCP over streamable HTTP (stdio needs none: the client owns the process).

Any local account can connect to 127.0.0.1, so the HTTP transport asks every request for
``Authorization: Bearer <token>``, the token in ``<home>/mcp.token`` (mode 0600, readable by the
home's owner alone; made on first use and kept, so a client's configuration survives restarts).
A request without it, or with another, gets ``401`` with ``WWW-Authenticate: Bearer`` and a JSON-RPC
error body naming the file, and reaches neither the MCP session manager nor the memory.

This is the MCP specification's rule for HTTP transports (authorization, "Token Requirements":
the ``Authorization: Bearer`` header on every request, 401 when missing or invalid), with a token
the owner copies into the client instead of an OAuth flow. Only the ASGI protocol is used here.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from ..store.atomic import private_dirs
from ..store.modes import private_file

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]

#: The token's file in the home.
TOKEN_FILE = "mcp.token"


def token_path(home: Path) -> Path:
    """``<home>/mcp.token``."""
    return Path(home) / TOKEN_FILE


def ensure_token(home: Path) -> str:
    """The home's MCP token, made (256 random bits, mode 0600) when the file is missing or empty.

    Raises:
        OSError: the home is not writable or the file not readable.
    """
    path = token_path(home)
    private_dirs(path.parent)
    try:
        token = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        token = ""
    if token:
        private_file(path)  # an older or copied home: make it the owner's again
        return token
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(token + "\n")
    private_file(path)
    return token


def bearer_ok(header: str | None, token: str) -> bool:
    """Constant-time check of an ``Authorization`` header value against ``Bearer <token>``."""
    if not header or not token:
        return False
    scheme, _, given = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "surrogateescape"), token.encode("utf-8"))


class BearerGuard:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``, else 401.

    Args:
        app: the MCP server's ASGI app (``MCPServer.streamable_http_app()``).
        token: the expected token (:func:`ensure_token`).
        where: the token file, named in the refusal.
    """

    def __init__(self, app: Any, token: str, where: str = TOKEN_FILE) -> None:
        self.app = app
        self.token = token
        self.where = where

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] == "http":
            header = None
            for key, value in scope.get("headers", ()):
                if key == b"authorization":
                    header = value.decode("latin-1")
                    break
            if not bearer_ok(header, self.token):
                message = (f"unauthorized: send 'Authorization: Bearer <token>' with the token in {self.where} "
                           "(mode 0600, the home's owner only)")
                body = json.dumps({"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32001, "message": message}}).encode("utf-8")
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode()),
                                        (b"www-authenticate", b'Bearer realm="plur"')]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
