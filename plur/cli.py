"""The ``plur`` command line (click). Thin: every command is a few calls on :class:`plur.memory.Memory`.

Errors: any :class:`~plur.errors.PlurError` becomes one line on stderr
(``plur: error: <message>``) and the exit code of its class
(``PlurError.exit_code``), in one place: :class:`_Group.invoke`.

Human output by default; ``--json`` where offered prints one JSON document on stdout.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import __version__
from .store.engram import STATUSES, TYPES, Engram
from .errors import ConflictError, PlurError, ValidationError

if TYPE_CHECKING:
    from .memory import Memory

MODES = ("hybrid", "bm25", "dense")


def _one_line(text: str) -> str:
    """Line breaks -> spaces (other whitespace is kept: it may be part of a quoted value)."""
    return str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


#: C0/C1 controls (tab and newline kept), DEL, and the bidi embedding/override/isolate marks
#: (Unicode TR9; "Trojan Source", Boucher & Anderson 2021): shown escaped in human output.
_UNSAFE_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe_text(text: str) -> str:
    """``text`` with terminal control sequences neutralised: each unsafe character as ``\\xNN``/``\\uNNNN``.

    Human output goes through this (an OSC title sequence or a bidi override in a statement must not
    reach the terminal); ``--json`` output keeps the exact text.
    """
    def esc(m: re.Match[str]) -> str:
        c = ord(m.group())
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return _UNSAFE_RE.sub(esc, str(text))


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
    mem = getattr(app, "_memory", None)
    if mem is None:
        return 0
    try:
        return len(mem.store.quarantined())
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


class _App:
    """Per-invocation state: the home and a lazily opened Memory."""

    def __init__(self, home: Path | None) -> None:
        self.home = home
        self._memory: Memory | None = None
        self.json_output = False  # set by _emit_json: the quarantine warning is then JSON too

    @property
    def memory(self) -> "Memory":
        if self._memory is None:
            from .memory import Memory

            self._memory = Memory(self.home)
        return self._memory

    def close(self) -> None:
        if self._memory is not None:
            try:
                self._memory.store.close()  # saves the store manifest if it changed
            finally:
                self._memory.close()


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
@click.option("--home", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="plur home folder (default: $PLUR_HOME, else ~/.plur).")
@click.version_option(__version__, prog_name="plur")
@click.pass_context
def cli(ctx: click.Context, home: Path | None) -> None:
    """plur: long-term memory for LLM agents, kept as YAML files on this machine."""
    app = _App(home)
    ctx.obj = app
    ctx.call_on_close(app.close)


# -- store commands -----------------------------------------------------------------------
@cli.command()
@click.pass_obj
def init(app: _App) -> None:
    """Create the home folder (idempotent)."""
    store = app.memory.store
    existed = store.root.is_dir()
    store.root.mkdir(parents=True, exist_ok=True)
    _echo(f"{'already initialised' if existed else 'initialised'}: {store.home}")


@cli.command()
@click.argument("statement")
@click.option("--scope", default="global", show_default=True, help="global, project:<name> or agent:<name>.")
@click.option("--type", "type_", type=click.Choice(TYPES), default="fact", show_default=True)
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option("--domain", default=None, help="Dotted domain, e.g. dev.testing.")
@click.option("--rationale", default=None, help="Why this is worth remembering.")
@click.option("--pin", is_flag=True, help="Pinned engrams go first in the memory block.")
@click.option("--json", "as_json", is_flag=True, help="Print {engram, created} as JSON.")
@click.pass_obj
def learn(app: _App, statement: str, scope: str, type_: str, tags: tuple[str, ...], domain: str | None,
          rationale: str | None, pin: bool, as_json: bool) -> None:
    """Remember STATEMENT ('-' reads it from stdin). Prints the new id, or 'already known: <id>'."""
    if statement == "-":
        stream = getattr(sys.stdin, "buffer", None)
        raw = stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "surrogateescape")
        try:
            statement = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"stdin is not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); "
                                  "re-save the text as UTF-8") from None
    mem = app.memory
    known = None
    if isinstance(statement, str) and statement.strip():
        Engram.create(statement, max_statement_bytes=mem.settings.max_statement_bytes)  # validate first
        known = mem.store.find_duplicate(statement, scope)
    if known is not None:
        engram, created = known, False
    else:
        engram = mem.learn(statement, scope=scope, type=type_, tags=tags, domain=domain, rationale=rationale,
                           pinned=pin)
        created = True
    if as_json:
        _emit_json({"engram": engram.to_dict(), "created": created})
    else:
        _echo(engram.id if created else f"already known: {engram.id}")


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
        edited = click.edit(text, extension=".yaml", require_save=True)
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

        fd, kept = tempfile.mkstemp(prefix=f"plur-edit-{engram_id}-", suffix=".yaml")
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
    mem = app.memory
    e = mem.get(engram_id)
    if not yes:
        _echo(_engram_line(e), err=True)
        click.confirm("Forget this engram?", abort=True, err=True)
    mem.forget(engram_id)
    _echo(f"forgotten: {engram_id}")


@cli.command("import")
@click.argument("source", type=click.Path(path_type=Path, exists=True))
@click.option("--format", "fmt", type=click.Choice(("jsonl", "plur-yaml", "claude-dir")), default=None,
              help="Default: from the path (folder = claude-dir, .jsonl, .yaml).")
@click.option("--scope", default=None, help="Scope for memories that carry none (claude-dir); default global.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def import_(app: _App, source: Path, fmt: str | None, scope: str | None, as_json: bool) -> None:
    """Import engrams from SOURCE; duplicates already in the store are skipped."""
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
    """Store health: counts, quarantined files, lock state, and the model in use and why."""
    mem = app.memory
    if restore is not None:
        e = mem.store.restore(restore)
        if as_json:
            _emit_json({"restored": e.to_dict()})
        else:
            _echo(f"restored: {e.id} ({_summary(e.statement, 60)})")
        return
    report = mem.doctor(load_model=not no_model)
    report["manifest"] = mem.store.manifest_info()
    if as_json:
        _emit_json(report)
        return
    eng = report["engrams"]

    def counts(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "-"

    _echo(f"home         {report['home']}")
    _echo(f"engrams      {eng['total']}  (status: {counts(eng['by_status'])})")
    _echo(f"  by scope   {counts(eng['by_scope'])}")
    _echo(f"  by type    {counts(eng['by_type'])}")
    lock = report["lock"]
    owner = lock.get("owner") or {}
    held = f"held (pid {owner.get('pid', '?')} since {owner.get('since', '?')})" if lock["locked"] else "free"
    if lock["locked"] is None:
        held = f"unknown ({lock.get('error')}: read-only home, so no write can happen here)"
    _echo(f"lock         {held}  {lock['path']}")
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


# -- recall commands ----------------------------------------------------------------------
def _fmt(x: float | None, spec: str = ".4f") -> str:
    return "-" if x is None else format(x, spec)


@cli.command()
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=0), default=10, show_default=True, help="Top-k hits.")
@click.option("--scope", default=None, help="Recall within this scope (plus global).")
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True)
@click.option("--agent", default=None, help="Who is asking (recorded in stats.db).")
@click.option("--explain", is_flag=True, help="Show the fused score and each leg's rank and score.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def recall(app: _App, query: str, k: int, scope: str | None, mode: str, agent: str | None, explain: bool,
           as_json: bool) -> None:
    """Recall the engrams most relevant to QUERY, best first."""
    hits = app.memory.recall(query, k, scope=scope, mode=mode, agent=agent)
    if as_json:
        _emit_json([h.to_dict() for h in hits])
        return
    if explain:
        _echo(f"{'rank':>4} {'score':>8} {'bm25#':>5} {'bm25':>8} {'dense#':>6} {'cosine':>7}  engram")
    for h in hits:
        if explain:
            _echo(f"{h.rank:>4} {h.score:>8.4f} {_fmt(h.bm25_rank, 'd'):>5} {_fmt(h.bm25_score):>8} "
                       f"{_fmt(h.dense_rank, 'd'):>6} {_fmt(h.dense_score):>7}  {h.engram.id}  "
                       f"{_summary(h.engram.statement, 70)}")
        else:
            _echo(f"{h.rank:>3}. {h.engram.id}  {_summary(h.engram.statement)}")
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
    from .prompt.block import build_block

    mem = app.memory
    hits = mem.recall(message, mem.settings.recall_k, scope=scope, agent=agent)
    # The same selection the recall worker makes: pinned engrams of the scope first, then the hits.
    block = build_block(hits, budget_tokens=mem.settings.budget_tokens, pinned=mem.pinned(scope)).text
    _echo(block if block else "(empty memory block: nothing recalled)")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=7777, show_default=True)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@click.pass_obj
def serve(app: _App, host: str, port: int, open_browser: bool) -> None:
    """Serve the local web page (engrams, recalls, injections, playground)."""
    from .web.server import serve as run_server

    run_server(app.home, host, port, open_browser)


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
