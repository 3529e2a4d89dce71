"""The ``--scope`` value of every command: ``here`` is the project of the current folder (:mod:`plur.project`).

A click callback, so each command gets a concrete scope (``project:<name>``, NFC) before it runs and
checks it as it always did; ``plur recall --scope here`` and ``plur learn --scope here`` name the
same project as the Claude Code hook and the DSH plugin in that folder.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import click

#: What every ``--scope`` help text adds.
HERE_HELP = "'here': the project of the current folder (see `plur project which`)."


def home_of_ctx(ctx: click.Context) -> Any:
    from ..service.files import home_of

    app = ctx.find_root().obj
    return home_of(getattr(app, "home", None))


def scope_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``here`` -> the current folder's project scope; any other value in NFC (checked by the command)."""
    if value is None:
        return None
    from ..project import HERE

    if value == HERE:
        from ..project import scope_here

        return scope_here(home_of_ctx(ctx))
    return unicodedata.normalize("NFC", value)


__all__ = ["HERE_HELP", "home_of_ctx", "scope_value"]
