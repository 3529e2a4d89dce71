"""``plur list`` and ``plur show``: read engrams."""

from __future__ import annotations

import click

from ..service.session import Session as App
from ..store.engram import STATUSES, TYPES
from .output import echo, emit_json, engram_line
from .scopes import HERE_HELP, nonblank, scope_value


@click.command("list")
@click.option("--scope", default=None, callback=scope_value, help="Only this exact scope; " + HERE_HELP)
@click.option("--type", "type_", type=click.Choice(TYPES), default=None, help="Only engrams of this type.")
@click.option("--tag", default=None, callback=nonblank, help="Only engrams carrying this tag.")
@click.option("--status", type=click.Choice(STATUSES), default=None, help="Only engrams of this status (default: every status).")
@click.option("--text", default=None, callback=nonblank, help="Case-insensitive substring of the statement.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Show at most this many (newest first).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of engrams.")
@click.pass_obj
def list_(app: App, scope: str | None, type_: str | None, tag: str | None, status: str | None,
          text: str | None, limit: int | None, as_json: bool) -> None:
    """List engrams, newest first ('*' pinned, 'r' retired, 'x' expired or not yet valid)."""
    found = app.memory.list(scope=scope, type=type_, tag=tag, status=status, text=text)
    shown = found if limit is None else found[:limit]
    if as_json:
        emit_json([e.to_dict() for e in shown])
        return
    for e in shown:
        echo(engram_line(e))
    more = f" (showing {len(shown)})" if len(shown) < len(found) else ""
    echo(f"{len(found)} engram{'s' if len(found) != 1 else ''}{more}", err=True)


@click.command()
@click.argument("engram_id")
@click.option("--json", "as_json", is_flag=True, help="Print the engram as JSON instead of YAML.")
@click.pass_obj
def show(app: App, engram_id: str, as_json: bool) -> None:
    """Print an engram's YAML."""
    e = app.memory.get(engram_id)
    if as_json:
        emit_json(e.to_dict())
    else:
        echo(e.to_yaml(), nl=False)
