"""Doors: ``plur serve`` (web page + JSON API), ``plur mcp`` (MCP server); ``plur hook`` is :mod:`plur.cli.hook`."""

from __future__ import annotations

import click

from ..service.session import Session as App
from .scopes import HERE_HELP, NonBlankPath, nonblank, scope_value


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, callback=nonblank, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=7777, show_default=True, help="0: any free port.")
@click.option("--allow-host", "allow_hosts", multiple=True, callback=nonblank, help="Another Host name the pages answer to.")
@click.option("--open", "open_browser", is_flag=True,
              help="Open the page in the default browser, logged in (a one-time login URL, handed over in an "
                   "owner-only file, never on a command line).")
@click.option("--daemon", is_flag=True, help="Run in the background (same as `plur service start`).")
@click.option("--idle-exit-s", "idle_exit_s", type=click.FloatRange(min=0), default=0.0,
              help="Stop after this many seconds without a request (0: never; auto-started services use it).")
@click.pass_obj
def serve(app: App, host: str, port: int, allow_hosts: tuple[str, ...], open_browser: bool, daemon: bool,
          idle_exit_s: float) -> None:
    """Serve the web page and the JSON API for hosts (loopback + <home>/plur.sock) until stopped."""
    from ..service import commands

    if daemon:
        commands.start_and_report(app.home, host, port, allow_hosts, open_browser=open_browser)
        return
    from ..service.runner import run
    from ..web.server import create_app

    service_stdio()

    run(app.home, host, port, web_factory=create_app, allow_hosts=allow_hosts, open_browser=open_browser,
        idle_exit_s=idle_exit_s)


def service_stdio() -> None:
    """The service's stdout and stderr (``<home>/service.log`` when started in the background): screened, so no
    key reaches the log, and never failing on text that is not UTF-8 (a traceback quoting such a file name is
    kept, its other bytes as ``\\xNN``; a strict stream dropped the whole traceback)."""
    import sys

    from ..screen.logs import screen_stdio

    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    screen_stdio()


@click.command()
@click.option("--scope", default=None, callback=scope_value,
              help="Pin the server to this scope (authorisation): tools read it plus global and write only it; "
                   + HERE_HELP + " Without it, tools default to the client's project (its MCP roots, else the "
                   "server's current folder) and may name any scope.")
@click.option("--transport", type=click.Choice(("stdio", "streamable-http")), default="stdio", show_default=True,
              help="streamable-http: every request needs 'Authorization: Bearer <token in HOME/mcp.token>'.")
@click.option("--host", default="127.0.0.1", show_default=True, callback=nonblank, help="streamable-http only; loopback only.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="streamable-http only.")
@click.option("--print-config", is_flag=True,
              help="Print the mcpServers JSON for Claude Desktop, Cursor, a project's .mcp.json... naming this plur "
                   "by its absolute path (and the home, when one was chosen), then exit.")
@click.option("--install", "install_into", type=NonBlankPath(dir_okay=False), default=None,
              help="Write that entry into this mcpServers JSON file (Claude Desktop's, Cursor's, a project's "
                   ".mcp.json), keeping the other servers and settings, then exit.")
@click.pass_obj
def mcp(app: App, scope: str | None, transport: str, host: str, port: int, print_config: bool,
        install_into: str | None) -> None:
    """Serve memory over MCP (Claude Desktop / Code, Cursor, ...): tools, engram resource, memory prompt.

    MCP clients start the server with their own PATH: register it by its absolute path (--print-config).
    """
    if print_config or install_into is not None:
        import json
        from pathlib import Path

        from .hostconfig import install, mcp_config

        if transport != "stdio":
            raise click.UsageError("--print-config and --install write a stdio entry; leave --transport out")
        config = mcp_config(app.home, ["--scope", scope] if scope else [])
        if install_into is None:
            click.echo(json.dumps(config, indent=2))
            return
        install(Path(install_into), config, lambda _: False)
        entry = config["mcpServers"]["plur"]
        click.echo(f"plur: the MCP server 'plur' in {install_into} runs {' '.join([entry['command'], *entry['args']])}")
        return
    from ..mcp.scope import ScopePin
    from ..mcp.server import serve as run_mcp
    from ..mcp.service_backend import ServiceBackend
    from ..service.files import home_of

    ScopePin(scope)  # a bad --scope fails here, before the client sees a server
    _say_which_home(app.home)
    # a thin client of the home's service, started on first need (issue 26); no model in this process
    run_mcp(ServiceBackend(app.home), scope=scope, transport=transport, host=host, port=port,
            home=home_of(app.home), announce=lambda line: click.echo(line, err=True))


def _say_which_home(given: object) -> None:
    """One stderr line: the home plur mcp serves and where that came from. A desktop MCP client starts it with
    a minimal environment (HOME, PATH, USER, SHELL, TERM, LOGNAME), so a PLUR_HOME set in the user's shell is
    dropped unless the client's config passes it (issue 38); one started from that shell (Claude Code, Codex)
    passes it on."""
    import os

    from ..service.files import home_of

    home = home_of(given)  # type: ignore[arg-type]
    if given:
        source = "--home"
    elif os.environ.get("PLUR_HOME"):
        source = "PLUR_HOME"
    else:
        source = ("the default: PLUR_HOME is not set here; a desktop MCP client passes a minimal environment, "
                  "so if your memory lives elsewhere give it in the client's entry: "
                  "plur --home DIR mcp --install FILE, or PLUR_HOME in its env")
    state = "" if os.path.lexists(home) else "; it does not exist yet: reads find nothing, the first learn creates it"
    click.echo(f"plur mcp: memory at {home} ({source}){state}", err=True)
