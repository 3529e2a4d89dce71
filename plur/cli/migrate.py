"""``plur migrate``: copy every engram between a folder store and a PostgreSQL database (:mod:`plur.store.migrate`),
or move a folder store's files between its layouts (``--layout``, :mod:`plur.store.relayout`)."""

from __future__ import annotations

import click

from ..service.session import Session as App
from .output import echo, emit_json
from .scopes import nonblank


@click.command()
@click.option("--from", "source", default=None, metavar="HOME|URI", callback=nonblank,
              help="Where the engrams are: a plur home folder or postgresql://...; default this home's store.")
@click.option("--to", "target", default=None, metavar="HOME|URI", callback=nonblank, help="Where they go: a home folder or postgresql://...")
@click.option("--layout", type=click.Choice(["month", "flat"]), default=None,
              help="Instead of copying: move this home's engram files into month folders (engrams/YYYY-MM/, what plur "
                   "writes), or all back into engrams/ (flat, for an older plur).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.pass_obj
def migrate(app: App, source: str | None, target: str | None, layout: str | None, as_json: bool) -> None:
    """Copy every engram, exactly (ids, unknown keys, provenance), between a folder and PostgreSQL.

    Re-running skips what is already there. Afterwards set `store` in config.toml (or PLUR_STORE) to use
    the target. Indexes, caches and stats.db stay with each home. With --layout, move this home's files
    between its two layouts instead (safe to stop and re-run; nothing is re-read or re-embedded).
    """
    from ..errors import ValidationError

    if layout is not None:
        if target is not None or source is not None:
            raise ValidationError("--layout moves this home's own files: give it without --from/--to")
        _relayout(app, layout, as_json)
        return
    if target is None:
        raise ValidationError("plur migrate needs --to HOME|URI (where the engrams go), or --layout month|flat")
    from ..store.migrate import migrate as run, open_target
    from ..store.pg.connect import redact

    limit = app.memory.settings.max_statement_bytes
    src = app.memory.store if source is None else open_target(source, limit)
    dst = open_target(target, limit)
    try:
        res = run(src, dst, progress=not as_json)
    finally:
        dst.close()
        if source is not None:
            src.close()
    if as_json:
        emit_json({"copied": res.copied, "skipped": res.skipped, "quarantined": res.quarantined})
        return
    quarantined = f", {res.quarantined} quarantined not copied" if res.quarantined else ""
    echo(f"migrated {res.copied} engram{'s' if res.copied != 1 else ''} to {redact(target)} "
         f"({res.skipped} already there{quarantined})")


def _relayout(app: App, layout: str, as_json: bool) -> None:
    from ..errors import StoreError
    from ..store.relayout import relayout

    store = app.memory.store
    if getattr(store, "remote", False):
        raise StoreError("--layout moves the files of a folder store; this home's store is PostgreSQL, which has none")
    res = relayout(store, layout)
    if as_json:
        emit_json({"layout": res.layout, "moved": res.moved, "already": res.already, "kept": res.kept})
        return
    kept = f", {res.kept} kept where they were (the name they would take is taken; see plur doctor)" if res.kept else ""
    where = "month folders (engrams/YYYY-MM/)" if layout == "month" else "engrams/ (flat)"
    echo(f"moved {res.moved} engram file{'s' if res.moved != 1 else ''} into {where} ({res.already} already there{kept})")
