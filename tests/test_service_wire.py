"""plur.service.wire: HTTP/1.1 on one kept-alive socket, against a real listening socket that answers in each
framing the RFC allows (Content-Length, chunked, to the end of the stream) and closes idle connections."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from plur.service.wire import Connection, ProtocolError, RemoteDisconnected


@pytest.fixture
def server() -> Iterator[tuple[int, list[bytes], list[bytes]]]:
    """A loopback server: each accepted connection reads requests and sends the next queued answer;
    an answer of ``b""`` closes the connection instead (a server closing an idle keep-alive)."""
    answers: list[bytes] = []
    seen: list[bytes] = []
    lsock = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        lsock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = lsock.accept()
            except TimeoutError:
                continue
            with conn:
                buf = b""
                while answers:
                    while b"\r\n\r\n" not in buf:
                        got = conn.recv(65536)
                        if not got:
                            break
                        buf += got
                    if b"\r\n\r\n" not in buf:
                        break
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    length = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:")]
                    while length and len(buf) < length[0]:
                        buf += conn.recv(65536)
                    body, buf = buf[:length[0] if length else 0], buf[length[0] if length else 0:]
                    seen.append(head + b"\r\n\r\n" + body)
                    answer = answers.pop(0)
                    if not answer:
                        break
                    conn.sendall(answer)
                    if b"Connection: close" in answer:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield lsock.getsockname()[1], answers, seen
    stop.set()
    thread.join(10)
    lsock.close()


def test_content_length_chunked_and_to_the_end_answers(server) -> None:
    port, answers, seen = server
    answers += [b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\ncontent-type: application/json\r\n\r\n{\"a\":1}",
                b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"b\r\n4;x=1\r\n\":2}\r\n0\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"c\":3}"]
    conn = Connection.open_tcp("127.0.0.1", port, 30)
    assert conn.request("POST", "/api/v1/recall", b'{"q":"x"}', {"Authorization": "Bearer t"}) == (200, b'{"a":1}')
    assert conn.request("GET", "/api/v1/status", None, {}) == (404, b'{"b":2}')   # same connection, chunked
    assert conn.request("GET", "/x", None, {}) == (200, b'{"c":3}')              # read to the end, then closed
    assert conn.sock is None
    first = seen[0].decode()
    assert first.startswith("POST /api/v1/recall HTTP/1.1\r\n") and f"Host: 127.0.0.1:{port}\r\n" in first
    assert "Content-Length: 9\r\n" in first and "Authorization: Bearer t\r\n" in first and first.endswith('{"q":"x"}')
    assert "Content-Length" not in seen[1].decode()                             # a GET without a body has none


def test_a_connection_the_server_closed_raises_remote_disconnected(server) -> None:
    port, answers, _ = server
    answers += [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", b""]
    conn = Connection.open_tcp("127.0.0.1", port, 30)
    assert conn.request("GET", "/a", None, {}) == (200, b"{}")
    with pytest.raises(RemoteDisconnected):      # the client retries these on a new connection
        conn.request("GET", "/b", None, {})
    assert isinstance(RemoteDisconnected(), ConnectionResetError)


@pytest.mark.parametrize("answer", [b"garbage\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
                                    b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\nConnection: close\r\n\r\nshort",
                                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"])
def test_a_malformed_answer_is_a_protocol_error(server, answer: bytes) -> None:
    port, answers, _ = server
    answers += [answer, b""]
    conn = Connection.open_tcp("127.0.0.1", port, 30)
    with pytest.raises(ProtocolError):
        conn.request("GET", "/a", None, {})
    conn.close()
