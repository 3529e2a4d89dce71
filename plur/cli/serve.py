"""Long-lived doors: ``plur serve`` (web page + JSON API) and ``plur mcp`` (MCP server)."""

from __future__ import annotations

import click

from ..service.session import Session as App


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=7777, show_default=True, help="0: any free port.")
@click.option("--allow-host", "allow_hosts", multiple=True, help="Another Host name the pages answer to.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@click.option("--daemon", is_flag=True, help="Run in the background (same as `plur service start`).")
@click.pass_obj
def serve(app: App, host: str, port: int, allow_hosts: tuple[str, ...], open_browser: bool, daemon: bool) -> None:
    """Serve the web page and the JSON API for hosts (loopback + <home>/plur.sock) until stopped."""
    from ..service import commands

    if daemon:
        commands.start_and_report(app.home, host, port, allow_hosts)
        return
    from ..service.runner import run
    from ..web.server import create_app

    run(app.home, host, port, web_factory=create_app, allow_hosts=allow_hosts, open_browser=open_browser)


@click.command()
@click.option("--scope", default=None,
              help="Pin the server to this scope (authorisation): tools read it plus global and write only it.")
@click.option("--transport", type=click.Choice(("stdio", "streamable-http")), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="streamable-http only; loopback only.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="streamable-http only.")
@click.pass_obj
def mcp(app: App, scope: str | None, transport: str, host: str, port: int) -> None:
    """Serve memory over MCP (Claude Desktop / Code, Cursor, ...): tools, engram resource, memory prompt."""
    from ..mcp.backend import LocalBackend
    from ..mcp.scope import ScopePin
    from ..mcp.server import serve as run_mcp

    ScopePin(scope)  # a bad --scope fails here, before the client sees a server
    run_mcp(LocalBackend(app.memory), scope=scope, transport=transport, host=host, port=port)
