"""``plur learn``: remember a statement (through the service when one runs)."""

from __future__ import annotations

import sys

import click

from ..errors import ValidationError
from ..service.session import Session as App
from ..store.engram import TYPES, Engram
from .output import echo, emit_json
from .scopes import HERE_HELP, nonblank, scope_value


@click.command()
@click.argument("statement")
@click.option("--scope", default="global", show_default=True, callback=scope_value,
              help="global, project:<name> or agent:<name>; " + HERE_HELP)
@click.option("--type", "type_", type=click.Choice(TYPES), default="fact", show_default=True, help="What kind of memory this is.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option("--domain", default=None, callback=nonblank, help="Dotted domain, e.g. dev.testing.")
@click.option("--rationale", default=None, callback=nonblank, help="Why this is worth remembering.")
@click.option("--pin", is_flag=True, help="Pinned engrams go first in the memory block.")
@click.option("--created", default=None, help="When it was true/said (ISO-8601, e.g. 2025-07-25T10:00Z); default now.")
@click.option("--ttl", default=None, help="Expire after this long, e.g. 30d, 12h, 2w (then recall skips it).")
@click.option("--valid-until", "valid_until", default=None, help="Expire at this time (ISO-8601).")
@click.option("--json", "as_json", is_flag=True, help="Print {engram, created, tags_added} as JSON.")
@click.pass_obj
def learn(app: App, statement: str, scope: str, type_: str, tags: tuple[str, ...], domain: str | None,
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
    engram, is_new = mem.learn_outcome(statement, scope=scope, type=type_, tags=tags, domain=domain,
                                       rationale=rationale, pinned=pin, created=created, ttl=ttl,
                                       valid_until=valid_until)  # decided under the store's lock
    added = [] if is_new or known is None else [t for t in engram.tags if t not in known.tags]
    _learned(engram, is_new, added, as_json)


#: A ``--created`` this far ahead of the clock (seconds) is noted: a clock skew between machines is not.
FUTURE_SLACK_S = 3600.0


def _learned(engram: Engram, is_new: bool, added: list[str], as_json: bool) -> None:
    from ..store.times import format_time, utcnow

    if is_new and engram.valid_until is not None and engram.valid_until <= utcnow():
        click.echo(f"note: {engram.id} is already expired (valid_until {format_time(engram.valid_until)} is in the "
                   "past): recall and the memory block skip it; `plur list` still shows it", err=True)
    if is_new and (engram.created - utcnow()).total_seconds() > FUTURE_SLACK_S:
        click.echo(f"note: {engram.id} is dated in the future (created {format_time(engram.created)}): it lists "
                   "as the newest engram and dates in recall are counted from that day (a typo? fix `created` with "
                   f"`plur edit {engram.id}`)", err=True)
    if as_json:
        emit_json({"engram": engram.to_dict(), "created": is_new, "tags_added": added})
    elif is_new:
        click.echo(engram.id)
    else:
        echo(f"already known: {engram.id}" + (f" (tags added: {', '.join(added)})" if added else ""))
