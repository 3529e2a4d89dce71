"""A local HTTP server speaking enough of the Anthropic Messages API for ``claude -p``; it records each request.

``POST /v1/messages`` (streaming or not) is answered with one short text reply, or with the content
blocks ``script(body)`` returns (a ``tool_use`` block makes the client run that tool and ask again); every
request body is appended to ``requests`` (and to ``log_path`` as JSON lines when given). Used by
tests/test_clients.py and bench/doors/doors.py to see what the real Claude Code CLI sends.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from collections.abc import Callable
from typing import Any

REPLY = "Noted."
#: ``script(request body) -> content blocks`` (``None``: the plain text reply).
Script = Callable[[dict[str, Any]], "list[dict[str, Any]] | None"]


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _message(model: str) -> dict[str, Any]:
    return {"id": "msg_local", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}


class Recorder:
    """Serve on ``127.0.0.1:<port>`` in a thread; ``url`` for ``ANTHROPIC_BASE_URL``, ``requests`` as recorded."""

    def __init__(self, log_path: Path | None = None, script: Script | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.log_path = log_path
        self.script = script
        rec = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                rec.requests.append({"path": self.path, "body": body})
                if rec.log_path is not None:
                    with open(rec.log_path, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps({"path": self.path, "body": body}) + "\n")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self._json({"input_tokens": 10})
                    return
                model = body.get("model", "claude")
                blocks = (rec.script(body) if rec.script is not None else None) or [{"type": "text", "text": REPLY}]
                stop = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
                if not body.get("stream"):
                    msg = _message(model)
                    msg.update(content=blocks, stop_reason=stop)
                    self._json(msg)
                    return
                parts = [_sse("message_start", {"type": "message_start", "message": _message(model)})]
                for i, block in enumerate(blocks):
                    if block.get("type") == "tool_use":
                        start = {**block, "input": {}}
                        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                    else:
                        start = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    parts += [_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                           "content_block": start}),
                              _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                              _sse("content_block_stop", {"type": "content_block_stop", "index": i})]
                parts += [_sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                                                 "stop_sequence": None}, "usage": {"output_tokens": 1}}),
                          _sse("message_stop", {"type": "message_stop"})]
                data = b"".join(parts)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Recorder":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def messages_text(self, i: int) -> str:
        """All text of request ``i``'s messages (where Claude Code puts hook context)."""
        return json.dumps(self.requests[i]["body"].get("messages", []), ensure_ascii=False)
