"""``plur team``: members of a shared PostgreSQL store, their tokens and the scopes they may read and write.

Every member reads and writes ``global``; an ``agent:`` or ``project:`` scope only with a grant
(:mod:`plur.store.pg.team`). A member's token is printed once, by ``add`` (and ``rotate``); the database keeps
only its sha256. The service on that store accepts the token on its HTTP API (:mod:`plur.service.access`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..service.session import Session as App
from .output import echo, emit_json, json_option
from .scopes import nonblank


def _scopes(values: tuple[str, ...]) -> list[str]:
    """``--read a,b --read c`` -> ``['a', 'b', 'c']`` (order kept, duplicates dropped)."""
    out = [s.strip() for v in values for s in v.split(",") if s.strip()]
    return list(dict.fromkeys(out))


@contextmanager
def _database(app: App) -> Iterator[Any]:
    from ..config import load_settings
    from ..errors import ValidationError
    from ..store.pg.connect import connect

    uri = load_settings(app.home).store
    if not uri:
        raise ValidationError("plur team needs a PostgreSQL store: set store = \"postgresql://...\" in config.toml "
                              "or PLUR_STORE (see docs/guide/postgres.md, 'Team')")
    conn = connect(uri)
    try:
        yield conn
    finally:
        conn.close()


def _grant_all(conn: Any, name: str, read: list[str], write: list[str]) -> None:
    from ..store.pg import team

    for scope in read:
        if scope not in write:
            team.grant(conn, name, scope, write=False)
    for scope in write:
        team.grant(conn, name, scope, write=True)


def _describe(member: Any) -> str:
    read = sorted(member.read - member.write)
    write = sorted(member.write)
    return (f"{member.name}: reads global{''.join(', ' + s for s in read + write)}; "
            f"writes global{''.join(', ' + s for s in write)}")


_READ = click.option("--read", "read", multiple=True, metavar="SCOPES",
                     help="Scopes the member may read (comma-separated, repeatable), e.g. project:site,agent:ana-coder.")
_WRITE = click.option("--write", "write", multiple=True, metavar="SCOPES",
                      help="Scopes the member may read and write (comma-separated, repeatable).")


@click.group()
def team() -> None:
    """Team members of this home's PostgreSQL store: tokens and scope grants (global is everyone's)."""


@team.command("add")
@click.argument("name", callback=nonblank)
@_READ
@_WRITE
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.pass_obj
def add(app: App, name: str, read: tuple[str, ...], write: tuple[str, ...], as_json: bool) -> None:
    """Add a member and print its token (shown once: only a hash is kept)."""
    from ..store.pg import team as t
    from ..store.engram import _check_scope

    r, w = _scopes(read), _scopes(write)
    for scope in r + w:  # a bad scope fails before the member exists
        _check_scope(scope)
    with _database(app) as conn:
        with conn.transaction():
            token = t.add_member(conn, name)
            _grant_all(conn, name, r, w)
        member = t.member_for_token(conn, token)
    if as_json:
        emit_json({"name": name, "token": token, "read": sorted(member.read), "write": sorted(member.write)})
        return
    echo(f"added {_describe(member)}")
    echo(f"token (shown once; give it to {name}, the database keeps only its sha256): {token}")


@team.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.pass_obj
def list_(app: App, as_json: bool) -> None:
    """Every member and its grants (never a token)."""
    from ..store.pg import team as t

    with _database(app) as conn:
        members = t.list_members(conn)
    if as_json:
        emit_json([{"name": m.name, "read": sorted(m.read), "write": sorted(m.write)} for m in members])
        return
    if not members:
        echo("no members; add one with `plur team add NAME --read SCOPES --write SCOPES`")
    for m in members:
        echo(_describe(m))


@team.command("grant")
@click.argument("name", callback=nonblank)
@_READ
@_WRITE
@json_option
@click.pass_obj
def grant(app: App, name: str, read: tuple[str, ...], write: tuple[str, ...], as_json: bool) -> None:
    """Let NAME read (--read) or read and write (--write) more scopes; a --read of a writable scope makes it
    read-only. Takes effect on the member's next request."""
    from ..errors import ValidationError
    from ..store.pg import team as t

    r, w = _scopes(read), _scopes(write)
    if not r and not w:
        raise ValidationError("plur team grant needs --read SCOPES or --write SCOPES, e.g. --read project:site")
    with _database(app) as conn:
        with conn.transaction():
            _grant_all(conn, name, r, w)
        member = next(m for m in t.list_members(conn) if m.name == name)
    emit_json({"name": member.name, "read": sorted(member.read), "write": sorted(member.write)}) if as_json else echo(f"granted: {_describe(member)}")


@team.command("revoke")
@click.argument("name", callback=nonblank)
@click.argument("scopes", nargs=-1, required=True, callback=nonblank)
@json_option
@click.pass_obj
def revoke(app: App, name: str, scopes: tuple[str, ...], as_json: bool) -> None:
    """Take SCOPES (read and write) away from NAME; takes effect on the member's next request."""
    from ..errors import NotFoundError
    from ..store.pg import team as t

    with _database(app) as conn:
        members = {m.name: m for m in t.list_members(conn)}
        if name not in members:
            raise NotFoundError(f"no member {name!r}; `plur team list` shows them")
        gone = [s for s in _scopes(scopes) if t.revoke(conn, name, s)]
        member = next(m for m in t.list_members(conn) if m.name == name)
    missing = [s for s in _scopes(scopes) if s not in gone]
    if as_json:
        emit_json({"revoked": gone, "not_granted": missing, "member": {"name": member.name, "read": sorted(member.read), "write": sorted(member.write)}})
        return
    note = f" ({', '.join(missing)} not granted before)" if missing else ""
    echo(f"revoked {', '.join(gone) or 'nothing'}{note}: {_describe(member)}")


@team.command("remove")
@click.argument("name", callback=nonblank)
@json_option
@click.pass_obj
def remove(app: App, name: str, as_json: bool) -> None:
    """Remove NAME and its grants; its token stops working at once."""
    from ..errors import NotFoundError
    from ..store.pg import team as t

    with _database(app) as conn:
        if not t.remove_member(conn, name):
            raise NotFoundError(f"no member {name!r}; `plur team list` shows them")
    emit_json({"removed": name}) if as_json else echo(f"removed {name}; its token no longer opens any door")


@team.command("rotate")
@click.argument("name", callback=nonblank)
@json_option
@click.pass_obj
def rotate(app: App, name: str, as_json: bool) -> None:
    """Give NAME a new token (printed once); the old one stops working at once."""
    from ..store.pg import team as t

    with _database(app) as conn:
        token = t.rotate_token(conn, name)
    if as_json:
        emit_json({"name": name, "token": token})
    else:
        echo(f"new token for {name} (shown once; the old one no longer works): {token}")
