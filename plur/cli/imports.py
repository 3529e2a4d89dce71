"""``plur import`` (notes and engram files) and ``plur ingest`` (chat histories): many paths, folders, a preview.

Both take several paths and folders, screen credentials out of what they store (the count is said), and
with ``--dry-run`` write nothing: they print the counts and the first notes of each type.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..errors import ValidationError
from ..service.session import Session as App
from .output import echo, emit_json, one_line
from .scopes import HERE_HELP, NonBlankPath, nonblank, scope_value

IMPORT_CHOICES = ("jsonl", "plur-yaml", "claude-dir", "claude-memory", "chatgpt-memory", "notes")
INGEST_CHOICES = ("messages", "claude-code", "chatgpt", "longmemeval", "locomo", "dsh", "claude-ai")
PREVIEW_PER_TYPE = 3


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def preview_lines(engrams: Sequence[Any]) -> list[str]:
    """``  <type> (<n>): <first statements>`` per type, in order of first appearance."""
    by_type: dict[str, list[Any]] = {}
    for e in engrams:
        by_type.setdefault(e.type, []).append(e)
    out = []
    for kind, items in by_type.items():
        out.append(f"  {kind} ({len(items)}):")
        out += [f"    - {one_line(e.statement)[:100]}" + (f"  [{', '.join(e.tags)}]" if e.tags else "")
                for e in items[:PREVIEW_PER_TYPE]]
    return out


@click.command("import")
@click.argument("sources", nargs=-1, required=True, type=NonBlankPath(path_type=Path, exists=True))
@click.option("--format", "fmt", type=click.Choice(IMPORT_CHOICES), default=None,
              help="Default: from the path and content (Claude memory folder, .jsonl, .yaml, claude.ai memory text, "
                   "ChatGPT saved memories, Markdown/text notes).")
@click.option("--scope", default=None, callback=scope_value,
              help="Scope for entries that carry none (any format); default global; " + HERE_HELP)
@click.option("--dry-run", is_flag=True,
              help="Write nothing: print what would be imported (counts, first notes per type).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.pass_obj
def import_(app: App, sources: tuple[Path, ...], fmt: str | None, scope: str | None, dry_run: bool,
            as_json: bool) -> None:
    """Import notes and engrams from SOURCES (files or folders); what the store holds already is skipped.

    Reads plur's own exports (JSONL, engrams.yaml, a Claude memory folder), claude.ai's memory (the
    settings export, the prose and bold-heading exports, memory-card transcripts), ChatGPT's saved
    memories (one per line) and plain text or Markdown notes. Credentials in a note are removed before
    it is stored. For chat histories use `plur ingest`.
    """
    from ..formats.transfer import import_sources, read_engrams

    skipped: list[str] = []
    paths = import_sources(sources, skipped)
    engrams = []
    for p in paths:
        got = read_engrams(p, fmt, scope=scope or _claude_memory_scope(p, app.memory.home, not dry_run),
                           max_bytes=app.memory.settings.max_input_bytes, skipped=skipped)
        if fmt is not None and not got:
            raise ValidationError(f"{p} read as --format {fmt} holds nothing to import; drop --format to detect "
                                  "the format, or pass another one")
        engrams += got
    _say_skipped(skipped)
    out = app.memory.import_engrams(engrams, dry_run=dry_run)
    where = str(sources[0]) if len(sources) == 1 else f"{len(paths)} files"
    if as_json:
        emit_json({"sources": [str(s) for s in sources],
                   "files": [str(p) for p in paths], "dry_run": dry_run,
                   "added": [e.id for e in out.added], "already_known": [e.id for e in out.known],
                   "new_ids": dict(out.renamed), "secrets_removed": out.secrets,
                   "scopes": sorted({e.scope for e in [*out.added, *out.known]}),
                   **({"preview": [e.to_dict() for e in out.added]} if dry_run else {})})
    else:
        verb = "would import" if dry_run else "imported"
        into = sorted({e.scope for e in [*out.added, *out.known]})   # said like plur ingest: where they land
        echo(f"{verb} {out.added.__len__()} new engram{'s' if len(out.added) != 1 else ''}, "
             f"{len(out.known)} already known, from {where}" + (f" into {', '.join(into)}" if into not in ([], ["global"]) else "")
             + (" (--dry-run: nothing written)" if dry_run else ""))
        if dry_run:
            for line in preview_lines(out.added):
                echo(line)
    if out.secrets and not as_json:
        echo(f"note: removed {_plural(out.secrets, 'credential')} (API keys, tokens) from the imported text",
             err=True)
    if out.renamed and not as_json:
        echo(f"note: {len(out.renamed)} entr{'y' if len(out.renamed) == 1 else 'ies'} named an id this store uses "
             f"for other text, so got a new id (e.g. {out.renamed[0][0]} -> {out.renamed[0][1]})", err=True)


@click.command()
@click.argument("sources", nargs=-1, required=True, type=NonBlankPath(path_type=Path, exists=True))
@click.option("--format", "fmt", type=click.Choice(INGEST_CHOICES), default=None,
              help="Default: detected from the content.")
@click.option("--session", default=None, callback=nonblank, help="Session id for conversations that carry none.")
@click.option("--date", default=None, help="Time for turns with none of their own (ISO-8601).")
@click.option("--scope", default=None, callback=scope_value,
              help="Scope of the new engrams; default global, and for Claude Code sessions their project's scope; "
                   + HERE_HELP)
@click.option("--assistant", "with_assistant", is_flag=True,
              help="Also learn assistant turns (type reference); default user turns only.")
@click.option("--tag", "tags", multiple=True, help="Tag every new engram (repeat for more).")
@click.option("--dry-run", is_flag=True, help="Write nothing: print what would be ingested (counts, first turns).")
@click.option("--json", "as_json", is_flag=True, help="Print {format, turns, added, skipped, files} as JSON.")
@click.pass_obj
def ingest(app: App, sources: tuple[Path, ...], fmt: str | None, session: str | None, date: str | None,
           scope: str | None, with_assistant: bool, tags: tuple[str, ...], dry_run: bool, as_json: bool) -> None:
    """Learn chat histories from SOURCES, one engram per turn; re-running adds only turns not ingested yet.

    Formats: OpenAI/mem0 message lists, Claude Code transcripts (.jsonl; a project's folder or the whole
    ~/.claude/projects folder: each project's sessions go to that project's scope), ChatGPT's and claude.ai's
    exports (the .zip or its conversations.json), LongMemEval haystacks, LoCoMo conversations. Credentials in a
    turn are removed before it is stored.
    """
    from ..formats.chats.sources import ingest_sources

    roles = ("user", "assistant") if with_assistant else ("user",)
    skipped: list[str] = []
    files = ingest_sources(sources, skipped)
    _say_skipped(skipped)
    results = []
    scopes: dict[Path, str] = {}
    for src in files:
        where = scope or (project_scope(src.project, app.memory.home, register=not dry_run)
                          if src.project is not None else "global")
        scopes[src.path] = where
        results.append(app.memory.ingest(src.path, format=fmt, session=session, date=date, scope=where,
                                         roles=roles, tags=tags, source={"file": src.path.name}, dry_run=dry_run))
    _report_ingest(files, results, scopes, as_json, dry_run)
    if not as_json:
        _memory_folders_note(sources)


def _say_skipped(skipped: Sequence[str]) -> None:
    """One warning line on stderr per file left out because it leads out of the folder given (said once each)."""
    for line in dict.fromkeys(skipped):
        echo(f"warning: {line}", err=True)


def _memory_folders_note(sources: Sequence[Path]) -> None:
    """Say on stderr that Claude Code memory folders beside the ingested sessions were left alone (notes, not chats)."""
    from ..formats.transfer import is_claude_dir

    found = []
    for p in sources:
        if p.is_dir():
            found += [m for m in [p / "memory", *(d / "memory" for d in sorted(p.iterdir()) if d.is_dir())]
                      if m.is_dir() and is_claude_dir(m)]
    if found:
        echo(f"note: {_plural(len(found), 'Claude Code memory folder')} beside the sessions (e.g. {found[0]}) "
             f"hold notes, not chats, and were left alone: `plur import {found[0]}` files one under its project's "
             "scope; `plur link claude-code PROJECT_DIR` keeps one in step", err=True)


def _claude_memory_scope(path: Path, home: Path, register: bool) -> str | None:
    """The project scope of a Claude Code memory folder (``~/.claude/projects/<project>/memory``), else ``None``."""
    if not (path.is_dir() and path.name == "memory" and path.parent.name.startswith("-")):
        return None
    from ..formats.chats.sources import project_folder

    return project_scope(project_folder(path.parent.name), home, register)


def project_scope(folder: Path, home: Path, register: bool = True) -> str:
    """The scope of the folder a session ran in (a Claude Code project, a DSH workspace): the project identity
    every door uses (:func:`plur.project.resolve`: its git root's scope, a bound folder's, never ``global``).

    A folder that exists here is resolved (and its root registered); one from another machine is only named
    (``project:<its name>``), so the registry does not fill with paths that are not on this machine; nor is one
    registered when ``register`` is false (a dry run writes nothing).
    """
    from ..project import resolve

    return resolve(folder, home, register_new=register and folder.is_dir()).scope


#: How the ingest report names each reason capture's rules leave a turn out (plur.memory.ingest).
_LEFT_OUT = {"question": "questions", "trivial": "nothing to remember", "off": "typed with capture off",
             "repeat": "already in the scope", "forget": "asking to forget",
             "forgotten": "forgotten at the user's request"}


def _report_ingest(files: Sequence[Any], results: Sequence[Any], scopes: dict[Path, str], as_json: bool,
                   dry_run: bool) -> None:
    formats = sorted({r.format for r in results})
    added = [e for r in results for e in r.added]
    changed = [e for r in results for e in r.changed]
    problems = [p for r in results for p in r.problems]
    secrets = sum(r.secrets for r in results)
    skipped = sum(r.skipped for r in results)
    forgotten = [i for r in results for i in getattr(r, "forgotten", ())]
    left: dict[str, int] = {}
    for r in results:
        for why, n in getattr(r, "left_out", ()):
            left[why] = left.get(why, 0) + n
    if as_json:
        emit_json({"sources": [str(f.path) for f in files],
                   "format": ", ".join(formats), "turns": sum(r.turns for r in results), "dry_run": dry_run,
                   "added": [e.id for e in added], "skipped": skipped, "left_out": left, "forgotten": forgotten,
                   "secrets_removed": secrets,
                   "changed": [{"id": e.id, "supersedes": e.supersedes} for e in changed],
                   "problems": [{"where": w, "reason": r} for w, r in problems],
                   "files": [{"path": str(f.path), "format": r.format, "scope": scopes[f.path], "turns": r.turns,
                              "added": len(r.added), "skipped": r.skipped} for f, r in zip(files, results)],
                   **({"preview": [e.to_dict() for e in added]} if dry_run else {})})
    else:
        where = str(files[0].path) if len(files) == 1 else f"{len(files)} files"
        into = sorted(set(scopes.values()) | {e.scope for e in added})    # a turn about the user goes to global
        edits = f", {len(changed)} changed (each supersedes its old version)" if changed else ""
        if left:  # capture's rules (setting capture_rules): docs/concepts/capture.md
            edits += (f", {sum(left.values())} left out ("
                      + ", ".join(f"{_LEFT_OUT.get(k, k)} {n}" for k, n in sorted(left.items())) + ")")
        verb = "would ingest" if dry_run else "ingested"
        click.echo(f"{verb} {len(added)} new turn{'s' if len(added) != 1 else ''}{edits} "
                   f"({skipped} already ingested) from {where} [{', '.join(formats)}]"
                   + (f" into {', '.join(into)}" if into != ["global"] else "")
                   + (" (--dry-run: nothing written)" if dry_run else ""))
        if forgotten:
            click.echo(f"{'would forget' if dry_run else 'forgot'} {_plural(len(forgotten), 'note')} the conversation "
                       f"asked to forget: {', '.join(forgotten)}")
        if dry_run:
            for line in preview_lines(added):
                click.echo(line)
    if secrets:
        echo(f"note: removed {_plural(secrets, 'credential')} (API keys, tokens) from the turns' text", err=True)
    for where_, reason in problems:
        echo(f"plur: skipped {where_}: {one_line(reason)}", err=True)
    if problems:  # the rest is in; the exit says not everything was
        n = len(problems)
        raise ValidationError(f"{n} item{'s' if n != 1 else ''} could not be ingested (listed above); "
                              "fix them and ingest again: turns already ingested are not added twice")
