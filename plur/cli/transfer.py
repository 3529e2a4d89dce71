"""``plur export``: engrams out to files (``plur import`` and ``plur ingest`` live in :mod:`plur.cli.imports`)."""

from __future__ import annotations

from pathlib import Path

import click

from ..service.session import Session as App
from ..store.engram import STATUSES
from .output import echo, emit_json, json_option
from .scopes import HERE_HELP, NonBlankPath, scope_value


@click.command()
@click.argument("target", type=NonBlankPath(allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(("jsonl", "plur-yaml", "claude-dir")), default=None,
              help="Default: from the path (no suffix or folder = claude-dir, .jsonl, .yaml); '-' is jsonl.")
@click.option("--scope", default=None, callback=scope_value, help="Only this exact scope; " + HERE_HELP)
@click.option("--status", type=click.Choice(STATUSES), default=None,
              help="Export only engrams of this status (default: every status).")
@click.option("--force", is_flag=True, help="Replace a previous plur export at TARGET (never a file plur did not write).")
@click.option("--parents", is_flag=True, help="Create TARGET's folder (and those above it) when missing.")
@json_option
@click.pass_obj
def export(app: App, target: str, fmt: str | None, scope: str | None, status: str | None, force: bool,
           parents: bool, as_json: bool) -> None:
    """Export engrams (oldest first) to TARGET: JSONL, PLUR engrams.yaml or a Claude memory folder.

    TARGET '-' writes JSONL (or --format plur-yaml) on stdout. A TARGET whose folder does not exist is an
    error unless --parents is given.
    """
    from ..formats.transfer import export_text, write_engrams

    if target == "-":
        if as_json:
            raise click.UsageError("--json prints its report on stdout, where '-' writes the export; leave one out")
        text = export_text(app.memory.list(scope=scope, status=status)[::-1], fmt or "jsonl")
        click.echo(text, nl=False)
        return
    engrams = app.memory.list(scope=scope, status=status)[::-1]
    n = write_engrams(engrams, Path(target), fmt, force=force, home=app.memory.home, parents=parents)
    if as_json:
        emit_json({"exported": n, "target": target})
    else:
        echo(f"exported {n} engram{'s' if n != 1 else ''} to {target}")
