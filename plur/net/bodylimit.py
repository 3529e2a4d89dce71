"""An ASGI middleware that bounds a request body as it streams, for every HTTP door (API, pages, MCP).

Checking ``len(await request.body())`` bounds nothing: the body has been read whole by then. A body sent
``Transfer-Encoding: chunked`` has no ``Content-Length`` to check first, so a member of a team could push
1 GB into the service's memory before a 4 MB limit said no (issue 38). :class:`BodyLimit` counts the bytes
of each ``http.request`` message as the app receives them and stops at the limit: a declared
``Content-Length`` over the limit is refused before any byte is read, and a stream that grows past it is
cut off there. Either way the client gets ``413`` with one JSON line, and the service holds at most
``max_bytes`` plus one chunk of it.

Only the ASGI protocol is used (no Starlette import).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]

#: Largest request body any door accepts, bytes (a statement is at most ``max_statement_bytes``, 1 MiB).
MAX_BODY_BYTES = 4 * 1024 * 1024


class _TooLarge(BaseException):
    """Raised into the app from ``receive`` (a BaseException: a handler's ``except Exception`` lets it by)."""


def _is_too_large(exc: BaseException) -> bool:
    if isinstance(exc, _TooLarge):
        return True
    if isinstance(exc, BaseExceptionGroup):   # raised inside a task group (anyio)
        return all(_is_too_large(e) for e in exc.exceptions)
    return False


class BodyLimit:
    """ASGI middleware: ``413`` for a request body over ``max_bytes``, counted as it streams.

    Args:
        app: the wrapped ASGI app.
        max_bytes: the largest body accepted.
    """

    def __init__(self, app: Any, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = int(max_bytes)

    async def _refuse(self, send: Callable[[Message], Awaitable[None]], size: str) -> None:
        text = (f"request body {size} is over the limit of {self.max_bytes} bytes, too large; send less "
                "(a statement is at most max_statement_bytes)")
        body = json.dumps({"error": {"type": "ValidationError", "message": text}}).encode("utf-8")
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers", ()):
            if key == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await self._refuse(send, f"of {declared} bytes (Content-Length)")
                    return
        total = 0
        started = False

        async def limited() -> Message:
            nonlocal total
            message = await receive()
            if message["type"] == "http.request":
                total += len(message.get("body", b""))
                if total > self.max_bytes:
                    raise _TooLarge()
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except BaseException as exc:
            if not _is_too_large(exc):
                raise
            if not started:
                await self._refuse(send, f"of more than {self.max_bytes} bytes (streamed)")
