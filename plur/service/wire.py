"""HTTP/1.1 on one kept-alive stream socket, just what :class:`~plur.service.client.Client` sends and reads.

A request is a method, a target, headers and an optional body with ``Content-Length``; an answer is
read by its ``Content-Length``, by ``Transfer-Encoding: chunked``, or to the end of the stream
(RFC 9112 sections 6 and 7.1). The standard library's ``http.client`` does the same but imports the
``email`` package and ``ssl`` (about 20 ms of a cold CLI process that only talks to the local service).

Errors: a connection that the server closed while idle raises :class:`RemoteDisconnected` at the
next request (a ``ConnectionResetError``, as ``http.client``'s); a malformed answer raises
:class:`ProtocolError`; socket errors and timeouts pass through as ``OSError``.
"""

from __future__ import annotations

import _socket  # the C module: ``socket`` itself builds its enums at import (~2 ms of a cold CLI recall)

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    import socket

#: Largest status line + headers accepted, in bytes (the service's answers carry a handful of headers).
MAX_HEAD_BYTES = 65536


class RemoteDisconnected(ConnectionResetError):
    """The server closed the connection before answering (a kept-alive connection closed while idle)."""


class ProtocolError(Exception):
    """The answer is not HTTP/1.1 as expected (bad status line, length or chunk)."""


class Connection:
    """One HTTP/1.1 connection over a connected stream socket.

    Args:
        sock: a connected ``socket.socket`` (``AF_UNIX`` or ``AF_INET``).
        host: the ``Host`` header value (``localhost`` on a unix socket, ``host:port`` on TCP).
    """

    def __init__(self, sock: socket.socket | _socket.socket, host: str) -> None:
        self.sock: socket.socket | _socket.socket | None = sock
        self.host = host
        self._buf = b""

    @classmethod
    def open_unix(cls, path: str, timeout_s: float) -> "Connection":
        """Connect to the unix socket ``path`` (``OSError`` when nothing listens there)."""
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(path)
        except BaseException:
            sock.close()
            raise
        return cls(sock, "localhost")

    @classmethod
    def open_tcp(cls, host: str, port: int, timeout_s: float) -> "Connection":
        """Connect to ``host:port`` over TCP (``OSError`` when nothing listens there)."""
        import socket  # TCP only: a service with a unix socket never needs it

        sock = socket.create_connection((host, port), timeout=timeout_s)
        return cls(sock, host if port == 80 else f"{host}:{port}")

    def request(self, method: str, target: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, bytes]:
        """Send one request and read its answer.

        Returns:
            ``(status code, body bytes)``.

        Raises:
            RemoteDisconnected: the server closed the connection before any byte of an answer.
            ProtocolError: a malformed answer. OSError: the socket failed or timed out.
        """
        if self.sock is None:
            raise RemoteDisconnected("the connection is closed")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}", "Accept-Encoding: identity"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))
        status, fields = self._read_head()
        if fields.get("transfer-encoding", "").lower() == "chunked":
            data = self._read_chunked()
        elif "content-length" in fields:
            try:
                n = int(fields["content-length"])
            except ValueError:
                raise ProtocolError(f"bad Content-Length {fields['content-length']!r}") from None
            data = self._read_exact(n)
        elif status in (204, 304) or 100 <= status < 200 or method == "HEAD":
            data = b""
        else:
            data = self._read_to_end()
        if fields.get("connection", "").lower() == "close":
            self.close()
        return status, data

    def close(self) -> None:
        """Close the socket (idempotent)."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self._buf = b""

    # -- reading ------------------------------------------------------------------------------
    def _recv(self) -> bytes:
        assert self.sock is not None
        return self.sock.recv(65536)

    def _read_head(self) -> tuple[int, dict[str, str]]:
        while b"\r\n\r\n" not in self._buf:
            if len(self._buf) > MAX_HEAD_BYTES:
                raise ProtocolError(f"answer headers over {MAX_HEAD_BYTES} bytes, too large")
            got = self._recv()
            if not got:
                if not self._buf:
                    raise RemoteDisconnected("the server closed the connection without an answer")
                raise ProtocolError("the server closed the connection inside the answer's headers")
            self._buf += got
        head, self._buf = self._buf.split(b"\r\n\r\n", 1)
        status_line, *rest = head.decode("latin-1").split("\r\n")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise ProtocolError(f"bad status line {status_line[:80]!r}")
        fields: dict[str, str] = {}
        for line in rest:
            name, sep, value = line.partition(":")
            if sep:
                fields[name.strip().lower()] = value.strip()
        return int(parts[1]), fields

    def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            got = self._recv()
            if not got:
                raise ProtocolError(f"the server closed the connection {n - len(self._buf)} bytes short of the answer")
            self._buf += got
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def _read_line(self) -> bytes:
        while b"\r\n" not in self._buf:
            got = self._recv()
            if not got:
                raise ProtocolError("the server closed the connection inside a chunked answer")
            self._buf += got
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _read_chunked(self) -> bytes:
        out = []
        while True:
            size_text = self._read_line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
            if size == 0:
                while self._read_line():  # trailer fields, then the empty line
                    pass
                return b"".join(out)
            out.append(self._read_exact(size))
            self._read_exact(2)  # the CRLF after each chunk

    def _read_to_end(self) -> bytes:
        chunks = [self._buf]
        self._buf = b""
        while got := self._recv():
            chunks.append(got)
        self.close()
        return b"".join(chunks)


__all__ = ["Connection", "MAX_HEAD_BYTES", "ProtocolError", "RemoteDisconnected"]
