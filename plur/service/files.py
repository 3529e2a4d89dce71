"""The service's files in ``<home>``: discovery/auth file, unix socket, pid file, log (stdlib only).

``service.json`` (mode 0600, written once the service answers, removed at a clean stop)::

    {"api": 1, "version": "0.1.0", "pid": 4242, "url": "http://127.0.0.1:7777",
     "socket": "<home>/plur.sock", "token": "<random urlsafe>", "login": "<random urlsafe>",
     "started": "2026-01-01T00:00:00Z", "idle_exit_s": 10800.0,
     "settings": {"config": [size, crc32] or null, "env": {...}, "names": [...]}}

``token`` is the JSON API's bearer token; ``login`` the pages' login secret, which signs one-time login
codes (:func:`login_url`).
``idle_exit_s`` > 0 marks an auto-started service; ``settings`` is what its settings came from
(:mod:`plur.service.stamp`).

``socket`` is ``null`` when the home's path is too long for a unix socket address
(:data:`MAX_SOCKET_PATH` bytes). This module imports nothing heavy: the fast CLI path reads it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import ConfigError

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is ~2 ms of a cold CLI recall
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

API_VERSION = 1
SERVICE_FILE = "service.json"
SOCKET_FILE = "plur.sock"
PID_FILE = "service.pid"
LOG_FILE = "service.log"
#: A starting service's progress (:mod:`plur.service.starting`), removed once it serves.
STARTING_FILE = "service.starting"
#: ``sun_path`` holds 108 bytes on Linux and 104 on macOS, NUL included; stay below both.
MAX_SOCKET_PATH = 100


def default_home() -> Path:
    """``$PLUR_HOME`` or ``~/.plur``, resolved as :func:`plur.config.default_home` does (without importing it)."""
    env = os.environ.get("PLUR_HOME")
    return Path(env).expanduser() if env else Path.home() / ".plur"


def home_of(home: str | os.PathLike[str] | None) -> Path:
    """The home folder for an optional ``--home`` value.

    Raises:
        ConfigError: ``home`` is ``""`` (``Path("")`` would be the current directory).
    """
    if isinstance(home, str) and not home.strip():  # plur.values compiles its patterns at import: only then
        from ..values import check_home

        check_home(home, error=ConfigError)
    return Path(home).expanduser() if home is not None else default_home()


def socket_path(home: Path) -> Path | None:
    """``<home>/plur.sock``, or ``None`` if that path is too long for ``AF_UNIX``."""
    path = Path(os.path.abspath(home)) / SOCKET_FILE
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def write_private_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically with mode 0600 from the first byte (never world-readable)."""
    import tempfile  # writers only: a client that reads service.json never pays for it

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_private_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (ASCII), mode 0600 whatever the umask (the pid file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(text)


def open_log(home: Path) -> Any:
    """``<home>/service.log`` opened for appending (binary), created 0600 and narrowed to 0600 if older."""
    path = home / LOG_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "ab")


def login_url(info: dict[str, Any]) -> str:
    """A fresh one-time login URL for the pages: ``<url>/w/<prefix>/?login=<code>`` (:mod:`plur.net.logincode`).

    Raises:
        KeyError: ``info`` (a ``service.json``) has no ``url`` or ``login``.
    """
    from ..net.logincode import login_url as make

    return make(str(info["url"]), str(info["login"]))


def no_service(home: Path) -> str:
    """Why a command works in-process when ``<home>/service.json`` is missing or unreadable (for ``--verbose``)."""
    return f"no service running for {home} (no readable {home / SERVICE_FILE})"


def read_service_file(home: Path) -> dict[str, Any] | None:
    """The parsed ``service.json``, or ``None`` when it is missing, unreadable or not API v1."""
    try:
        data = json.loads((home / SERVICE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("api") != API_VERSION or not isinstance(data.get("token"), str):
        return None
    return data


def read_pid(home: Path) -> int | None:
    """The pid in ``<home>/service.pid``, or ``None`` (missing or garbled)."""
    try:
        text = (home / PID_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists (signal 0; a zombie child counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else: not our service, but alive
        return True
    try:  # a zombie (exited, not reaped) still answers signal 0
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def remove_files(home: Path, pid: int | None = None) -> list[str]:
    """Remove ``service.json``, the socket, the pid file and ``service.starting`` (only those of ``pid`` when given).

    Returns:
        Names of the files removed.
    """
    removed = []
    info = read_service_file(home)
    if pid is not None and info is not None and info.get("pid") != pid:
        return removed  # another service took over this home meanwhile
    names = [SERVICE_FILE, PID_FILE, STARTING_FILE]
    sock = socket_path(home)
    if sock is not None:
        names.append(sock.name)
    for name in names:
        try:
            (home / name).unlink()
            removed.append(name)
        except FileNotFoundError:
            pass
    return removed


LOCK_FILE = "service.lock"


def hold_service_lock(home: Path) -> int | None:
    """Take the home's single-service lock (``flock`` on ``<home>/service.lock``) for this process's life.

    Returns:
        The open file descriptor (keep it open; the lock goes when the process does, even on SIGKILL),
        or ``None`` if a live service already holds it.
    """
    import fcntl

    fd = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def service_alive(home: Path) -> bool:
    """True while a service process holds ``<home>/service.lock`` (immune to a reused pid)."""
    if not (home / LOCK_FILE).exists():
        return False
    fd = hold_service_lock(home)
    if fd is None:
        return True
    os.close(fd)
    return False
