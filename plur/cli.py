"""The ``plur`` command line (click). Thin: every command is a few calls on :class:`plur.memory.Memory`.

Errors: any :class:`~plur.errors.PlurError` becomes one line on stderr
(``plur: error: <message>``) and the exit code of its class
(``PlurError.exit_code``), in one place: :class:`_Group.invoke`.

Human output by default; ``--json`` where offered prints one JSON document on stdout.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import __version__
from .store.engram import STATUSES, TYPES, Engram
from .errors import PlurError, ValidationError

if TYPE_CHECKING:
    from .memory import Memory

MODES = ("hybrid", "bm25", "dense")


def _one_line(text: str) -> str:
    """Line breaks -> spaces (other whitespace is kept: it may be part of a quoted value)."""
    return str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


class _Group(click.Group):
    """Turns PlurError into one stderr line and ``exit_code`` for every subcommand."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PlurError as exc:
            click.echo(f"plur: error: {_one_line(str(exc))}", err=True)
            ctx.exit(exc.exit_code)


class _App:
    """Per-invocation state: the home and a lazily opened Memory."""

    def __init__(self, home: Path | None) -> None:
        self.home = home
        self._memory: Memory | None = None

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
    click.echo(f"{'already initialised' if existed else 'initialised'}: {store.home}")


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
        statement = sys.stdin.read()
    mem = app.memory
    known = mem.store.find_duplicate(statement, scope) if isinstance(statement, str) else None
    if known is not None:
        engram, created = known, False
    else:
        engram = mem.learn(statement, scope=scope, type=type_, tags=tags, domain=domain, rationale=rationale,
                           pinned=pin)
        created = True
    if as_json:
        _emit_json({"engram": engram.to_dict(), "created": created})
    else:
        click.echo(engram.id if created else f"already known: {engram.id}")


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
        click.echo(_engram_line(e))
    more = f" (showing {len(shown)})" if len(shown) < len(found) else ""
    click.echo(f"{len(found)} engram{'s' if len(found) != 1 else ''}{more}", err=True)


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
        click.echo(e.to_yaml(), nl=False)


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
    mem = app.memory
    old = mem.get(engram_id)
    text = old.to_yaml()
    while True:
        edited = click.edit(text, extension=".yaml", require_save=True)
        if edited is None or edited == old.to_yaml():
            click.echo(f"no changes: {engram_id}")
            return
        try:
            new = Engram.from_yaml(edited)
            if new.id != old.id:
                raise ValidationError(f"the id cannot change (was {old.id}, now {new.id}); "
                                      "use `plur learn` for a new engram")
            break
        except ValidationError as exc:
            click.echo(f"invalid engram: {_one_line(str(exc))}", err=True)
            if not click.confirm("Re-open the editor?", default=True, err=True):
                raise ValidationError(f"edit of {engram_id} abandoned ({_one_line(str(exc))}); "
                                      "the stored engram is unchanged") from None
            text = edited
    changes = _changes(old, new)
    if not changes:
        click.echo(f"no changes: {engram_id}")
        return
    mem.update(engram_id, **changes)
    click.echo(f"updated: {engram_id} ({', '.join(sorted(changes))})")


@cli.command()
@click.argument("engram_id")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def forget(app: _App, engram_id: str, yes: bool) -> None:
    """Delete an engram (its file, index entries and usage events)."""
    mem = app.memory
    e = mem.get(engram_id)
    if not yes:
        click.echo(_engram_line(e), err=True)
        click.confirm("Forget this engram?", abort=True, err=True)
    mem.forget(engram_id)
    click.echo(f"forgotten: {engram_id}")


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
        click.echo(f"imported {len(added)} new engram{'s' if len(added) != 1 else ''}, "
                   f"{len(known)} already known, from {source}")


@cli.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(("jsonl", "plur-yaml", "claude-dir")), default=None,
              help="Default: from the path (no suffix or folder = claude-dir, .jsonl, .yaml).")
@click.option("--scope", default=None, help="Only this exact scope.")
@click.option("--status", type=click.Choice(STATUSES), default=None)
@click.option("--force", is_flag=True, help="Replace an existing file / write into a non-empty folder.")
@click.pass_obj
def export(app: _App, target: Path, fmt: str | None, scope: str | None, status: str | None, force: bool) -> None:
    """Export engrams (oldest first) to TARGET: JSONL, PLUR engrams.yaml or a Claude memory folder."""
    from .store.transfer import write_engrams

    engrams = app.memory.list(scope=scope, status=status)[::-1]
    n = write_engrams(engrams, target, fmt, force=force)
    click.echo(f"exported {n} engram{'s' if n != 1 else ''} to {target}")


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--no-model", is_flag=True, help="Skip resolving the embedding model (fast).")
@click.pass_obj
def doctor(app: _App, as_json: bool, no_model: bool) -> None:
    """Store health: counts, quarantined files, lock state, and the model in use and why."""
    mem = app.memory
    report = mem.doctor(load_model=not no_model)
    report["manifest"] = mem.store.manifest_info()
    if as_json:
        _emit_json(report)
        return
    eng = report["engrams"]

    def counts(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "-"

    click.echo(f"home         {report['home']}")
    click.echo(f"engrams      {eng['total']}  (status: {counts(eng['by_status'])})")
    click.echo(f"  by scope   {counts(eng['by_scope'])}")
    click.echo(f"  by type    {counts(eng['by_type'])}")
    lock = report["lock"]
    owner = lock.get("owner") or {}
    held = f"held (pid {owner.get('pid', '?')} since {owner.get('since', '?')})" if lock["locked"] else "free"
    click.echo(f"lock         {held}  {lock['path']}")
    q = report["quarantined"]
    click.echo(f"quarantined  {len(q)} file{'s' if len(q) != 1 else ''}")
    for item in q:
        click.echo(f"  {item['path']}\n    was {item['original']} ({item['when']}): {_one_line(item['reason'])}")
    model = report.get("model") or {}
    if "source" in model:
        name = model.get("name") or "none (BM25 only)"
        click.echo(f"model        {name}  [{model.get('source')}] {model.get('reason') or ''}".rstrip())
        for w in model.get("warnings") or []:
            click.echo(f"  warning: {_one_line(w)}")
    else:
        click.echo(f"model        {model.get('requested')} (not resolved: --no-model)")


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
        click.echo(f"{'rank':>4} {'score':>8} {'bm25#':>5} {'bm25':>8} {'dense#':>6} {'cosine':>7}  engram")
    for h in hits:
        if explain:
            click.echo(f"{h.rank:>4} {h.score:>8.4f} {_fmt(h.bm25_rank, 'd'):>5} {_fmt(h.bm25_score):>8} "
                       f"{_fmt(h.dense_rank, 'd'):>6} {_fmt(h.dense_score):>7}  {h.engram.id}  "
                       f"{_summary(h.engram.statement, 70)}")
        else:
            click.echo(f"{h.rank:>3}. {h.engram.id}  {_summary(h.engram.statement)}")
    if not hits:
        click.echo("no engrams recalled", err=True)


@cli.command()
@click.pass_obj
def reindex(app: _App) -> None:
    """Rebuild the BM25 and dense indexes from the engram files."""
    out = app.memory.reindex()
    click.echo("reindexed: " + ", ".join(f"{k} {v}" for k, v in out.items()))


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
    click.echo(block if block else "(empty memory block: nothing recalled)")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=7777, show_default=True)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@click.pass_obj
def serve(app: _App, host: str, port: int, open_browser: bool) -> None:
    """Serve the local web page (engrams, recalls, injections, playground)."""
    from .web.server import serve as run_server

    run_server(app.home, host, port, open_browser)



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
