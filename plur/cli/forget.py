"""``plur forget``: delete an engram and every trace of its text (through the service when one runs)."""

from __future__ import annotations

import click

from ..service.session import Session as App
from ..store.engram import Engram
from .ask import confirm
from .output import echo, emit_json, engram_line, json_option


@click.command()
@click.argument("engram_id")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def forget(app: App, engram_id: str, yes: bool, as_json: bool) -> None:
    """Delete an engram (its file, index entries and usage events)."""
    client = app.service("forget")
    if not yes:
        e = Engram.from_dict(client.engram(engram_id)["engram"]) if client else app.memory.get(engram_id)
        echo(engram_line(e), err=True)
        if not confirm("Forget this engram?", "forget needs a confirmation: run it in a terminal or pass -y"):
            echo(f"not forgotten: {engram_id} (answered no)", err=True)
            raise SystemExit(1)  # answered no: nothing changed, and a script can tell
    if client is not None:
        client.forget(engram_id)
    else:
        app.memory.forget(engram_id)
    emit_json({"forgotten": engram_id}) if as_json else echo(f"forgotten: {engram_id}")
