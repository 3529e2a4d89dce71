"""One rule for every out-of-process door (``plur recall``/``section``, ``plur mcp``, ``plur hook``).

Use the home's running service. When none runs, start one in the background, the way Gradle's
and Bazel's daemons start on first use, and answer the current call without waiting for the
embedding model: the caller recalls by keyword (BM25) in its own process and says so. The next
call finds the service (it writes ``service.json`` once its model is loaded) and gets hybrid recall.

An auto-started service exits after ``service_idle_exit_s`` without a request (3 h by default), so
nothing stays resident for good. Setting ``autostart_service = false`` (``config.toml``) or
``PLUR_AUTOSTART_SERVICE=0`` turns auto-start off: the doors then work in-process as before.

This module imports only the stdlib and :mod:`plur.service.files` until it has to start a service.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import files

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

#: ``<home>/service.spawn``: written (O_EXCL) by the door that spawns a service; younger than
#: :data:`SPAWN_GRACE_S` seconds it stops a second door from spawning another while the first starts.
SPAWN_FILE = "service.spawn"
SPAWN_GRACE_S = 60.0
#: The label a door puts on an answer it gave by keyword while the service starts.
KEYWORD_NOTE = ("keyword (BM25) recall: the plur service is starting in the background (loading the embedding "
                "model); later calls use it")


@dataclass(frozen=True)
class Door:
    """How a door reaches memory for one call.

    Attributes:
        client: a connected :class:`~plur.service.client.Client`, or ``None`` (work in-process).
        state: ``"service"`` (client set), ``"started"`` (this call spawned one), ``"starting"``
            (another process did and it is not answering yet), ``"off"`` (auto-start disabled or
            not asked for, or the running service has other settings than this process:
            :func:`_settings_drift`), ``"failed"`` (spawning failed; ``note`` says why).
        note: one line for ``--verbose`` / logs.
    """

    client: "Client | None"
    state: str
    note: str

    @property
    def keyword_only(self) -> bool:
        """The caller should answer by BM25 now (a service is on its way) rather than load a model."""
        return self.client is None and self.state in ("started", "starting")


def _connect(home: Path) -> "tuple[Client | None, str]":
    from .client import Client, Unreachable

    client, why = Client.discover(home)
    if client is None:
        return None, why
    try:
        client.connect()
    except Unreachable as exc:
        return None, f"{why}: {exc}"
    return client, f"{why}, {client.via}"


def door(home: str | os.PathLike[str] | None, *, start: bool = True) -> Door:
    """Find the home's service, starting it in the background when none runs (and ``start``).

    Never waits for the model: a spawned service answers only once loaded, so this call returns
    ``state="started"`` at once and the caller recalls by keyword meanwhile.

    Args:
        home: the plur home (``None``: ``$PLUR_HOME`` or ``~/.plur``).
        start: spawn a service if none runs (still subject to :func:`enabled`).

    Raises:
        ConfigError: a malformed ``autostart_service`` / ``service_idle_exit_s``.
    """
    home_path = files.home_of(home)
    replaced = ""
    if (home_path / files.SERVICE_FILE).exists():
        stale = _settings_drift(home_path, start)
        if stale is not None:
            if stale.client is None and stale.state == "off":
                return stale
            replaced = stale.note
        client, why = _connect(home_path)
        if client is not None:
            return Door(client, "service", f"via the service ({why})")
    else:
        why = files.no_service(home_path)
    if not start or not home_path.is_dir():  # no home yet: nothing to serve (`plur init` creates one)
        return Door(None, "off", why)
    from ..config import load_settings

    settings = load_settings(home_path)
    if not settings.autostart_service:
        return Door(None, "off", f"{why}; auto-start is off (autostart_service)")
    if files.service_alive(home_path) or _recently_spawned(home_path):
        return Door(None, "starting", "the plur service is starting (model loading)")
    if not _claim_spawn(home_path):
        return Door(None, "starting", "another process is starting the plur service")
    from .daemon import spawn

    try:
        proc = spawn(home_path, port=0, idle_exit_s=settings.service_idle_exit_s)
    except OSError as exc:
        return Door(None, "failed", f"could not start the plur service: {exc.strerror or exc}")
    _write_spawn(home_path, proc.pid)
    return Door(None, "started", f"{replaced}started the plur service in the background (pid {proc.pid}; log "
                                 f"{home_path / files.LOG_FILE})")


def _settings_drift(home: Path, start: bool) -> Door | None:
    """When the running service's settings differ from this process's (:func:`plur.service.stamp.drift`):

    * ``config.toml`` changed and the service was auto-started (``idle_exit_s`` > 0): it is stopped, so
      the caller starts one with the new settings (``Door(None, "replaced", why)``);
    * otherwise (a variable set for this call, or a service the user started): ``Door(None, "off", why)``,
      this caller works in-process; a stale service the user started is named on stderr with the fix.

    ``None`` when they agree.
    """
    import sys

    from .stamp import CONFIG, drift

    info = files.read_service_file(home)
    kind, words = drift(home, info)
    if not kind:
        return None
    pid = (info or {}).get("pid")
    if kind == CONFIG and start and float((info or {}).get("idle_exit_s") or 0) > 0:
        from .daemon import stop

        stop(home)
        return Door(None, "replaced", f"stopped the service pid {pid} ({words}); ")
    if kind == CONFIG:
        print(f"plur: warning: the running service (pid {pid}) ignores the new settings: {words}; this command "
              "works in-process. Apply them: plur service stop && plur service start", file=sys.stderr, flush=True)
    return Door(None, "off", f"the service (pid {pid}) runs with other settings ({words}); working in-process")


def wait(home: str | os.PathLike[str] | None, timeout_s: float, *, poll_s: float = 0.05) -> "Client | None":
    """Wait up to ``timeout_s`` for the home's service to answer; the connected client or ``None``."""
    home_path = files.home_of(home)
    deadline = time.monotonic() + timeout_s
    while True:
        if (home_path / files.SERVICE_FILE).exists():
            client, _ = _connect(home_path)
            if client is not None:
                return client
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll_s)


def _recently_spawned(home: Path) -> bool:
    """A door spawned a service less than :data:`SPAWN_GRACE_S` ago and that process still runs."""
    path = home / SPAWN_FILE
    try:
        age = time.time() - path.stat().st_mtime
        pid = int(path.read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError):
        return False
    return age < SPAWN_GRACE_S and pid > 0 and files.pid_alive(pid)


def _claim_spawn(home: Path) -> bool:
    """Create ``service.spawn`` exclusively (a stale one, older than the grace, is replaced)."""
    path = home / SPAWN_FILE
    for _ in (1, 2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if _recently_spawned(home):
                return False
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            continue
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        os.close(fd)
        return True
    return False


def _write_spawn(home: Path, pid: int) -> None:
    try:
        (home / SPAWN_FILE).write_text(f"{pid}\n", encoding="ascii")
    except OSError:  # pragma: no cover - the home vanished
        pass


__all__ = ["Door", "KEYWORD_NOTE", "door", "wait"]
