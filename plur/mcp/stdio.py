"""MCP over stdio with JSON-RPC 2.0's error answers for malformed input (issue 38).

The SDK's stdio transport drops a line it cannot read (``garbage``, ``[1,2,3]``, a request whose id is
``null``) without a reply, so a client waits forever. JSON-RPC 2.0 (section 5.1) answers them: ``-32700``
Parse error for text that is not JSON, ``-32600`` Invalid Request for JSON that is not a request, with
``"id": null`` when the id cannot be told. :func:`run_stdio` puts a filter in front of the SDK's own
transport: good lines go on unchanged, bad ones are answered on stdout, between the SDK's whole lines
(one lock for both writers).
"""

from __future__ import annotations

import json
import sys
from io import TextIOWrapper
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def verdict(line: str) -> dict[str, Any] | None:
    """The JSON-RPC error answer for one input line, or ``None`` when it goes to the server as it is.

    An empty line gets neither (``{}`` is returned for it: skip).
    """
    if not line.strip():
        return {}
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({str(exc)[:120]})")
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, f"Invalid Request: expected one JSON-RPC object, got "
                                             f"{type(message).__name__} (MCP does not batch)")
    given = message.get("id")
    ident = given if isinstance(given, (str, int)) and not isinstance(given, bool) else None
    if message.get("jsonrpc") != "2.0":
        return _error(ident, INVALID_REQUEST, "Invalid Request: 'jsonrpc' must be \"2.0\"")
    if "method" in message:
        if not isinstance(message["method"], str):
            return _error(ident, INVALID_REQUEST, "Invalid Request: 'method' must be a string")
        if "id" in message and ident is None:
            return _error(None, INVALID_REQUEST, f"Invalid Request: a request id must be a string or an integer, "
                                                 f"not {json.dumps(given)[:40]}")
    elif "result" not in message and "error" not in message:
        return _error(ident, INVALID_REQUEST, "Invalid Request: no 'method' (nor a 'result' or 'error')")
    try:
        import mcp_types

        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError: the SDK would drop the line
        first = str(exc).splitlines()[0][:120]
        return _error(ident, INVALID_REQUEST, f"Invalid Request: {first}")
    return None


def _error(ident: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def run_stdio(server: Any) -> None:
    """Serve ``server`` (an ``MCPServer``) over this process's stdin/stdout until stdin closes."""
    import anyio

    from mcp.server import stdio as sdk

    async def main() -> None:
        claim = getattr(sdk, "_claim_fd", None)   # the SDK's fd diversion: stray prints miss the wire
        restore: list[Any] = []
        if claim is not None:
            stdin_buf, r_in = claim(0, sys.stdin, "rb", sdk._open_stdin_diversion)
            stdout_buf, r_out = claim(1, sys.stdout, "wb", sdk._open_stdout_diversion)
            restore = [r for r in (r_out, r_in) if r is not None]
        else:  # pragma: no cover - an SDK without it
            stdin_buf, stdout_buf = sys.stdin.buffer, sys.stdout.buffer
        out = _Out(anyio.wrap_file(TextIOWrapper(stdout_buf, encoding="utf-8", write_through=True)))
        inp = _In(anyio.wrap_file(TextIOWrapper(stdin_buf, encoding="utf-8", errors="replace")), out)
        try:
            async with sdk.stdio_server(stdin=inp, stdout=out) as (read_stream, write_stream):  # type: ignore[arg-type]
                low = server._lowlevel_server
                await low.run(read_stream, write_stream, low.create_initialization_options())
        finally:
            for r in restore:
                r()

    anyio.run(main)


class _Out:
    """stdout for the SDK's writer and the filter: each ``write`` is one whole line, flushed, under a lock."""

    def __init__(self, f: Any) -> None:
        import anyio

        self._f = f
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._f.write(text)
            await self._f.flush()

    async def flush(self) -> None:
        pass


class _In:
    """stdin for the SDK's reader: the lines it can take; the others answered on :class:`_Out`."""

    def __init__(self, f: Any, out: _Out) -> None:
        self._f, self._out = f, out

    def __aiter__(self) -> Any:
        return self._lines()

    async def _lines(self) -> Any:
        async for line in self._f:
            answer = verdict(line)
            if answer is None:
                yield line
            elif answer:
                await self._out.write(json.dumps(answer) + "\n")
