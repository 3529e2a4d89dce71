"""``plur migrate``: copy every engram between a folder store and a PostgreSQL database (:mod:`plur.store.migrate`)."""

from __future__ import annotations

import click

from ..service.session import Session as App
from .output import echo, emit_json
from .scopes import nonblank


@click.command()
@click.option("--from", "source", default=None, metavar="HOME|URI", callback=nonblank,
              help="Where the engrams are: a plur home folder or postgresql://...; default this home's store.")
@click.option("--to", "target", required=True, metavar="HOME|URI", callback=nonblank, help="Where they go: a home folder or postgresql://...")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.pass_obj
def migrate(app: App, source: str | None, target: str, as_json: bool) -> None:
    """Copy every engram, exactly (ids, unknown keys, provenance), between a folder and PostgreSQL.

    Re-running skips what is already there. Afterwards set `store` in config.toml (or PLUR_STORE) to use
    the target. Indexes, caches and stats.db stay with each home.
    """
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
