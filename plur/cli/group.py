"""The root group of the ``plur`` command: subcommands loaded lazily, errors turned into one line.

:class:`LazyGroup` is click's documented lazy-loading pattern ("Lazily Loading Subcommands" in the
click docs): the group knows each subcommand as an import path (``"plur.cli.browse.list_"``) and
imports its module only when that command runs (or ``--help`` lists it), so a cold ``plur list``
imports what listing needs and no other command's code.

:class:`PlurGroup` is the one place where any :class:`~plur.errors.PlurError` becomes one line on
stderr (``plur: error: <message>``) and the exit code of its class (``PlurError.exit_code``).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from ..web.display import safe_text
from ..errors import PlurError
from .output import one_line, warn_quarantined


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use.

    Args:
        lazy_subcommands: command name -> ``"module.path.attribute"`` of a :class:`click.Command`.
    """

    def __init__(self, *args: Any, lazy_subcommands: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = dict(lazy_subcommands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_subcommands:
            return self._lazy_load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def _lazy_load(self, cmd_name: str) -> click.Command:
        module_name, attribute = self.lazy_subcommands[cmd_name].rsplit(".", 1)
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):  # pragma: no cover - a wrong table entry
            raise TypeError(f"lazy subcommand {cmd_name!r}: {self.lazy_subcommands[cmd_name]} is not a click command")
        return command


def _bad_utf8(args: list[str]) -> str | None:
    for a in args:
        try:
            a.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = a.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return (f"argument '{safe_text(shown)}' is not valid UTF-8 (byte at position {exc.start}); "
                    "check the terminal's or script's encoding (plur reads UTF-8)")
    return None


def usage_line(exc: click.ClickException) -> str:
    """A click usage error as one line naming the command's help, e.g. ``plur: error: Missing argument
    'STATEMENT' (usage: plur learn [OPTIONS] STATEMENT; more: plur learn --help)``."""
    message = safe_text(one_line(exc.format_message())).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return f"plur: error: {message}"
    usage = one_line(" ".join(ctx.command.collect_usage_pieces(ctx)))
    path = " ".join(["plur", *ctx.command_path.split()[1:]])  # whatever name the program was started by
    return f"plur: error: {message} (usage: {path} {usage}; more: {path} --help)"


class PlurGroup(LazyGroup):
    """Turns PlurError into one stderr line and ``exit_code`` for every subcommand, and click's own usage
    errors (3 lines: usage, hint, error) into one line with exit code 2 (:func:`usage_line`); a group given
    no command (``plur``, ``plur service``) prints its whole help as click does (stderr, exit 2)."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        import sys

        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # a bare group (`plur`, `plur service`): its help,
            exc.show()                                       # as click prints it (stderr, exit 2), not one line
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(usage_line(exc), err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:  # Ctrl-C or end of input at a prompt
            click.echo("plur: error: aborted (no answer); nothing was changed", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        bad = _bad_utf8(list(args))
        if bad is not None:
            click.echo(f"plur: error: {bad}", err=True)
            ctx.exit(2)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PlurError as exc:
            from ..screen.logs import redact_line

            # a hook's or a service's stderr may be kept: a key the message quotes never is
            click.echo(f"plur: error: {safe_text(one_line(redact_line(str(exc))))}", err=True)
            ctx.exit(exc.exit_code)
        except OSError as exc:  # last resort: a failing disk or folder is one line, not a traceback
            if isinstance(exc, BrokenPipeError):
                raise
            click.echo(f"plur: error: {safe_text(one_line(str(exc)))}; check that the home folder exists, "
                       "is writable and has free space (`plur doctor`)", err=True)
            ctx.exit(4)
        except UnicodeError as exc:  # invalid UTF-8 on stdin or in a file we were told to read
            click.echo(f"plur: error: input is not valid UTF-8 text ({safe_text(str(exc))}); "
                       "re-save it as UTF-8", err=True)
            ctx.exit(2)
        finally:
            warn_quarantined(ctx)
