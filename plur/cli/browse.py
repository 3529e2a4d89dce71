"""``plur list`` and ``plur show``: read engrams."""

from __future__ import annotations

import click

from ..service.session import Session as App
from ..store.engram import STATUSES, TYPES, Engram
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
    filters = {"scope": scope, "type": type_, "tag": tag, "status": status, "text": text}
    got = _from_service(app, filters, limit)
    if got is not None:
        total, rows = got
        if as_json:
            emit_json(rows)
            return
        shown = [Engram.from_dict(d) for d in rows]
    else:
        found = app.memory.list(**filters)
        shown = found if limit is None else found[:limit]
        total = len(found)
        if as_json:
            emit_json([e.to_dict() for e in shown])
            return
    for e in shown:
        echo(engram_line(e))
    more = f" (showing {len(shown)})" if len(shown) < total else ""
    echo(f"{total} engram{'s' if total != 1 else ''}{more}", err=True)


def _from_service(app: App, filters: dict[str, str | None], limit: int | None) -> tuple[int, list[dict]] | None:
    """``(matches in all, the first limit as engram dicts)`` from the home's running service, or ``None``.

    A running service holds the store open, so a page of a large store costs one request there instead of
    reading every engram in this process (issue 49: ``plur list --limit 50`` took 7.4 s at 100k engrams).
    Only a ``--limit`` the service pages (1 to :data:`~plur.service.api_hosts.MAX_LIST`) goes there; an older
    service, whose answer has no ``total``, leaves the command in-process.
    """
    from ..service.api_hosts import MAX_LIST

    if limit is None or not 1 <= limit <= MAX_LIST:
        return None
    client = app.service("list")
    if client is None:
        return None
    answer = client.list_engrams(**filters, limit=limit)
    if not isinstance(answer.get("total"), int):
        return None
    return answer["total"], answer["engrams"]


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
