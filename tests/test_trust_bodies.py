"""Issue 38: a request body is bounded as it streams, chunked ones (no Content-Length) included, at every
HTTP door: the service's JSON API, the web pages, and ``plur mcp --transport streamable-http``.

Before, the API read a chunked body whole and then compared its size with 4 MB (1 GB went in, the service
grew by 1 GB). Here a client streams chunks until the server answers; the answer (413) must come once about
4 MiB have gone in (plus what the socket buffers hold), long before the 64 MiB the client is ready to send.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import wait_for
from plur.net.bodylimit import MAX_BODY_BYTES
from plur.memory import Memory

CHUNK = 64 * 1024
READY_TO_SEND = 64 * 1024 * 1024


def push_chunked(port: int, path: str, headers: dict[str, str]) -> tuple[int, int]:
    """Stream a chunked body of up to 64 MiB; returns (bytes sent when the answer came, status code)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Transfer-Encoding: chunked",
            "Content-Type: application/json"] + [f"{k}: {v}" for k, v in headers.items()]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
    piece = f"{CHUNK:x}\r\n".encode() + b'{"' + b"a" * (CHUNK - 2) + b"\r\n"
    sent = 0
    try:
        while sent < READY_TO_SEND:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.sendall(piece)
            except OSError:   # the server stopped reading and closed: its answer is waiting
                break
            sent += CHUNK
        if sent >= READY_TO_SEND:   # the old behaviour: still reading; end the body to get its answer
            sock.sendall(b"0\r\n\r\n")
        status_line = b""
        while b"\r\n" not in status_line:
            got = sock.recv(4096)
            if not got:
                break
            status_line += got
    finally:
        sock.close()
    status = int(status_line.split(b" ")[1]) if status_line.startswith(b"HTTP/") else 0
    return sent, status


def _serve(app) -> tuple[int, object, threading.Thread]:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "uvicorn to start")
    return sock.getsockname()[1], server, thread


def test_api_and_pages_stop_a_chunked_body_at_the_limit(memory: Memory) -> None:
    from plur.prompt.worker import RecallWorker
    from plur.service.api import PathDispatch, create_api
    from plur.web.server import create_app

    worker = RecallWorker(memory)
    web = create_app(memory)
    app = PathDispatch(create_api(memory, worker, "tok"), web)
    port, server, thread = _serve(app)
    try:
        sent, status = push_chunked(port, "/api/v1/learn", {"Authorization": "Bearer tok"})
        assert status == 413 and sent < 4 * MAX_BODY_BYTES, (sent, status)
        sent, status = push_chunked(port, "/api/v1/recall", {"Authorization": "Bearer tok"})
        assert status == 413 and sent < 4 * MAX_BODY_BYTES, (sent, status)
        import http.client
        from urllib.parse import urlsplit

        from plur.net.logincode import login_url
        login = urlsplit(login_url(f"http://127.0.0.1:{port}", web.state.login_token))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)   # the owner, logged in
        conn.request("GET", login.path + "?" + login.query)
        cookie = conn.getresponse().getheader("set-cookie").split(";")[0]
        conn.close()
        sent, status = push_chunked(port, f"{login.path}engrams/ENG-2025-01-01-000000/edit", {"Cookie": cookie})
        assert status == 413 and sent < 4 * MAX_BODY_BYTES, (sent, status)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)   # a declared size: refused unread
        conn.putrequest("POST", "/api/v1/learn")
        conn.putheader("Authorization", "Bearer tok")
        conn.putheader("Content-Length", str(MAX_BODY_BYTES + 1))
        conn.endheaders()
        assert conn.getresponse().status == 413
        conn.close()
        assert memory.list() == []
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        worker.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_mcp_streamable_http_stops_a_chunked_body_at_the_limit(plur_home: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": "none", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "plur", "mcp", "--transport", "streamable-http",
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def up() -> bool:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return (plur_home / "mcp.token").exists()
            except OSError:
                return False
        wait_for(up, "plur mcp to listen")
        token = (plur_home / "mcp.token").read_text().strip()
        sent, status = push_chunked(port, "/mcp", {"Authorization": f"Bearer {token}",
                                                   "Accept": "application/json, text/event-stream"})
        assert status == 413 and sent < 4 * MAX_BODY_BYTES, (sent, status)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
