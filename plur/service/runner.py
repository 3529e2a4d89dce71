"""The long-lived service process behind ``plur serve``: one Memory, the web page and the JSON API.

Start-up order, so a failure is one clear line and nothing half-started is left behind:

1. take ``<home>/service.lock`` (a second service for the same home is refused, exit 7), write ``service.pid`` (so
   ``plur service stop`` can stop a service still starting) and start ``service.starting``, the progress
   ``plur service start`` waits on (:mod:`plur.service.starting`);
2. bind the TCP port and ``<home>/plur.sock`` (port in use, foreign address -> exit 7, nothing printed);
3. open the indexes, load the model and trace its query path (:meth:`Memory.prepare_serving`);
   start the thread that runs the store's periodic full scan between requests (:class:`_Freshener`) and the one
   that keeps linked Claude Code memory folders in step (:class:`plur.hosts.claude_link.watch.LinkWatcher`);
4. write ``service.json`` (0600, with a fresh API token and page login secret), print where it listens and a one-time
   login URL, serve with uvicorn.

SIGTERM or Ctrl-C stop it cleanly: uvicorn drains requests, the recall worker stops, indexes are
saved, and ``service.json``, the socket and the pid file are removed.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ServiceError, require
from ..net.addresses import WILDCARDS, bind_tcp, bind_unix, host_names, is_loopback, urls as bind_urls
from . import files
from .api import PathDispatch, create_api
from .homewatch import HomeWatch
from ..store.atomic import private_dirs

#: ``web_factory(memory, bound_host=..., allow_hosts=..., lock=..., login_token=...)`` -> the page's ASGI app
#: (``plur.web.server.create_app``; passed in by the CLI, since the service layer does not import web).
WebFactory = Callable[..., Any]


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _raise_exit(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def run(home: str | os.PathLike[str] | None, host: str = "127.0.0.1", port: int = 7777, *,
        web_factory: WebFactory | None = None, allow_hosts: Sequence[str] = (), open_browser: bool = False,
        ready: Callable[[dict[str, Any]], None] | None = None, idle_exit_s: float = 0.0) -> None:
    """Serve the page and the API until SIGTERM / Ctrl-C.

    Args:
        home: plur home folder (default ``$PLUR_HOME`` or ``~/.plur``).
        host: address to bind (loopback by default; a wildcard accepts this machine's names, printed).
        port: TCP port; 0 picks a free one (written to ``service.json``).
        web_factory: builds the browser pages (``plur.web.server.create_app``); ``None`` = API only.
        allow_hosts: extra ``Host`` header names for the pages (e.g. a DNS name of this machine).
        open_browser: open the page once listening.
        ready: called with the ``service.json`` data once it is written (tests, embedding).
        idle_exit_s: > 0: stop after that many seconds without a request (auto-started services,
            :mod:`plur.service.idle`); 0 = serve until stopped.

    Raises:
        ServiceError: another service holds this home, the port is in use, the address is wrong.
        MissingDependencyError: the ``web`` extra is not installed.
    """
    uvicorn = require("uvicorn", "web")
    require("starlette", "web")
    from ..index.heap import limit_arenas
    from ..memory import Memory

    limit_arenas()  # before any thread: a long-lived process's heap in 2 glibc arenas, not one per thread
    from ..prompt.worker import RecallWorker

    home_path = files.home_of(home)
    private_dirs(home_path)
    lock_fd = files.hold_service_lock(home_path)
    if lock_fd is None:
        info = files.read_service_file(home_path) or {}
        raise ServiceError(f"a plur service (pid {info.get('pid', files.read_pid(home_path) or '?')}) already "
                           f"serves {home_path}; see `plur service status`, stop it with `plur service stop`")
    previous = signal.signal(signal.SIGTERM, _raise_exit)  # SIGTERM before uvicorn runs: still a clean stop
    sockets: list[socket.socket] = []
    memory = worker = web = freshener = members = links = homewatch = beat = None
    started = False
    try:
        files.remove_files(home_path)  # leftovers of a service that died without cleaning up
        files.write_private_text(home_path / files.PID_FILE, f"{os.getpid()}\n")
        from .starting import StartBeat

        beat = StartBeat(home_path, os.getpid())
        beat.phase("binding")
        tcp = bind_tcp(host, port)
        sockets.append(tcp)
        port = tcp.getsockname()[1]
        sock_path = files.socket_path(home_path)
        if sock_path is not None:
            sockets.append(bind_unix(sock_path))
        else:
            _say(f"plur: {home_path / files.SOCKET_FILE} is too long for a unix socket; the API is on "
                 "loopback HTTP only")
        names = host_names(host, tuple(allow_hosts))
        warning = _bind_warning(host)
        if warning:
            _say(warning)
        from ..config import SETTINGS
        from .stamp import stamp

        settings_stamp = stamp(home_path, (s.name for s in SETTINGS))  # before Memory reads them: never newer
        beat.phase("opening the store")
        memory = Memory(home_path)
        n = memory.count()  # the first full scan; not len(list()): that sorts every engram (0.7 s at 100k)
        beat.phase("opening the indexes and the model")
        memory.prepare_serving()  # open the indexes, load the model and trace its query path before answering
        worker = RecallWorker(memory)
        freshener = _Freshener(memory)
        from ..hosts.claude_link.watch import LinkWatcher

        links = LinkWatcher(memory)  # linked Claude Code memory folders (plur link), kept in step
        lock = threading.Lock()
        token = secrets.token_urlsafe(32)
        login = secrets.token_urlsafe(32)  # the pages' login token (plur.web.login), not the API's
        urls = bind_urls(host, port, names)
        loop_url = f"http://127.0.0.1:{port}" if host in WILDCARDS else urls[0].rstrip("/")
        info = {"api": files.API_VERSION, "version": _version(), "pid": os.getpid(), "url": loop_url,
                "socket": str(sock_path) if sock_path else None, "token": token, "login": login,
                "started": datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
                "idle_exit_s": float(idle_exit_s), "settings": settings_stamp}
        members = _member_doors(memory, RecallWorker)
        api = create_api(memory, worker, token, lock=lock, members=members,
                         info={k: info[k] for k in ("version", "url", "socket", "started")})
        web = (web_factory(memory, bound_host=host, allow_hosts=names, lock=lock, login_token=login)
               if web_factory else None)
        app = homewatch = HomeWatch(PathDispatch(api, web if web is not None else api), home_path)
        idle = None
        if idle_exit_s > 0:
            from .idle import IdleWatch

            app = idle = IdleWatch(app, idle_exit_s)
        files.write_private_json(home_path / files.SERVICE_FILE, info)
        beat.close()
        _say(f"plur: serving {n} engrams from {home_path} (pid {os.getpid()}; Ctrl-C or `plur service stop` "
             "to stop)")
        _say(f"  page + API   {'  '.join(urls)}")
        if web is not None:
            _say(f"  page login   {files.login_url(info)} (works once, for 5 minutes; `plur service url` prints "
                 "a new one)")
        if sock_path is not None:
            _say(f"  API socket   {sock_path} (mode 0600)")
        _say(f"  API token    in {home_path / files.SERVICE_FILE} (mode 0600)")
        _say(f"  Host header  the pages answer to {', '.join(names)}; any other gets 400 "
             "(add a name with --allow-host)")
        if ready is not None:
            ready(info)
        if open_browser:
            threading.Thread(target=_open_page, args=(home_path, info), daemon=True).start()
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", server_header=False,
                                               timeout_graceful_shutdown=3, lifespan="off"))
        started = True
        homewatch.start(server)
        if idle is not None:
            idle.start(server)
        server.run(sockets=sockets)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if beat is not None:
            beat.close()
        for s in sockets:
            s.close()
        files.remove_files(home_path, pid=os.getpid())
        if links is not None:
            links.stop()
        if homewatch is not None:
            homewatch.stop()
            if homewatch.gone and memory is not None:
                memory.keep_home_unwritten()   # the home was deleted: save nothing, recreate nothing
        if freshener is not None:
            freshener.stop()
        if members is not None:
            members.close()
        if worker is not None:
            worker.close()
        caches = getattr(getattr(web, "state", None), "caches", None)
        if caches is not None:
            caches.usage.close()
        if memory is not None:
            memory.close()
        os.close(lock_fd)
        if started:
            _say("plur: service stopped")


class _Freshener:
    """A daemon thread that runs :meth:`Memory.refresh_ahead` every quarter second.

    The full stat scan that catches in-place hand edits falls due every ``refresh_interval_s``
    (stretched to 50x its cost: 49 ms every 2.5 s at 10k engrams); inside a request it made the
    first recall after a pause of 3 s take 67-92 ms server-side instead of 4-16 ms (6 of 8 requests,
    the 10k store of ``bench/doors/service.py``). Here it runs between requests, and not at all after
    10 minutes without one.
    """

    #: seconds between checks (a check that finds no scan due costs microseconds)
    PERIOD_S = 0.25

    def __init__(self, memory: Any) -> None:
        self._memory = memory
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="plur-store-freshener", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.PERIOD_S):
            if not os.path.isdir(self._memory.home):   # deleted: HomeWatch stops the service; write nothing
                return
            try:
                self._memory.refresh_ahead()
            except Exception as exc:  # noqa: BLE001 - a failed scan is retried by the next request's own
                _say(f"plur: background store scan failed: {type(exc).__name__}: {exc}")
                self._stop.wait(30.0)

    def stop(self) -> None:
        """Stop the thread and wait for a scan in progress (at most one scan)."""
        self._stop.set()
        self._thread.join(timeout=10.0)


def _member_doors(memory: Any, make_worker: Callable[[Any], Any]) -> Any:
    """On a PostgreSQL store, the doors team members' tokens open (:mod:`plur.service.access`); else ``None``."""
    if not getattr(memory.store, "remote", False):
        return None
    from ..store.pg.team import TeamDirectory
    from .access import MemberDoors

    directory = TeamDirectory(memory.store.uri)
    return MemberDoors(memory, directory.member, make_worker, directory.close_connection)


def _open_page(home: Path, info: dict[str, Any]) -> None:
    """``--open``: a one-time login URL through an owner-only redirect file (:mod:`plur.net.browser`)."""
    from ..net.browser import no_browser_line, open_login

    opened, path = open_login(home, files.login_url(info))
    if not opened:
        _say(no_browser_line(path))


def _bind_warning(host: str) -> str | None:
    if is_loopback(host):
        return None
    return (f"WARNING: plur serve is bound to {host!r}, not loopback: anyone who can reach this machine can "
            "read your traffic to the pages, login cookie included (plain HTTP; the pages and the JSON API "
            "still need their tokens). "
            "Use --host 127.0.0.1 unless you mean it.")



def _version() -> str:
    """The installed plur's version (package metadata; the service layer does not import ``plur`` itself)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("plur-memory")  # the distribution's name (PyPI's "plur" is another project)
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without an install
        return "unknown"
