"""``plur hook claude-code``: Claude Code's (and Codex's) prompt hook, its ``--help`` and its ``--print-config``.

A hook run (JSON on stdin) is dispatched by :mod:`plur.__main__` straight to :mod:`plur.hooks.claude_code`
without importing click; this click command serves ``--help``, ``--print-config`` and ``python -m plur.cli``,
and hands a hook run to the same ``main``.
"""

from __future__ import annotations

import json

import click

from ..service.session import Session as App
from .scopes import NonBlankPath, nonblank

#: The events ``--print-config`` registers; ``--with-stop`` adds ``Stop`` (capture = "all" stores answers).
EVENTS = ("UserPromptSubmit", "SessionStart")


def hook_scope(value: str | None) -> str | None:
    """A scope, or ``here`` (the project of the hook's cwd, resolved per event by the hook): checked now, so a
    config never carries a scope the hook would refuse at every prompt."""
    if value is None or value == "here":
        return value
    from ..store.scope import check_scope

    return check_scope(value)


@click.group()
def hook() -> None:
    """Answer a host's prompt hook (its JSON on stdin); see docs/hosts/claude-code.md."""


@hook.command("claude-code")
@click.option("--home", "hook_home", default=None, help="The plur home (as `plur --home`).")
@click.option("--scope", default=None, callback=lambda ctx, param, value: hook_scope(nonblank(ctx, param, value)),
              help="Recall in this scope plus global ('here': the project of the hook's cwd, the default).")
@click.option("--max-engrams", type=click.IntRange(0, 100000), default=None, help="Notes per prompt at most (4).")
@click.option("--budget-tokens", type=click.IntRange(0, 100000), default=None,
              help="Tokens per prompt at most (400).")
@click.option("--timeout-s", type=click.FloatRange(0, 100000), default=None,
              help="Seconds to wait for the service's answer (10).")
@click.option("--print-config", is_flag=True,
              help="Print the hooks JSON for ~/.claude/settings.json (or ~/.codex/hooks.json) naming this plur by "
                   "its absolute path (and the home, when one was chosen), then exit.")
@click.option("--install", "install_into", type=NonBlankPath(dir_okay=False), default=None,
              help="Write those hooks into this settings file (~/.claude/settings.json, ~/.codex/hooks.json), "
                   "keeping every other setting and hook (an earlier plur hook is replaced), then exit.")
@click.option("--with-stop", is_flag=True,
              help="With --print-config or --install: register Stop too (capture = \"all\").")
@click.pass_obj
def claude_code(app: App, hook_home: str | None, scope: str | None, max_engrams: int | None, budget_tokens: int | None,
                timeout_s: float | None, print_config: bool, install_into: str | None, with_stop: bool) -> None:
    """Answer Claude Code's UserPromptSubmit, SessionStart and Stop hooks: the event's JSON on stdin, the
    memory to add on stdout. Codex runs it unchanged.

    Claude Code runs the hook with its own PATH: register it with --print-config, whose command names this
    plur by its absolute path, not a bare `plur`.
    """
    from pathlib import Path

    from ..errors import ConfigError
    from ..values import check_home

    if hook_home is not None:
        check_home(hook_home, "--home", error=ConfigError)
    home = Path(hook_home) if hook_home is not None else app.home
    options: list[str] = []
    for name, value in (("--scope", scope), ("--max-engrams", max_engrams), ("--budget-tokens", budget_tokens),
                        ("--timeout-s", timeout_s)):
        if value is not None:
            options += [name, str(value)]
    if print_config or install_into is not None:
        from .hostconfig import hook_config, install, is_plur_hook

        config = hook_config(home, options, (*EVENTS, "Stop") if with_stop else EVENTS)
        if install_into is None:
            click.echo(json.dumps(config, indent=2))
            return
        events = install(Path(install_into), config, is_plur_hook)
        command = config["hooks"][events[0]][0]["hooks"][0]["command"]
        click.echo(f"plur: {', '.join(events)} hooks in {install_into} run {command}")
        return
    if with_stop:
        raise click.UsageError("--with-stop goes with --print-config or --install")
    import sys

    from ..hooks.claude_code import main as hook_main

    sys.exit(hook_main([*(["--home", str(home)] if home else []), *options]))
