"""``plur project``: which project a folder is (``which``), the home's projects (``list``), and folders bound
to a project (``bind``, ``unbind``). The rules live in :mod:`plur.project`; this is their command line."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import click

from ..service.session import Session as App
from .output import echo, emit_json, json_option
from .scopes import NonBlankPath, home_of_ctx


@click.group("project")
def project() -> None:
    """The project of a folder: its git root (or a bound folder), one scope at every door."""


@project.command("which")
@click.argument("folder", required=False, type=NonBlankPath(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print folder, root, scope, how and registered as JSON.")
@click.pass_context
def which(ctx: click.Context, folder: str | None, as_json: bool) -> None:
    """Print the scope of FOLDER (default: the current folder), as every door resolves it.

    A read: nothing is registered. A root not in the home's projects.json yet gets the scope printed when a
    door that writes (learn, capture, a hook) first resolves it; another root of that name registered first
    would take the plain name.
    """
    from ..project import resolve

    got = resolve(folder if folder is not None else os.getcwd(), home_of_ctx(ctx), register_new=False)
    if folder is not None and not os.path.isdir(folder) and not as_json:  # a typo still gets a plausible scope
        echo(f"note: {got.folder} is no folder here; {got.scope} is the scope it would have", err=True)
    if as_json:
        emit_json({"folder": got.folder, "root": got.root, "scope": got.scope, "how": got.how,
                   "registered": got.registered})
        return
    echo(got.scope)


@project.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the projects as a JSON list.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """The home's projects: root folder -> scope, the folders bound to each, and how many engrams each holds.

    Project scopes holding engrams that no folder maps to (notes filed under a folder's last name by an
    older plur, or by hand) are listed too: bind a folder to one to reach them from there.
    """
    from ..project import load

    app: App = ctx.obj
    registry = load(home_of_ctx(ctx))
    counts: Counter[str] = Counter(e.scope for e in app.memory.list() if e.scope.startswith("project:"))
    rows: dict[str, dict[str, Any]] = {}
    for root, scope in sorted(registry.roots.items(), key=lambda kv: (kv[1], kv[0])):
        rows.setdefault(scope, {"scope": scope, "roots": [], "bound": [], "engrams": counts.get(scope, 0)})["roots"].append(root)
    for folder, scope in sorted(registry.bound.items()):
        rows.setdefault(scope, {"scope": scope, "roots": [], "bound": [], "engrams": counts.get(scope, 0)})["bound"].append(folder)
    for scope in sorted(set(counts) - set(rows)):
        rows[scope] = {"scope": scope, "roots": [], "bound": [], "engrams": counts[scope]}
    out = sorted(rows.values(), key=lambda r: r["scope"])
    if as_json:
        emit_json(out)
        return
    for row in out:
        n = row["engrams"]
        where = ", ".join(row["roots"]) or "(no folder)"
        echo(f"{row['scope']:<24} {n:>6} engram{'s' if n != 1 else ' '}  {where}")
        for folder in row["bound"]:
            echo(f"{'':<24} {'':>14}  bound: {folder}")
    if not out:
        home = home_of_ctx(ctx)
        when = "" if home.is_dir() else f" once the home {home} exists (`plur init`, or a first `plur learn`)"
        echo("no projects yet: a folder registers the first time a door (hook, MCP, DSH, `--scope here`) "
             f"resolves it{when}", err=True)


@project.command("bind")
@click.argument("folder", type=NonBlankPath(file_okay=False))
@click.option("--to", "scope", required=True, help="The project scope, e.g. project:web (see `plur project list`).")
@json_option
@click.pass_context
def bind(ctx: click.Context, folder: str, scope: str, as_json: bool) -> None:
    """Make FOLDER (and every folder under it) part of the project SCOPE, whatever repository it is in."""
    from ..project import bind as do_bind

    got = do_bind(home_of_ctx(ctx), folder, scope)
    emit_json({"bound": got.folder, "scope": got.scope}) if as_json else echo(f"bound {got.folder} -> {got.scope}")


@project.command("unbind")
@click.argument("folder", type=NonBlankPath(file_okay=False))
@json_option
@click.pass_context
def unbind(ctx: click.Context, folder: str, as_json: bool) -> None:
    """Undo `plur project bind FOLDER`: the folder is its own repository's project again."""
    from ..project import canonical, unbind as do_unbind

    was = do_unbind(home_of_ctx(ctx), folder)
    if as_json:
        emit_json({"unbound": canonical(folder), "was": was})
    else:
        echo(f"unbound {canonical(folder)} (was {was})")
