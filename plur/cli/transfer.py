"""Getting engrams in and out: ``plur import``, ``plur export`` (engram files) and ``plur ingest`` (chat histories)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..service.session import Session as App
from ..store.engram import STATUSES
from ..errors import ValidationError
from .output import echo, emit_json, one_line


@click.command("import")
@click.argument("source", type=click.Path(path_type=Path, exists=True))
@click.option("--format", "fmt", type=click.Choice(("jsonl", "plur-yaml", "claude-dir")), default=None,
              help="Default: from the path (folder = claude-dir, .jsonl, .yaml).")
@click.option("--scope", default=None, help="Scope for entries that carry none (any format); default global.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def import_(app: App, source: Path, fmt: str | None, scope: str | None, as_json: bool) -> None:
    """Import engrams from SOURCE; duplicates already in the store are skipped (their new tags merged).

    A JSONL line needs only "statement"; see the README ("Getting your history in") for every field.
    For chat histories use `plur ingest`.
    """
    from ..store.transfer import read_engrams

    engrams = read_engrams(source, fmt, scope=scope)
    store = app.memory.store
    stored, fresh = [], []  # an entry whose id is stored with the same text is known, retired or not
    for e in engrams:
        have = _stored(store, e.id)
        (stored if have is not None and (have.content_hash, have.scope) == (e.content_hash, e.scope)
         else fresh).append(e)
    results = store.add_many(fresh)
    added = [e.id for e, new in results if new]
    known = [e.id for e, new in results if not new] + [e.id for e in stored]
    renamed = [(e.id, got.id) for e, (got, new) in zip(fresh, results) if new and got.id != e.id]
    if as_json:
        emit_json({"source": str(source), "added": added, "already_known": known,
                   "new_ids": {old: new for old, new in renamed}})
    else:
        echo(f"imported {len(added)} new engram{'s' if len(added) != 1 else ''}, "
             f"{len(known)} already known, from {source}")
        if renamed:
            echo(f"note: {len(renamed)} entr{'y' if len(renamed) == 1 else 'ies'} named an id this store uses for "
                 f"other text, so got a new id (e.g. {renamed[0][0]} -> {renamed[0][1]})", err=True)


def _stored(store: Any, engram_id: str) -> Any:
    """The stored engram with this id, or ``None``."""
    from ..errors import NotFoundError

    try:
        return store.get(engram_id)
    except NotFoundError:
        return None


@click.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(("jsonl", "plur-yaml", "claude-dir")), default=None,
              help="Default: from the path (no suffix or folder = claude-dir, .jsonl, .yaml).")
@click.option("--scope", default=None, help="Only this exact scope.")
@click.option("--status", type=click.Choice(STATUSES), default=None)
@click.option("--force", is_flag=True, help="Replace a previous plur export at TARGET (never a file plur did not write).")
@click.pass_obj
def export(app: App, target: Path, fmt: str | None, scope: str | None, status: str | None, force: bool) -> None:
    """Export engrams (oldest first) to TARGET: JSONL, PLUR engrams.yaml or a Claude memory folder."""
    from ..store.transfer import write_engrams

    engrams = app.memory.list(scope=scope, status=status)[::-1]
    n = write_engrams(engrams, target, fmt, force=force, home=app.memory.home)
    echo(f"exported {n} engram{'s' if n != 1 else ''} to {target}")


@click.command()
@click.argument("source", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(("messages", "claude-code", "chatgpt", "longmemeval", "locomo")),
              default=None, help="Default: detected from the content.")
@click.option("--session", default=None, help="Session id for conversations that carry none.")
@click.option("--date", default=None, help="Time for turns with none of their own (ISO-8601).")
@click.option("--scope", default="global", show_default=True, help="Scope of the new engrams.")
@click.option("--assistant", "with_assistant", is_flag=True,
              help="Also learn assistant turns (type reference); default user turns only.")
@click.option("--tag", "tags", multiple=True, help="Tag every new engram (repeat for more).")
@click.option("--json", "as_json", is_flag=True, help="Print {format, turns, added, skipped} as JSON.")
@click.pass_obj
def ingest(app: App, source: Path, fmt: str | None, session: str | None, date: str | None, scope: str,
           with_assistant: bool, tags: tuple[str, ...], as_json: bool) -> None:
    """Learn a chat history, one engram per turn; re-running adds only turns not ingested yet.

    Formats: OpenAI/mem0 message lists, Claude Code transcripts (.jsonl), ChatGPT conversations.json,
    LongMemEval haystacks, LoCoMo conversations.
    """
    roles = ("user", "assistant") if with_assistant else ("user",)
    out = app.memory.ingest(source, format=fmt, session=session, date=date, scope=scope, roles=roles, tags=tags,
                            source={"file": source.name})
    if as_json:
        emit_json({"source": str(source), "format": out.format, "turns": out.turns,
                    "added": [e.id for e in out.added], "skipped": out.skipped,
                    "changed": [{"id": e.id, "supersedes": e.supersedes} for e in out.changed],
                    "problems": [{"where": w, "reason": r} for w, r in out.problems]})
    else:
        edits = f", {len(out.changed)} changed (each supersedes its old version)" if out.changed else ""
        click.echo(f"ingested {len(out.added)} new turn{'s' if len(out.added) != 1 else ''}{edits} "
                   f"({out.skipped} already ingested) from {source} [{out.format}]")
    for where, reason in out.problems:
        echo(f"plur: skipped {where}: {one_line(reason)}", err=True)
    if out.problems:  # the rest is in; the exit says not everything was
        n = len(out.problems)
        raise ValidationError(f"{n} item{'s' if n != 1 else ''} of {source} could not be ingested (listed above); "
                              "fix them and ingest again: turns already ingested are not added twice")
