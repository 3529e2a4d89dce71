"""``plur service start|stop|status``: the service as a background process of this user.

* ``start`` spawns ``python -m plur --home H serve ...`` in its own session, stdout and stderr
  appended to ``<home>/service.log``, and returns once ``GET /api/v1/status`` answers. It waits as long as
  the starting service progresses (``<home>/service.starting``, :mod:`plur.service.starting`: a million-engram
  store takes minutes to open) and fails when the process exits (with the log's last lines) or stalls.
* ``stop`` sends SIGTERM and waits for the process to go, a service still starting too (it writes its pid
  first thing); the server removes ``service.json``, the socket and the pid file itself; leftovers of a
  process that died uncleanly are removed here.
* ``status`` says whether one runs, with pid, addresses and counts.

"Running" means a process holds ``<home>/service.lock`` (:func:`plur.service.files.service_alive`),
so a stale pid file (crash, SIGKILL, reboot, a reused pid) is recognised and cleaned up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ServiceError
from . import files
from .client import Client, Unreachable
from .starting import Progress, read_starting
from ..store.atomic import private_dirs

#: Seconds ``plur service url`` waits for a starting service's page (the first start may build indexes).
START_TIMEOUT_S = 180.0
#: Seconds ``start`` waits without progress from the starting service (no new phase, no CPU used) before it
#: gives up; a service that keeps progressing is waited for however long it takes (issue 49: 243 s at 1M).
START_STALL_S = 120.0
#: Seconds ``stop`` waits for the pid of a service that holds the lock but has not written it (a moment).
PID_WAIT_S = 5.0
#: Seconds ``stop`` waits after SIGTERM (indexes are saved on the way out).
STOP_TIMEOUT_S = 30.0
#: The exit codes a PlurError gives (README "exit code" table) that ``start`` passes on from the service process.
PLUR_EXIT_CODES = frozenset(range(2, 11))


def status(home: Path) -> dict[str, Any]:
    """Where the home's service stands.

    Returns:
        ``{"running": bool, "home", "pid", "url", "socket", "log", "stale_removed": [names]}`` plus,
        when it answers, ``"status"`` (the API's ``/status``). Stale files are removed here.
    """
    out: dict[str, Any] = {"running": False, "home": str(home), "pid": None, "url": None, "socket": None,
                           "log": str(home / files.LOG_FILE), "stale_removed": []}
    if files.service_alive(home):
        out["running"] = True
        info = files.read_service_file(home)
        out["pid"] = (info or {}).get("pid") or files.read_pid(home)
        if info is not None:
            out["url"], out["socket"] = info.get("url"), info.get("socket")
            try:
                out["status"] = Client(info, timeout_s=5.0).status()
            except (Unreachable, Exception) as exc:  # noqa: BLE001 - still starting, or wedged
                out["error"] = str(exc)
        else:
            phase = (read_starting(home) or {}).get("phase") or "indexes and model loading"
            out["error"] = f"starting ({phase}; service.json not written yet)"
        return out
    out["stale_removed"] = files.remove_files(home)
    return out


def start(home: Path, host: str = "127.0.0.1", port: int = 7777, *, allow_hosts: Sequence[str] = (),
          stall_s: float = START_STALL_S, auto: bool = False) -> dict[str, Any]:
    """Start the service in the background unless one runs; wait until its API answers.

    ``auto``: started on a door's first need (the DSH plugin), so it exits after ``service_idle_exit_s``
    without a request, as the CLI's auto-started service does (:mod:`plur.service.autostart`).
    ``stall_s``: give up once the starting service has shown no progress for this many seconds
    (:class:`plur.service.starting.Progress`); there is no limit on a start that keeps progressing.

    Returns:
        :func:`status` of the running service, with ``"already": True`` if it was running before.

    Raises:
        ConfigError: a setting (config.toml, ``PLUR_*``) is invalid; checked here, before anything is spawned.
        ServiceError: the process exited during start (its log's last lines are in the message; the
            exit code is the process's own when it is one of plur's, e.g. 4 for an unreadable store),
            or stalled for ``stall_s`` (it may still be running: the message says how to stop it).
    """
    now = status(home)
    if now["running"]:
        return {**now, "already": True}
    from ..config import load_settings

    settings = load_settings(home)  # a bad setting is the usual one line and exit 2, not "the service exited" (exit 7)
    proc = spawn(home, host, port, allow_hosts=allow_hosts,
                 idle_exit_s=settings.service_idle_exit_s if auto else 0.0)
    log_path = home / files.LOG_FILE
    progress = Progress(stall_s)
    while not progress.stalled(read_starting(home)):
        code = proc.poll()
        if code is not None:
            err = ServiceError(f"the service exited with status {code} while starting: {_tail(log_path)} "
                               f"(full log: {log_path})")
            if code in PLUR_EXIT_CODES:  # the service's own verdict (2 bad input, 4 store...), not a generic 7
                err.exit_code = code
            raise err
        info = files.read_service_file(home)
        if info is not None and info.get("pid") == proc.pid:
            try:
                Client(info, timeout_s=5.0).status()
            except Exception:  # noqa: BLE001 - not answering yet
                pass
            else:
                return {**status(home), "already": False}
        time.sleep(0.05)
    phase = (progress.last or {}).get("phase", "not begun")
    raise ServiceError(f"the service (pid {proc.pid}) made no progress for {stall_s:.0f} s while starting (at: "
                       f"{phase}); see {log_path}, `plur service status`, and stop it with `plur service stop`")


def spawn(home: Path, host: str = "127.0.0.1", port: int = 7777, *, allow_hosts: Sequence[str] = (),
          idle_exit_s: float = 0.0) -> subprocess.Popen[bytes]:
    """Start ``python -m plur --home H serve ...`` in its own session and return at once (no wait).

    stdout and stderr are appended to ``<home>/service.log``. ``idle_exit_s`` > 0: the service exits
    after that many seconds without a request (auto-started services, :mod:`plur.service.autostart`).
    """
    private_dirs(home)
    # -P: the current folder is not put on sys.path, so a folder named plur there cannot shadow the package
    cmd = [sys.executable, "-P", "-m", "plur", "--home", str(home), "serve", "--host", host, "--port", str(port)]
    for name in allow_hosts:
        cmd += ["--allow-host", name]
    if idle_exit_s > 0:
        cmd += ["--idle-exit-s", repr(float(idle_exit_s))]
    with files.open_log(home) as log:
        log.write(f"\n== plur service start {time.strftime('%Y-%m-%dT%H:%M:%S%z')}: {' '.join(cmd)}\n".encode())
        log.flush()
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)


def stop(home: Path, *, timeout_s: float = STOP_TIMEOUT_S) -> dict[str, Any]:
    """Stop the home's service (SIGTERM), wait until its process has exited, remove what it left.

    Returns:
        ``{"stopped": pid or None, "stale_removed": [names]}`` (``None``: none was running).

    Raises:
        ServiceError: it still runs after ``timeout_s`` (the message gives the pid to kill).
    """
    if not files.service_alive(home):
        return {"stopped": None, "stale_removed": files.remove_files(home)}
    info = files.read_service_file(home) or {}
    pid = info.get("pid") or files.read_pid(home)
    deadline = time.monotonic() + PID_WAIT_S
    while not isinstance(pid, int) and time.monotonic() < deadline and files.service_alive(home):
        time.sleep(0.05)  # it took the lock a moment ago: its pid comes next (plur.service.runner)
        pid = files.read_pid(home)
    if not isinstance(pid, int):
        raise ServiceError(f"a service holds {home / files.LOCK_FILE} but wrote no pid yet; retry in a moment")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        # The lock goes when the server closes it, before the interpreter has finished exiting (threads,
        # atexit, the model's libraries): "stopped" means the process is gone, so wait for the pid too.
        if not files.service_alive(home) and not files.pid_alive(pid):
            return {"stopped": pid, "stale_removed": files.remove_files(home)}
        time.sleep(0.05)
    raise ServiceError(f"the service (pid {pid}) is still running {timeout_s:.0f} s after SIGTERM; "
                       f"see {home / files.LOG_FILE}, or end it with `kill -9 {pid}`")


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())
