"""The ``--scope`` value of every command (``here`` is the project of the current folder, :mod:`plur.project`),
and :func:`nonblank`, the check that refuses empty input to any command alike.

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
    """``here`` -> the current folder's project scope; any other value in NFC (checked by the command); a blank
    one is refused here, as every scope the store checks (a blank ``--scope`` was read as "no scope")."""
    if value is None:
        return None
    if not value.strip():
        from ..store.engram import _check_scope

        _check_scope(value)  # raises: invalid scope '' ...
    from ..project import HERE

    if value == HERE:
        from ..project import scope_here

        return scope_here(home_of_ctx(ctx))
    return unicodedata.normalize("NFC", value)


def nonblank(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Refuse an argument or option given as '' or whitespace (each value of a repeated one): every command
    refuses empty input alike, one line and exit 2, before anything runs (a blank message recalled with no
    words). A path is checked by :class:`NonBlankPath` instead, before click turns '' into the current folder."""
    for v in value if isinstance(value, tuple) else (value,):
        if isinstance(v, str) and not v.strip():
            raise _blank(ctx, param, v)
    return value


class NonBlankPath(click.Path):
    """``click.Path`` that refuses '' and whitespace (:func:`nonblank`): click's ``Path("")`` is ``.``, so a blank
    folder was the current one (``plur export ""`` wrote there, ``plur link claude-code ""`` linked it)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip() and param is not None and ctx is not None:
            raise _blank(ctx, param, value)
        return super().convert(value, param, ctx)


def _blank(ctx: click.Context, param: click.Parameter, value: str) -> Exception:
    from ..errors import ValidationError

    name = param.opts[-1] if isinstance(param, click.Option) else (param.human_readable_name or "")
    path = " ".join(["plur", *ctx.command_path.split()[1:]])
    return ValidationError(f"{name} {value!r} is empty: give a value (see `{path} --help`)")


__all__ = ["HERE_HELP", "NonBlankPath", "home_of_ctx", "nonblank", "scope_value"]
