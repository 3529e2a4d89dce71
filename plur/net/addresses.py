"""Listening sockets for the service, bound before anything is printed, and the names they answer to.

A port in use, an address that is not this machine's, or a port below 1024 fails here with one
:class:`~plur.errors.ServiceError` line (exit 7), before the model loads and before "serving" is
printed. A wildcard bind (``0.0.0.0`` / ``::``) accepts, in the ``Host`` header, the loopback names,
this machine's host name and each of its addresses found by :func:`local_addresses`, and the URLs
printed are exactly those.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
from pathlib import Path

from ..errors import ServiceError

WILDCARDS = ("0.0.0.0", "::", "")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` or a loopback IP literal."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_tcp(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0 = any free port).

    Raises:
        ServiceError: the port is in use, the address is not this machine's or cannot be resolved,
            or binding is not permitted (ports below 1024); the message says what to do.
    """
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServiceError(f"cannot listen on host {host!r}: {exc.strerror}; use an address of this machine, "
                           "e.g. --host 127.0.0.1") from None
    family, kind, proto, _, addr = infos[0]
    # proto must be IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted connections only then, and without
    # it a response's header and body writes meet delayed ACKs (~40 ms per request on loopback).
    sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT only; a live listener still fails
        if family == socket.AF_INET6 and host in WILDCARDS:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServiceError(f"port {port} on {host} is already in use (another plur serve or another "
                               "program); pick a free one with --port N, or --port 0 for any free port") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise ServiceError(f"cannot listen on {host!r}: it is not an address of this machine; use "
                               "127.0.0.1 (this machine only) or 0.0.0.0 (every interface)") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise ServiceError(f"not allowed to listen on port {port} (ports below 1024 need privileges); "
                               "use --port 7777 or another port above 1023") from None
        raise ServiceError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def port_in_use(host: str, port: int) -> bool:
    """True when another process listens on ``host:port`` (a trial bind fails with EADDRINUSE)."""
    try:
        bind_tcp(host, port).close()
    except ServiceError as exc:
        return "already in use" in str(exc)
    return False


def bind_unix(path: Path) -> socket.socket:
    """A listening unix socket at ``path`` with mode 0600 from the start (a stale file is replaced).

    The caller must hold the home's service lock, so no live service owns ``path``.

    Raises:
        ServiceError: the socket cannot be created there.
    """
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket file is created 0600: no window where others may connect
    try:
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ServiceError(f"cannot create the unix socket {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    sock.setblocking(False)
    return sock


def local_addresses() -> list[str]:
    """This machine's non-loopback IP addresses (host-name lookup plus the default route's source address).

    The default route's address comes from ``connect()`` on a UDP socket to a documentation address
    (RFC 5737 / RFC 3849): that picks the outgoing interface without sending a packet.
    """
    found: set[str] = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None):
            found.add(str(info[4][0]))
    except OSError:
        pass
    for family, target in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((target, 9))
                found.add(str(s.getsockname()[0]))
        except OSError:
            pass
    return sorted(a.split("%")[0] for a in found if not is_loopback(a) and not a.startswith("fe80:"))


def host_names(host: str, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The ``Host`` header names the page accepts for a bind to ``host`` (in order, no duplicates)."""
    names = list(LOOPBACK_NAMES)
    if host in WILDCARDS:
        names += [socket.gethostname().lower(), *local_addresses()]
    elif not is_loopback(host):
        names.append(host.strip("[]").lower())
    names += [h.strip("[]").lower() for h in extra]
    return list(dict.fromkeys(n for n in names if n))


def urls(host: str, port: int, names: list[str]) -> list[str]:
    """The URLs that reach a bind to ``host:port``: loopback first (unless bound elsewhere), then the others."""
    if host in WILDCARDS:
        hosts = ["127.0.0.1"] + [n for n in names if n not in LOOPBACK_NAMES]
    elif is_loopback(host):
        hosts = [host]
    else:
        hosts = [host.strip("[]")]
    return [f"http://{f'[{h}]' if ':' in h else h}:{port}/" for h in hosts]
