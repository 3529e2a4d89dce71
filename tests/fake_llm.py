"""An instant local model server speaking enough of the OpenAI, Gemini and Anthropic APIs for the docs' examples.

It records every request body and answers at once with one short text reply:

* ``POST /v1/chat/completions`` (pydantic-ai, langchain-openai), streaming (SSE) or not;
* ``POST /v1/responses`` (the OpenAI Agents SDK), streaming or not;
* ``POST /v1beta/models/<model>:generateContent`` and ``:streamGenerateContent`` (google-genai, ADK);
* ``POST /v1/messages`` (the Anthropic SDK, its tool runner), streaming or not: a text reply, no tool call.

Point ``OPENAI_BASE_URL`` at ``url + "/v1"``, ``GOOGLE_GEMINI_BASE_URL`` and ``ANTHROPIC_BASE_URL`` at ``url``. Run it as a script
(``python tests/fake_llm.py [PORT]``) to try the README examples without a paid key; it prints its URL.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPLY = "Noted."


def _chat(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    model, now = body.get("model", "gpt-4o"), int(time.time())
    whole = {"id": "chatcmpl-local", "object": "chat.completion", "created": now, "model": model,
             "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                          "message": {"role": "assistant", "content": REPLY}}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}
    base = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": now, "model": model}
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": REPLY},
                                    "finish_reason": None}]},
              {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}]
    return whole, chunks


def _response(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    item = {"id": "msg_local", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}
    whole = {"id": "resp_local", "object": "response", "created_at": int(time.time()), "status": "completed",
             "model": body.get("model", "gpt-4o"), "output": [item], "parallel_tool_calls": True,
             "tool_choice": "auto", "tools": [],
             "usage": {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11,
                       "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens_details": {"reasoning_tokens": 0}}}
    started = {**whole, "status": "in_progress", "output": []}
    events = [{"type": "response.created", "sequence_number": 0, "response": started},
              {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {**item, "status": "in_progress", "content": []}},
              {"type": "response.output_text.delta", "sequence_number": 2, "output_index": 0,
               "item_id": "msg_local", "content_index": 0, "delta": REPLY, "logprobs": []},
              {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item},
              {"type": "response.completed", "sequence_number": 4, "response": whole}]
    return whole, events


def _gemini(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    whole = {"candidates": [{"content": {"role": "model", "parts": [{"text": REPLY}]}, "finishReason": "STOP",
                             "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11}}
    return whole, [whole]


def _anthropic(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    whole = {"id": "msg_local", "type": "message", "role": "assistant", "model": body.get("model", "claude"),
             "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn", "stop_sequence": None,
             "usage": {"input_tokens": 10, "output_tokens": 1}}
    events = [{"type": "message_start", "message": {**whole, "content": [], "stop_reason": None}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY}},
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
               "usage": {"output_tokens": 1}},
              {"type": "message_stop"}]
    return whole, events


class FakeLLM:
    """Serve on ``127.0.0.1:<port>`` in a thread; ``requests`` as recorded, ``{"path", "body"}`` each.

    ``log_path``: also append each request to this file as a JSON line (a subprocess's view).
    """

    def __init__(self, port: int = 0, log_path: Path | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.log_path = log_path
        self.arrived = threading.Condition()
        rec = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                rec.record({"path": self.path, "body": body})
                path = self.path.split("?")[0]
                if path.endswith("/chat/completions"):
                    whole, parts = _chat(body)
                elif path.endswith("/responses"):
                    whole, parts = _response(body)
                elif path.endswith("/v1/messages"):
                    whole, parts = _anthropic(body)
                elif ":generateContent" in path or ":streamGenerateContent" in path:
                    whole, parts = _gemini(body)
                    if ":streamGenerateContent" in path:
                        self._sse(parts, events=False)
                        return
                else:
                    self._send(404, "application/json", json.dumps({"error": {"message": path}}).encode())
                    return
                if body.get("stream"):
                    self._sse(parts, events=path.endswith(("/responses", "/messages")))
                else:
                    self._send(200, "application/json", json.dumps(whole).encode())

            def _sse(self, parts: list[dict[str, Any]], events: bool) -> None:
                out = b""
                for p in parts:
                    head = f"event: {p['type']}\n" if events else ""
                    out += f"{head}data: {json.dumps(p)}\n\n".encode()
                if not events and "choices" in (parts[0] if parts else {}):
                    out += b"data: [DONE]\n\n"
                self._send(200, "text/event-stream", out)

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def record(self, request: dict[str, Any]) -> None:
        with self.arrived:
            self.requests.append(request)
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(request) + "\n")
            self.arrived.notify_all()

    def env(self) -> dict[str, str]:
        """The variables that point every framework of the README at this server, with dummy keys."""
        return {"OPENAI_BASE_URL": self.url + "/v1", "OPENAI_API_KEY": "sk-fake",
                "GOOGLE_GEMINI_BASE_URL": self.url, "GOOGLE_API_KEY": "fake",
                "ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": "fake",
                "OPENAI_AGENTS_DISABLE_TRACING": "1"}

    def __enter__(self) -> "FakeLLM":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    fake = FakeLLM(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(" ".join(f"{k}={v}" for k, v in fake.env().items()), flush=True)
    fake.server.serve_forever()
