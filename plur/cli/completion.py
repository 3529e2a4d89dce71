"""``plur completion SHELL``: the shell's completion script for ``plur`` (click's shell completion).

Put ``eval "$(plur completion bash)"`` in ``~/.bashrc`` (zsh: ``~/.zshrc``; fish:
``plur completion fish > ~/.config/fish/completions/plur.fish``). The script asks ``plur`` itself
(``_PLUR_COMPLETE=<shell>_complete``) for the commands, options and choices at each tab.
"""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the completion script for SHELL (bash, zsh or fish); e.g. eval "$(plur completion bash)"."""
    from click.shell_completion import get_completion_class

    root = ctx.find_root()
    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click ships all three
        raise click.BadParameter(f"no completion for {shell!r}", param_hint="SHELL")
    click.echo(cls(root.command, {}, "plur", "_PLUR_COMPLETE").source())
