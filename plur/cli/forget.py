"""``plur forget``: delete an engram and every trace of its text (through the service when one runs)."""

from __future__ import annotations

import click

from ..service.session import Session as App
from ..store.engram import Engram
from .ask import confirm
from .output import echo, emit_json, engram_line, json_option
from .scopes import HERE_HELP, nonblank, scope_value


@click.command()
@click.argument("engram_id", required=False)
@click.option("--session", "session", metavar="ID", callback=nonblank,
              help="Forget a whole conversation instead: every engram captured or ingested from session ID "
                   "(list them with: plur sessions).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def forget(app: App, engram_id: str | None, session: str | None, yes: bool, as_json: bool) -> None:
    """Delete an engram (its file, index entries and usage events), or a conversation with --session."""
    if (engram_id is None) == (session is None):
        raise click.UsageError("give an ENGRAM_ID, or --session ID for a whole conversation (not both)")
    if session is not None:
        return _forget_session(app, session, yes, as_json)
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



def _forget_session(app: App, session: str, yes: bool, as_json: bool) -> None:
    from ..errors import NotFoundError

    client = app.service("forget")
    if client is not None:
        ids = client.forget_session(session, dry_run=True)["engrams"]
    else:
        from ..memory.capture import session_engrams

        ids = [e.id for e in session_engrams(app.memory, session)]
        if not ids:
            raise NotFoundError(f"no conversation {session!r} in memory; list them with: plur sessions")
    if not yes and not confirm(f"Forget conversation {session} ({len(ids)} engram{'s' if len(ids) != 1 else ''})?",
                               "forget needs a confirmation: run it in a terminal or pass -y"):
        echo(f"not forgotten: session {session} (answered no)", err=True)
        raise SystemExit(1)
    # one write for the whole conversation, whatever its size (every turn of it, found again at this moment)
    ids = client.forget_session(session)["forgotten"] if client is not None else \
        [e.id for e in app.memory.forget_session(session)]
    if as_json:
        emit_json({"forgotten": ids, "session": session})
    else:
        echo(f"forgotten: session {session} ({len(ids)} engram{'s' if len(ids) != 1 else ''})")


@click.command()
@click.option("--scope", default=None, callback=scope_value,
              help="Only conversations with turns in this scope; " + HERE_HELP)
@json_option
@click.pass_obj
def sessions(app: App, scope: str | None, as_json: bool) -> None:
    """Conversations memory holds turns of (captured or ingested), newest first; remove one with
    plur forget --session ID."""
    rows = app.memory.sessions(scope=scope)
    if as_json:
        emit_json([vars(r) for r in rows])
        return
    if not rows:
        echo("no conversations in memory (capture stores them as you talk; plur ingest imports one)")
        return
    for r in rows:
        echo(f"{r.session}  {r.turns} turn{'s' if r.turns != 1 else ''}  {r.format}  {', '.join(r.scopes)}  "
             f"{r.first[:16]} .. {r.last[:16]}")
