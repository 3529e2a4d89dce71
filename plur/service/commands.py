"""``plur service start|stop|status`` (click), and the start report ``plur serve --daemon`` shares."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..errors import ServiceError
from . import files
from .files import home_of


def nonblank(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A blank ``--host`` or ``--allow-host`` is refused (``''`` would bind every interface), as every plur
    command refuses empty input (``plur.cli.scopes.nonblank``, above this layer)."""
    from ..errors import ValidationError

    for v in value if isinstance(value, tuple) else (value,):
        if isinstance(v, str) and not v.strip():
            raise ValidationError(f"{param.opts[-1]} {v!r} is empty: give a value (see `plur service start --help`)")
    return value


def _home(ctx: click.Context) -> Path:
    return home_of(getattr(ctx.obj, "home", None))


def _describe(st: dict[str, Any]) -> list[str]:
    lines = [f"running      pid {st['pid']}  home {st['home']}"]
    if st.get("socket"):
        lines.append(f"socket       {st['socket']}")
    if st.get("url"):
        lines.append(f"url          {st['url']}/  (log a browser in: `plur service url`)")
    info = st.get("status")
    if info:
        model = (info.get("model") or {}).get("name") or "none (BM25 only)"
        served = sum((info.get("served") or {}).values())
        lines.append(f"engrams      {info.get('engrams')}  model {model}  requests {served}")
    elif st.get("error"):
        lines.append(f"state        {st['error']}")
    lines.append(f"log          {st['log']}")
    return lines


#: The port ``plur service start`` and ``plur serve`` listen on unless told otherwise.
DEFAULT_PORT = 7777


def start_and_report(home: Path | None, host: str, port: int | None, allow_hosts: Sequence[str] = (),
                     open_browser: bool = False, as_json: bool = False, auto: bool = False,
                     stall_s: float | None = None) -> None:
    """Start the service in the background (or find it running) and print where it is.

    ``port`` None: :data:`DEFAULT_PORT`, or any free port when another program holds that one (said on stderr).
    ``auto``: started on a tool's first need: it exits after ``service_idle_exit_s`` without a request.
    ``stall_s``: give up once the starting service shows no progress for this long (None: the default,
    :data:`plur.service.daemon.START_STALL_S`); one that keeps progressing is waited for.
    """
    from ..net.addresses import port_in_use
    from .daemon import START_STALL_S, start

    taken = port is None and port_in_use(host, DEFAULT_PORT)
    st = start(home_of(home), host, (0 if taken else DEFAULT_PORT) if port is None else port, allow_hosts=allow_hosts,
               auto=auto, stall_s=START_STALL_S if stall_s is None else stall_s)
    click.echo("already running" if st.get("already") else "started", err=True)
    if taken and not st.get("already"):
        click.echo(f"plur: port {DEFAULT_PORT} is in use by another program; listening on a free port instead: "
                   f"{st.get('url')}", err=True)
    if as_json:
        click.echo(json.dumps(st, indent=2, default=str))
        return
    for line in _describe(st):
        click.echo(line)
    if open_browser:
        _open(home_of(home))


def page_login_url(home: Path, wait_s: float | None = None) -> str:
    """The URL that logs the owner's browser in to the running service's pages.

    A service still starting (an auto-started one loading its model: it holds the lock but has not written
    ``service.json``) is waited for, at most ``wait_s`` (default: as long as ``plur service start`` waits).

    Raises:
        ServiceError: no service runs for ``home``, or it is still starting after ``wait_s`` (said so).
    """
    import time

    from .daemon import START_TIMEOUT_S

    deadline = time.monotonic() + (START_TIMEOUT_S if wait_s is None else wait_s)
    while True:
        alive = files.service_alive(home)
        info = files.read_service_file(home) if alive else None
        if info is not None and isinstance(info.get("login"), str) and info.get("url"):
            return files.login_url(info)
        if info is not None or not alive:
            raise ServiceError(f"no plur service running for {home}; start one with `plur service start` "
                               "(or `plur serve --open`)")
        if time.monotonic() >= deadline:
            raise ServiceError(f"the plur service for {home} is still starting (indexes and model loading); "
                               f"run this again once `plur service status` shows its url (log: {home / files.LOG_FILE})")
        time.sleep(0.05)


def _open(home: Path) -> None:
    """Open a fresh login URL through an owner-only redirect file, never on a command line (plur.net.browser)."""
    from ..net.browser import no_browser_line, open_login

    opened, path = open_login(home, page_login_url(home))
    if not opened:
        click.echo(no_browser_line(path), err=True)


@click.group()
def service() -> None:
    """Run the local service in the background: one process keeps the model and indexes loaded."""


@service.command()
@click.option("--host", default="127.0.0.1", show_default=True, callback=nonblank, help="Address to listen on (a non-loopback one prints a warning).")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port to listen on; 0: any free port. Default: 7777, or a free port when 7777 is taken (said).")
@click.option("--allow-host", "allow_hosts", multiple=True, callback=nonblank, help="Another Host name the pages answer to.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.option("--auto", is_flag=True, help="Started on a tool's first need (the DSH plugin does): exit after "
              "service_idle_exit_s without a request, as the service plur's commands start themselves.")
@click.option("--stall-s", type=click.FloatRange(min=0.5), default=None,
              help="Give up when the starting service shows no progress (no CPU used, no new step) for this many "
                   "seconds. Default: 120. A start that keeps progressing is waited for, however long.")
@click.pass_context
def start(ctx: click.Context, host: str, port: int | None, allow_hosts: tuple[str, ...], as_json: bool,
          auto: bool, stall_s: float | None) -> None:
    """Start it (no-op when running); returns once its API answers, waiting as long as a big store's start
    progresses (`plur service status` says where it is). Log: <home>/service.log."""
    start_and_report(_home(ctx), host, port, allow_hosts, as_json=as_json, auto=auto, stall_s=stall_s)


@service.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.pass_context
def stop(ctx: click.Context, as_json: bool) -> None:
    """Stop it (SIGTERM; it saves its indexes and removes service.json and the socket)."""
    from .daemon import stop as stop_service

    out = stop_service(_home(ctx))
    if as_json:
        click.echo(json.dumps(out, indent=2, default=str))
        return
    stale = f" (removed stale {', '.join(out['stale_removed'])})" if out["stale_removed"] else ""
    click.echo(f"stopped pid {out['stopped']}" if out["stopped"] else f"not running{stale}")


@service.command()
@click.option("--open", "open_browser", is_flag=True,
              help="Also open a login URL in the default browser (through an owner-only file, not its command line).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.pass_context
def url(ctx: click.Context, open_browser: bool, as_json: bool) -> None:
    """Print a URL that logs your browser in to the pages (owner only; it works once, for 5 minutes)."""
    home = _home(ctx)
    click.echo(json.dumps({"url": page_login_url(home)}) if as_json else page_login_url(home))
    if open_browser:
        _open(home)


@service.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Say whether it runs (exit 0) or not (exit 7), with pid, addresses, engrams, model."""
    from .daemon import status as service_status

    st = service_status(_home(ctx))
    if as_json:
        click.echo(json.dumps(st, indent=2, default=str))
    elif st["running"]:
        for line in _describe(st):
            click.echo(line)
    if not st["running"]:
        stale = f"; removed stale {', '.join(st['stale_removed'])}" if st["stale_removed"] else ""
        raise ServiceError(f"no plur service running for {st['home']}{stale}; start one with `plur service start`")
