"""The home's upkeep: ``plur init``, ``plur doctor`` (health report, ``--restore``) and ``plur reindex``."""

from __future__ import annotations

import click

from ..service.session import Session as App
from .output import echo, emit_json, json_option, one_line, summary
from .scopes import nonblank

#: Doors of the screen (``stats.db`` table ``screened``) that write to the logs of ``stats.db`` rather than notes.
LOG_DOORS = ("recall", "feedback")


@click.command()
@json_option
@click.pass_obj
def init(app: App, as_json: bool) -> None:
    """Create the home folder (idempotent)."""
    store = app.memory.store
    existed = store.root.is_dir()
    from ..store.atomic import private_dirs

    private_dirs(store.root)
    if as_json:
        emit_json({"home": str(store.home), "created": not existed})
    else:
        echo(f"{'already initialised' if existed else 'initialised'}: {store.home}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.option("--no-model", is_flag=True, help="Skip resolving the embedding model (fast).")
@click.option("--restore", "restore", default=None, metavar="NAME", callback=nonblank,
              help="Move a quarantined file you fixed back into the store (its name as listed, or the engram id); "
                   "it is validated first.")
@click.option("--discard", "discard", default=None, metavar="NAME", callback=nonblank,
              help="Delete a quarantined file you do not want back (its name as listed, or the engram id).")
@click.option("--fix", is_flag=True, help="Make the home owner-only: folders 0700, files 0600 (an older home).")
@click.pass_obj
def doctor(app: App, as_json: bool, no_model: bool, restore: str | None, discard: str | None, fix: bool) -> None:
    """Store health: counts, quarantined files, lock state, the model in use and why, the service."""
    if fix:
        from ..store.modes import repair

        from ..store.quarantine import shown

        for path, old, new in repair(app.memory.home):
            echo(f"made owner-only: {shown(str(path))} {old:04o} -> {new:04o}")
    if restore is not None:
        e = app.memory.store.restore(restore)
        if as_json:
            emit_json({"restored": e.to_dict()})
        else:
            echo(f"restored: {e.id} ({summary(e.statement, 60)})")
        return
    if discard is not None:
        from ..store.quarantine import shown

        gone = shown(str(app.memory.store.discard(discard)))  # the name as listed: UTF-8 on one line
        emit_json({"discarded": gone}) if as_json else echo(f"discarded: {gone}")
        return
    missing = app.missing_home()
    if missing is not None and not fix:  # report, do not create (a mistyped --home / PLUR_HOME)
        if as_json:
            emit_json({"home": str(missing), "exists": False})
        else:
            echo(f"home         {missing} does not exist: nothing learned there yet (`plur learn` or "
                 "`plur init` creates it)")
        return
    from ..config import load_settings_reporting

    settings, problems = load_settings_reporting(app.home)
    if problems:  # every other command refuses to run: report them, and the rest of the home on the defaults
        app.settings = settings
    client = app.service("doctor")
    if client is not None:
        report = client.doctor()
        report["service"] = {"running": True, **{k: client.info.get(k) for k in ("pid", "url", "socket")}}
    else:
        mem = app.memory
        report = mem.doctor(load_model=not no_model)
        report["manifest"] = mem.store.manifest_info()
        report["service"] = {"running": False}
    report["settings_problems"] = problems
    if as_json:
        emit_json(report)
        _refuse_if(problems)
        return
    eng = report["engrams"]

    def counts(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "-"

    if problems:
        echo(f"settings     {len(problems)} invalid: every other plur command refuses to run until "
             f"{'it is' if len(problems) == 1 else 'they are'} fixed; the report below ignores {'it' if len(problems) == 1 else 'them'}")
        for p in problems:
            echo(f"  error: {one_line(p)}")
    echo(f"home         {report['home']}")
    if not report.get("home_private", True):
        exposed = report.get("too_open") or [f"{report['home']} {report['home_mode']}"]
        shown = ", ".join(exposed[:3]) + (f" and {len(exposed) - 3} more" if len(exposed) > 3 else "")
        echo(f"  warning: other users can read {len(exposed)} entr{'y' if len(exposed) == 1 else 'ies'} "
             f"({shown}); run: plur doctor --fix")
    echo(f"engrams      {eng['total']}  (status: {counts(eng['by_status'])})")
    echo(f"  by scope   {counts(eng['by_scope'])}")
    echo(f"  by type    {counts(eng['by_type'])}")
    layout = report.get("layout") or {}
    if layout.get("flat"):
        echo(f"  layout     {layout['month']} files in month folders, {layout['flat']} in engrams/ itself (an older "
             "plur's; read where they are; `plur migrate --layout month` moves them)")
    redacted = report.get("secrets_redacted") or {}
    doors = report.get("secrets_redacted_by_door") or {}
    logged = sum(n for door, n in doors.items() if door in LOG_DOORS)
    echo(f"secrets      {sum(redacted.values())} redacted before writing"
         + (f" ({counts(redacted)})" if redacted else "")
         + f": {sum(doors.values()) - logged} in notes, {logged} in the recall log")
    lock = report["lock"]
    owner = lock.get("owner") or {}
    held = f"held (pid {owner.get('pid', '?')} since {owner.get('since', '?')})" if lock["locked"] else "free"
    if lock["locked"] is None:
        held = f"unknown ({lock.get('error')}: read-only home, so no write can happen here)"
    echo(f"lock         {held}  {lock['path']}")
    svc = report["service"]
    echo(f"service      pid {svc['pid']}  {svc['socket'] or ''} {svc['url']}" if svc["running"]
          else "service      not running (`plur service start` keeps the model loaded)")
    q = report["quarantined"]
    echo(f"quarantined  {len(q)} file{'s' if len(q) != 1 else ''}")
    for item in q:
        echo(f"  {item['path']}\n    was {item['original']} ({item['when']}): {one_line(item['reason'])}")
    if any(item.get("moved") for item in q):
        echo("  fix a file in place, then: plur doctor --restore NAME (validated before it goes back); "
             "or drop it: plur doctor --discard NAME")
    model = report.get("model") or {}
    if "source" in model:
        name = model.get("name") or "none (BM25 only)"
        said = any(str(w).startswith("plur: embedding model") for w in model.get("warnings") or [])
        reason = "" if said else model.get("reason") or ""  # a fallback's warning below says why, once
        echo(f"model        {name}  [{model.get('source')}] {reason}".rstrip())
        if model.get("precision"):
            echo(f"  precision  {model['precision']} vectors, {model.get('device') or '?'}")
        for w in model.get("warnings") or []:
            echo(f"  warning: {one_line(w)}")
    else:
        echo(f"model        {model.get('requested')} (not resolved: --no-model)")
    _refuse_if(problems)


def _refuse_if(problems: list[str]) -> None:
    """Exit with :class:`~plur.errors.ConfigError`'s status once the report is out, when a setting is invalid."""
    if problems:
        from ..errors import ConfigError

        raise SystemExit(ConfigError.exit_code)


@click.command()
@json_option
@click.pass_obj
def reindex(app: App, as_json: bool) -> None:
    """Rebuild the BM25 and dense indexes from the engram files."""
    out = app.memory.reindex()
    if as_json:
        emit_json({"reindexed": out})
        return
    echo("reindexed: " + ", ".join(f"{k} {v}" for k, v in out.items()))
