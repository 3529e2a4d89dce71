"""The ``plur`` click group (:data:`cli`): the global options and the lazily loaded commands of :data:`plur.cli.COMMANDS`."""

from __future__ import annotations

from pathlib import Path

import click

from .. import __version__
from ..errors import ConfigError
from ..service.session import Session
from ..values import check_home
from . import COMMANDS
from .group import PlurGroup


@click.group(cls=PlurGroup, lazy_subcommands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
# --home stays a str here: click's Path("") would already be ".", the current directory (refused below).
# A file: the store's own one-line error, exit 4.
@click.option("--home", type=click.Path(), default=None, help="plur home folder (default: $PLUR_HOME, else ~/.plur).")
@click.option("-v", "--verbose", is_flag=True,
              help="Say on stderr whether a command used the running service or worked in-process.")
@click.version_option(__version__, prog_name="plur")
@click.pass_context
def cli(ctx: click.Context, home: str | None, verbose: bool) -> None:
    """plur: long-term memory for LLM agents, kept as YAML files on this machine."""
    check_home(home, "--home", error=ConfigError)  # exit 2, as a usage error (PlurGroup)
    app = Session(Path(home) if home is not None else None, verbose)
    ctx.obj = app
    ctx.call_on_close(app.close)


__all__ = ["cli"]
