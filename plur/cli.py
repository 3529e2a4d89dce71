"""The ``plur`` command line (click). Thin: every command is a few calls on :class:`plur.memory.Memory`.

Errors: any :class:`~plur.errors.PlurError` becomes one line on stderr
(``plur: error: <message>``) and the exit code of its class
(``PlurError.exit_code``), in one place: :class:`_Group.invoke`.

Human output by default; ``--json`` where offered prints one JSON document on stdout.

``recall``, ``section``, ``learn``, ``forget`` and ``doctor`` go through a running local service
(:mod:`plur.service.client`) when the home has one, and work in-process otherwise; ``--verbose``
says which (:meth:`_App.service`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import click

from . import __version__
from .store.engram import STATUSES, TYPES, Engram
from .display import safe_text
from .errors import ConflictError, PlurError, ValidationError
from .service.session import Session

MODES = ("hybrid", "bm25", "dense")


def _one_line(text: str) -> str:
    """Line breaks -> spaces (other whitespace is kept: it may be part of a quoted value)."""
    return str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


#: C0/C1 controls (tab and newline kept), DEL, and the bidi embedding/override/isolate marks
#: (Unicode TR9; "Trojan Source", Boucher & Anderson 2021): shown escaped in human output.


def _echo(text: str = "", **kwargs: Any) -> None:
    """click.echo of human output, control sequences neutralised (see :func:`safe_text`)."""
    click.echo(safe_text(text), **kwargs)


def _bad_utf8(args: list[str]) -> str | None:
    for a in args:
        try:
            a.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = a.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return (f"argument '{safe_text(shown)}' is not valid UTF-8 (byte at position {exc.start}); "
                    "check the terminal's or script's encoding (plur reads UTF-8)")
    return None


class _Group(click.Group):
    """Turns PlurError into one stderr line and ``exit_code`` for every subcommand."""

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
            click.echo(f"plur: error: {safe_text(_one_line(str(exc)))}", err=True)
            ctx.exit(exc.exit_code)
        except OSError as exc:  # last resort: a failing disk or folder is one line, not a traceback
            if isinstance(exc, BrokenPipeError):
                raise
            click.echo(f"plur: error: {safe_text(_one_line(str(exc)))}; check that the home folder exists, "
                       "is writable and has free space (`plur doctor`)", err=True)
            ctx.exit(4)
        except UnicodeError as exc:  # invalid UTF-8 on stdin or in a file we were told to read
            click.echo(f"plur: error: input is not valid UTF-8 text ({safe_text(str(exc))}); "
                       "re-save it as UTF-8", err=True)
            ctx.exit(2)
        finally:
            _warn_quarantined(ctx)


def _quarantine_count(ctx: click.Context) -> int:
    app = ctx.obj
    if not isinstance(app, _App):
        return 0
    try:
        return app.quarantined()
    except Exception:  # noqa: BLE001 - a warning must never turn into an error
        return 0


def _warn_quarantined(ctx: click.Context) -> None:
    """Every command that read the store says, on stderr, how many files are quarantined (until dealt with)."""
    n = _quarantine_count(ctx)
    if not n:
        return
    if getattr(ctx.obj, "json_output", False):
        click.echo(json.dumps({"warning": "quarantined", "quarantined": n,
                               "see": "plur doctor"}), err=True)
    else:
        click.echo(f"plur: warning: {n} file{'s are' if n != 1 else ' is'} quarantined (could not be loaded); "
                   "see `plur doctor`, fix the file, then `plur doctor --restore NAME`", err=True)


_App = Session  # the per-invocation state every command receives (``@click.pass_obj``)


def _emit_json(data: Any) -> None:
    ctx = click.get_current_context(silent=True)
    if ctx is not None and isinstance(ctx.find_root().obj, _App):
        ctx.find_root().obj.json_output = True
        if isinstance(data, dict) and "quarantined" not in data:
            data = {**data, "quarantined": _quarantine_count(ctx.find_root())}
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _summary(text: str, width: int = 90) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _engram_line(e: Engram) -> str:
    flags = ("*" if e.pinned else " ") + ("r" if e.status == "retired" else " ")
    return f"{e.id} {flags} {e.type:<9} {e.scope:<16} {_summary(e.statement)}"


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(path_type=Path), default=None,  # a file: the store's own one-line error, exit 4
              help="plur home folder (default: $PLUR_HOME, else ~/.plur).")
@click.option("-v", "--verbose", is_flag=True,
              help="Say on stderr whether a command used the running service or worked in-process.")
@click.version_option(__version__, prog_name="plur")
@click.pass_context
def cli(ctx: click.Context, home: Path | None, verbose: bool) -> None:
    """plur: long-term memory for LLM agents, kept as YAML files on this machine."""
    app = _App(home, verbose)
    ctx.obj = app
    ctx.call_on_close(app.close)


# -- store commands -----------------------------------------------------------------------
@cli.command()
@click.pass_obj
def init(app: _App) -> None:
    """Create the home folder (idempotent)."""
    store = app.memory.store
    existed = store.root.is_dir()
    from .store.atomic import private_dirs

    private_dirs(store.root)
    _echo(f"{'already initialised' if existed else 'initialised'}: {store.home}")


@cli.command()
@click.argument("statement")
@click.option("--scope", default="global", show_default=True, help="global, project:<name> or agent:<name>.")
@click.option("--type", "type_", type=click.Choice(TYPES), default="fact", show_default=True)
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option("--domain", default=None, help="Dotted domain, e.g. dev.testing.")
@click.option("--rationale", default=None, help="Why this is worth remembering.")
@click.option("--pin", is_flag=True, help="Pinned engrams go first in the memory block.")
@click.option("--created", default=None, help="When it was true/said (ISO-8601, e.g. 2025-07-25T10:00Z); default now.")
@click.option("--ttl", default=None, help="Expire after this long, e.g. 30d, 12h, 2w (then recall skips it).")
@click.option("--valid-until", "valid_until", default=None, help="Expire at this time (ISO-8601).")
@click.option("--json", "as_json", is_flag=True, help="Print {engram, created, tags_added} as JSON.")
@click.pass_obj
def learn(app: _App, statement: str, scope: str, type_: str, tags: tuple[str, ...], domain: str | None,
          rationale: str | None, pin: bool, created: str | None, ttl: str | None, valid_until: str | None,
          as_json: bool) -> None:
    """Remember STATEMENT ('-' reads it from stdin). Prints the new id, or 'already known: <id>'.

    Re-learning a known statement adds the new --tag values to it (and says so).
    """
    if statement == "-":
        stream = getattr(sys.stdin, "buffer", None)
        raw = stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "surrogateescape")
        try:
            statement = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"stdin is not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); "
                                  "re-save the text as UTF-8") from None
    client = app.service("learn")
    if client is not None:
        got = client.learn(statement, scope=scope, type=type_, tags=list(tags), domain=domain, rationale=rationale,
                           pinned=pin, created=created, ttl=ttl, valid_until=valid_until)
        _learned(Engram.from_dict(got["engram"]), got["created"], got.get("tags_added", []), as_json)
        return
    mem = app.memory
    known = None
    if isinstance(statement, str) and statement.strip():
        Engram.create(statement, max_statement_bytes=mem.settings.max_statement_bytes)  # validate first
        known = mem.store.find_duplicate(statement, scope)
    engram = mem.learn(statement, scope=scope, type=type_, tags=tags, domain=domain, rationale=rationale,
                       pinned=pin, created=created, ttl=ttl, valid_until=valid_until)
    is_new = known is None or engram.id != known.id
    added = [] if is_new or known is None else [t for t in engram.tags if t not in known.tags]
    _learned(engram, is_new, added, as_json)


def _learned(engram: Engram, is_new: bool, added: list[str], as_json: bool) -> None:
    if as_json:
        _emit_json({"engram": engram.to_dict(), "created": is_new, "tags_added": added})
    elif is_new:
        click.echo(engram.id)
    else:
        _echo(f"already known: {engram.id}" + (f" (tags added: {', '.join(added)})" if added else ""))


@cli.command("list")
@click.option("--scope", default=None, help="Only this exact scope.")
@click.option("--type", "type_", type=click.Choice(TYPES), default=None)
@click.option("--tag", default=None)
@click.option("--status", type=click.Choice(STATUSES), default=None)
@click.option("--text", default=None, help="Case-insensitive substring of the statement.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Show at most this many (newest first).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of engrams.")
@click.pass_obj
def list_(app: _App, scope: str | None, type_: str | None, tag: str | None, status: str | None,
          text: str | None, limit: int | None, as_json: bool) -> None:
    """List engrams, newest first ('*' pinned, 'r' retired)."""
    found = app.memory.list(scope=scope, type=type_, tag=tag, status=status, text=text)
    shown = found if limit is None else found[:limit]
    if as_json:
        _emit_json([e.to_dict() for e in shown])
        return
    for e in shown:
        _echo(_engram_line(e))
    more = f" (showing {len(shown)})" if len(shown) < len(found) else ""
    _echo(f"{len(found)} engram{'s' if len(found) != 1 else ''}{more}", err=True)


@cli.command()
@click.argument("engram_id")
@click.option("--json", "as_json", is_flag=True, help="Print the engram as JSON instead of YAML.")
@click.pass_obj
def show(app: _App, engram_id: str, as_json: bool) -> None:
    """Print an engram's YAML."""
    e = app.memory.get(engram_id)
    if as_json:
        _emit_json(e.to_dict())
    else:
        _echo(e.to_yaml(), nl=False)


def _changes(old: Engram, new: Engram) -> dict[str, Any]:
    return {f.name: getattr(new, f.name) for f in dataclasses.fields(Engram)
            if f.name not in ("id", "content_hash") and getattr(new, f.name) != getattr(old, f.name)}


def _edit_folder(home: Path) -> Path:
    """``<home>/edit`` (0700): where ``plur edit`` puts the file it opens, so the statement (and the
    editor's swap and backup files beside it) never lands in a shared temp folder outside the home."""
    from .store.atomic import private_dirs

    folder = home / "edit"
    private_dirs(folder)
    return folder


def _edit_in_home(home: Path, engram_id: str, text: str) -> str | None:
    """Open ``text`` in $EDITOR from a 0600 file in :func:`_edit_folder`; the saved text, or None if not saved.

    The file is removed afterwards (an editor's own swap file goes when the editor closes).
    """
    import os
    import tempfile

    fd, name = tempfile.mkstemp(prefix=f"{engram_id}-", suffix=".yaml", dir=_edit_folder(home))
    path = Path(name)
    try:
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        before = os.stat(path).st_mtime_ns
        click.edit(filename=str(path))
        if os.stat(path).st_mtime_ns == before:
            return None  # not saved
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)


@cli.command()
@click.argument("engram_id")
@click.pass_obj
def edit(app: _App, engram_id: str) -> None:
    """Edit an engram in $EDITOR; it is validated before it replaces the stored one.

    An invalid edit is shown with the error and re-opened (or abandoned, leaving
    the stored engram untouched).
    """
    from .store.engram import engram_version

    mem = app.memory
    old = mem.get(engram_id)
    version = engram_version(old)  # the update is refused if the engram changes while the editor is open
    text = old.to_yaml()
    while True:
        edited = _edit_in_home(mem.home, engram_id, text)
        if edited is None or edited == old.to_yaml():
            _echo(f"no changes: {engram_id}")
            return
        try:
            new = Engram.from_yaml(edited)
            if new.id != old.id:
                raise ValidationError(f"the id cannot change (was {old.id}, now {new.id}); "
                                      "use `plur learn` for a new engram")
            break
        except ValidationError as exc:
            _echo(f"invalid engram: {_one_line(str(exc))}", err=True)
            if not click.confirm("Re-open the editor?", default=True, err=True):
                raise ValidationError(f"edit of {engram_id} abandoned ({_one_line(str(exc))}); "
                                      "the stored engram is unchanged") from None
            text = edited
    changes = _changes(old, new)
    if not changes:
        _echo(f"no changes: {engram_id}")
        return
    try:
        mem.update(engram_id, expected=version, **changes)
    except ConflictError as exc:  # keep the person's text: it is not in the store
        import tempfile

        folder = _edit_folder(mem.home)
        fd, kept = tempfile.mkstemp(prefix=f"kept-{engram_id}-", suffix=".yaml", dir=folder)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(edited)
        exc.args = (f"{exc}; your edited text is kept in {kept}",)
        raise
    _echo(f"updated: {engram_id} ({', '.join(sorted(changes))})")


@cli.command()
@click.argument("engram_id")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def forget(app: _App, engram_id: str, yes: bool) -> None:
    """Delete an engram (its file, index entries and usage events)."""
    client = app.service("forget")
    if not yes:
        e = Engram.from_dict(client.engram(engram_id)["engram"]) if client else app.memory.get(engram_id)
        _echo(_engram_line(e), err=True)
        click.confirm("Forget this engram?", abort=True, err=True)
    if client is not None:
        client.forget(engram_id)
    else:
        app.memory.forget(engram_id)
    _echo(f"forgotten: {engram_id}")


@cli.command("import")
@click.argument("source", type=click.Path(path_type=Path, exists=True))
@click.option("--format", "fmt", type=click.Choice(("jsonl", "plur-yaml", "claude-dir")), default=None,
              help="Default: from the path (folder = claude-dir, .jsonl, .yaml).")
@click.option("--scope", default=None, help="Scope for memories that carry none (claude-dir); default global.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def import_(app: _App, source: Path, fmt: str | None, scope: str | None, as_json: bool) -> None:
    """Import engrams from SOURCE; duplicates already in the store are skipped (their new tags merged).

    A JSONL line needs only "statement"; see the README ("Getting your history in") for every field.
    For chat histories use `plur ingest`.
    """
    from .store.transfer import read_engrams

    engrams = read_engrams(source, fmt, scope=scope)
    results = app.memory.store.add_many(engrams)
    added = [e.id for e, new in results if new]
    known = [e.id for e, new in results if not new]
    if as_json:
        _emit_json({"source": str(source), "added": added, "already_known": known})
    else:
        _echo(f"imported {len(added)} new engram{'s' if len(added) != 1 else ''}, "
                   f"{len(known)} already known, from {source}")


@cli.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(("jsonl", "plur-yaml", "claude-dir")), default=None,
              help="Default: from the path (no suffix or folder = claude-dir, .jsonl, .yaml).")
@click.option("--scope", default=None, help="Only this exact scope.")
@click.option("--status", type=click.Choice(STATUSES), default=None)
@click.option("--force", is_flag=True, help="Replace a previous plur export at TARGET (never a file plur did not write).")
@click.pass_obj
def export(app: _App, target: Path, fmt: str | None, scope: str | None, status: str | None, force: bool) -> None:
    """Export engrams (oldest first) to TARGET: JSONL, PLUR engrams.yaml or a Claude memory folder."""
    from .store.transfer import write_engrams

    engrams = app.memory.list(scope=scope, status=status)[::-1]
    n = write_engrams(engrams, target, fmt, force=force, home=app.memory.home)
    _echo(f"exported {n} engram{'s' if n != 1 else ''} to {target}")


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--no-model", is_flag=True, help="Skip resolving the embedding model (fast).")
@click.option("--restore", "restore", default=None, metavar="NAME",
              help="Move a quarantined file you fixed back into the store (its name as listed, or the engram id); "
                   "it is validated first.")
@click.pass_obj
def doctor(app: _App, as_json: bool, no_model: bool, restore: str | None) -> None:
    """Store health: counts, quarantined files, lock state, the model in use and why, the service."""
    if restore is not None:
        e = app.memory.store.restore(restore)
        if as_json:
            _emit_json({"restored": e.to_dict()})
        else:
            _echo(f"restored: {e.id} ({_summary(e.statement, 60)})")
        return
    client = app.service("doctor")
    if client is not None:
        report = client.doctor()
        report["service"] = {"running": True, **{k: client.info.get(k) for k in ("pid", "url", "socket")}}
    else:
        mem = app.memory
        report = mem.doctor(load_model=not no_model)
        report["manifest"] = mem.store.manifest_info()
        report["service"] = {"running": False}
    if as_json:
        _emit_json(report)
        return
    eng = report["engrams"]

    def counts(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "-"

    _echo(f"home         {report['home']}")
    if not report.get("home_private", True):
        _echo(f"  warning: other users can read it (mode {report['home_mode']}); run: chmod 700 {report['home']}")
    _echo(f"engrams      {eng['total']}  (status: {counts(eng['by_status'])})")
    _echo(f"  by scope   {counts(eng['by_scope'])}")
    _echo(f"  by type    {counts(eng['by_type'])}")
    lock = report["lock"]
    owner = lock.get("owner") or {}
    held = f"held (pid {owner.get('pid', '?')} since {owner.get('since', '?')})" if lock["locked"] else "free"
    if lock["locked"] is None:
        held = f"unknown ({lock.get('error')}: read-only home, so no write can happen here)"
    _echo(f"lock         {held}  {lock['path']}")
    svc = report["service"]
    _echo(f"service      pid {svc['pid']}  {svc['socket'] or ''} {svc['url']}" if svc["running"]
          else "service      not running (`plur service start` keeps the model loaded)")
    q = report["quarantined"]
    _echo(f"quarantined  {len(q)} file{'s' if len(q) != 1 else ''}")
    for item in q:
        _echo(f"  {item['path']}\n    was {item['original']} ({item['when']}): {_one_line(item['reason'])}")
    if any(item.get("moved") for item in q):
        _echo("  fix a file in place, then: plur doctor --restore NAME (validated before it goes back)")
    model = report.get("model") or {}
    if "source" in model:
        name = model.get("name") or "none (BM25 only)"
        _echo(f"model        {name}  [{model.get('source')}] {model.get('reason') or ''}".rstrip())
        for w in model.get("warnings") or []:
            _echo(f"  warning: {_one_line(w)}")
    else:
        _echo(f"model        {model.get('requested')} (not resolved: --no-model)")


# -- conversations and ageing -------------------------------------------------------------
@cli.command()
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
def ingest(app: _App, source: Path, fmt: str | None, session: str | None, date: str | None, scope: str,
           with_assistant: bool, tags: tuple[str, ...], as_json: bool) -> None:
    """Learn a chat history, one engram per turn; re-running adds only turns not ingested yet.

    Formats: OpenAI/mem0 message lists, Claude Code transcripts (.jsonl), ChatGPT conversations.json,
    LongMemEval haystacks, LoCoMo conversations.
    """
    roles = ("user", "assistant") if with_assistant else ("user",)
    out = app.memory.ingest(source, format=fmt, session=session, date=date, scope=scope, roles=roles, tags=tags,
                            source={"file": source.name})
    if as_json:
        _emit_json({"source": str(source), "format": out.format, "turns": out.turns,
                    "added": [e.id for e in out.added], "skipped": out.skipped})
    else:
        click.echo(f"ingested {len(out.added)} new turn{'s' if len(out.added) != 1 else ''} "
                   f"({out.skipped} already ingested) from {source} [{out.format}]")


@cli.command()
@click.argument("engram_id")
@click.argument("statement")
@click.pass_obj
def update(app: _App, engram_id: str, statement: str) -> None:
    """Replace the text of an engram in place (same id; use `supersede` to keep the old text as history)."""
    app.memory.update(engram_id, statement=statement)
    click.echo(f"updated: {engram_id}")


@cli.command()
@click.argument("old_id")
@click.argument("statement")
@click.option("--ttl", default=None, help="The new engram expires after this long, e.g. 30d.")
@click.pass_obj
def supersede(app: _App, old_id: str, statement: str, ttl: str | None) -> None:
    """Replace OLD_ID by STATEMENT: a new engram (supersedes OLD_ID); the old one is retired, kept on disk."""
    new = app.memory.supersede(old_id, statement, ttl=ttl)
    click.echo(f"{new.id} supersedes {old_id} (retired)")


@cli.command()
@click.argument("engram_id")
@click.pass_obj
def pin(app: _App, engram_id: str) -> None:
    """Pin an engram: it goes first in every memory block of its scope."""
    app.memory.update(engram_id, pinned=True)
    click.echo(f"pinned: {engram_id}")


@cli.command()
@click.argument("engram_id")
@click.pass_obj
def unpin(app: _App, engram_id: str) -> None:
    """Unpin an engram."""
    app.memory.update(engram_id, pinned=False)
    click.echo(f"unpinned: {engram_id}")


# -- recall commands ----------------------------------------------------------------------
def _fmt(x: float | None, spec: str = ".4f") -> str:
    return "-" if x is None else format(x, spec)


@cli.command()
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=0), default=10, show_default=True, help="Top-k hits.")
@click.option("--scope", default=None, help="Recall within this scope (plus global).")
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True)
@click.option("--type", "types", type=click.Choice(TYPES), multiple=True, help="Only this type (repeat for more).")
@click.option("--tag", "tags", multiple=True, help="Only engrams with this tag (repeat: any of them).")
@click.option("--min-score", "min_score", type=click.FloatRange(0.0, 1.0), default=None,
              help="Drop hits scoring below this (scores are in [0, 1], higher is better).")
@click.option("--include-expired", is_flag=True, help="Also show retired (superseded) and expired engrams.")
@click.option("--agent", default=None, help="Who is asking (recorded in stats.db).")
@click.option("--explain", is_flag=True, help="Show the fused score and each leg's rank and score.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def recall(app: _App, query: str, k: int, scope: str | None, mode: str, types: tuple[str, ...],
           tags: tuple[str, ...], min_score: float | None, include_expired: bool, agent: str | None,
           explain: bool, as_json: bool) -> None:
    """Recall the engrams most relevant to QUERY, best first."""
    client = app.service("recall")
    if client is not None:
        from .index.recall import Hit

        got = client.recall(query, k, scope=scope, mode=mode, agent=agent, types=list(types) or None,
                            tags=list(tags) or None, min_score=min_score, include_expired=include_expired)["hits"]
        hits = [Hit(**{**h, "engram": Engram.from_dict(h["engram"])}) for h in got]
    else:
        mem = app.memory
        mem.catch_up(progress=True, need_dense=mode != "bm25")  # index catch-up, progress on stderr
        hits = mem.recall(query, k, scope=scope, mode=mode, agent=agent, types=types or None, tags=tags or None,
                          min_score=min_score, include_expired=include_expired, explain=explain)
    if as_json:
        _emit_json([h.to_dict() for h in hits])
        return
    if explain:
        _echo(f"{'rank':>4} {'score':>8} {'bm25#':>5} {'bm25':>8} {'dense#':>6} {'cosine':>7}  engram")
    for h in hits:
        flag = "" if h.engram.is_current() else f" [{'retired' if h.engram.status != 'active' else 'expired'}]"
        if explain:
            _echo(f"{h.rank:>4} {h.score:>8.4f} {_fmt(h.bm25_rank, 'd'):>5} {_fmt(h.bm25_score):>8} "
                  f"{_fmt(h.dense_rank, 'd'):>6} {_fmt(h.dense_score):>7}  {h.engram.id}{flag}  "
                       f"{_summary(h.engram.statement, 70)}")
            for neighbour, terms in h.context_matches:
                click.echo(f"{'':>36}  via neighbouring turn {neighbour}: {', '.join(terms)}")
            if h.date_match:
                click.echo(f"{'':>36}  date named in the query matches ({h.engram.created.date().isoformat()})")
        else:
            _echo(f"{h.rank:>3}. {h.engram.id}{flag}  {_summary(h.engram.statement)}")
    if not hits:
        _echo("no engrams recalled", err=True)


@cli.command()
@click.pass_obj
def reindex(app: _App) -> None:
    """Rebuild the BM25 and dense indexes from the engram files."""
    out = app.memory.reindex()
    _echo("reindexed: " + ", ".join(f"{k} {v}" for k, v in out.items()))


@cli.command()
@click.argument("message")
@click.option("--agent", required=True, help="The agent the block is for.")
@click.option("--scope", default=None, help="Recall within this scope (plus global).")
@click.pass_obj
def section(app: _App, message: str, agent: str, scope: str | None) -> None:
    """Print the memory block that would be injected for MESSAGE."""
    client = app.service("section")
    if client is not None:
        block = client.block(agent, message, scope)["text"]
    else:  # the same selection the recall worker makes: pinned engrams of the scope first, then the hits
        from .prompt.selection import recall_block

        app.memory.catch_up(progress=True)
        block = recall_block(app.memory, message, scope=scope, agent=agent).text
    _echo(block if block else "(empty memory block: nothing recalled)")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=7777, show_default=True, help="0: any free port.")
@click.option("--allow-host", "allow_hosts", multiple=True, help="Another Host name the pages answer to.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@click.option("--daemon", is_flag=True, help="Run in the background (same as `plur service start`).")
@click.pass_obj
def serve(app: _App, host: str, port: int, allow_hosts: tuple[str, ...], open_browser: bool, daemon: bool) -> None:
    """Serve the web page and the JSON API for hosts (loopback + <home>/plur.sock) until stopped."""
    from .service import commands

    if daemon:
        commands.start_and_report(app.home, host, port, allow_hosts)
        return
    from .service.runner import run
    from .web.server import create_app

    run(app.home, host, port, web_factory=create_app, allow_hosts=allow_hosts, open_browser=open_browser)


def _add_service_commands() -> None:
    from .service.commands import service

    cli.add_command(service)


_add_service_commands()



@cli.command()
@click.option("--scope", default=None,
              help="Pin the server to this scope (authorisation): tools read it plus global and write only it.")
@click.option("--transport", type=click.Choice(("stdio", "streamable-http")), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="streamable-http only; loopback only.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="streamable-http only.")
@click.pass_obj
def mcp(app: _App, scope: str | None, transport: str, host: str, port: int) -> None:
    """Serve memory over MCP (Claude Desktop / Code, Cursor, ...): tools, engram resource, memory prompt."""
    from .mcp.backend import LocalBackend
    from .mcp.scope import ScopePin
    from .mcp.server import serve as run_mcp

    ScopePin(scope)  # a bad --scope fails here, before the client sees a server
    run_mcp(LocalBackend(app.memory), scope=scope, transport=transport, host=host, port=port)

def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit code."""
    # A model fallback is logged once on stderr (plur.embed); don't repeat it as a Python warning.
    warnings.filterwarnings("ignore", message="plur: embedding model")
    try:
        cli.main(args=argv, prog_name="plur", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BrokenPipeError:  # `plur list | head`
        sys.stderr.close()
        return 141
    return 0


if __name__ == "__main__":
    sys.exit(main())
