"""``plur recall`` and ``plur section``: what memory returns for a query (through the service when one runs)."""

from __future__ import annotations

from typing import Any

import click

from ..service.session import Session as App
from ..store.engram import TYPES, _check_scope
from .fast import BELOW_FLOOR, BELOW_FLOOR_HINT, EMPTY_SECTION, say_service_warnings
from .output import echo, emit_json, fmt_number, json_option, summary
from .scopes import HERE_HELP, nonblank, scope_value

MODES = ("hybrid", "bm25", "dense")


@click.command()
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=0), default=10, show_default=True, help="Top-k hits.")
@click.option("--scope", default=None, callback=scope_value, help="Recall within this scope (plus global); " + HERE_HELP)
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True, help="hybrid (BM25 + dense, fused), bm25 or dense alone.")
@click.option("--type", "types", type=click.Choice(TYPES), multiple=True, help="Only this type (repeat for more).")
@click.option("--tag", "tags", multiple=True, callback=nonblank, help="Only engrams with this tag (repeat: any of them).")
@click.option("--min-score", "min_score", type=click.FloatRange(0.0, 1.0), default=None,
              help="Drop hits scoring below this (scores are in [0, 1], higher is better).")
@click.option("--include-expired", is_flag=True, help="Also show retired (superseded) and expired engrams.")
@click.option("--agent", default=None, callback=nonblank, help="Who is asking (recorded in stats.db).")
@click.option("--explain", is_flag=True,
              help="Show the fused score, each leg's rank and score, and the hits the relevance floor keeps out.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")
@click.pass_obj
def recall(app: App, query: str, k: int, scope: str | None, mode: str, types: tuple[str, ...],
           tags: tuple[str, ...], min_score: float | None, include_expired: bool, agent: str | None,
           explain: bool, as_json: bool) -> None:
    """Recall the engrams most relevant to QUERY, best first."""
    if not query.strip():
        from ..errors import ValidationError

        raise ValidationError(f"the query {query!r} is blank: give the words to look for, e.g. "
                              "plur recall \"what is my dog called\"")
    if scope is not None:  # before a service is started for it
        _check_scope(scope)
    missing = app.missing_home()
    if missing is not None:  # a read never creates the home (a mistyped --home looked like an empty memory)
        app.say_no_home(missing)
        emit_json([]) if as_json else echo("no engrams recalled", err=True)
        return
    client = app.service("recall", start=mode == "hybrid")
    if client is not None:
        from ..index.recall import Hit

        answer = client.recall(query, k, scope=scope, mode=mode, agent=agent, types=list(types) or None,
                               tags=list(tags) or None, min_score=min_score, include_expired=include_expired,
                               explain=explain)
        say_service_warnings(answer, as_json)
        hits = [Hit.from_dict(h) for h in answer["hits"]]
    else:
        mem = app.memory
        mode = "bm25" if app.keyword_only else mode  # a service is starting: no model load here (issue 26)
        mem.catch_up(progress=True, need_dense=mode != "bm25")  # index catch-up, progress on stderr
        hits = mem.recall(query, k, scope=scope, mode=mode, agent=agent, types=types or None, tags=tags or None,
                          min_score=min_score, include_expired=include_expired, explain=explain)
    if as_json:
        emit_json([h.to_dict() for h in hits])
        return
    if explain:
        echo(f"{'rank':>4} {'score':>8} {'bm25#':>5} {'bm25':>8} {'dense#':>6} {'cosine':>7}  engram")
    for h in hits:
        flag = "" if h.engram.is_current() else f" [{'retired' if h.engram.status != 'active' else 'expired'}]"
        if explain:
            echo(f"{h.rank:>4} {h.score:>8.4f} {fmt_number(h.bm25_rank, 'd'):>5} {fmt_number(h.bm25_score):>8} "
                  f"{fmt_number(h.dense_rank, 'd'):>6} {fmt_number(h.dense_score):>7}  {h.engram.id}{flag}  "
                       f"{summary(h.engram.statement, 70)}")
            for neighbour, terms in h.context_matches:
                click.echo(f"{'':>36}  via neighbouring turn {neighbour}: {', '.join(terms)}")
            if h.date_match:
                click.echo(f"{'':>36}  date named in the query matches ({h.engram.created.date().isoformat()})")
            if h.below_floor:
                click.echo(f"{'':>36}  kept out of the memory block: {h.below_floor}")
            if h.earlier_than:
                click.echo(f"{'':>36}  earlier version: {h.earlier_than} states this later (newest first)")
            if h.updates:
                click.echo(f"{'':>36}  newer version of {h.updates}: placed before it, in the block with it")
            if getattr(h, "answers", ""):
                click.echo(f"{'':>36}  in the memory block: it answers one question of the query, "
                           f"\"{summary(h.answers, 60)}\" (judged against that question alone)")
        else:
            below = BELOW_FLOOR if h.below_floor else ""
            earlier = f" [earlier than {h.earlier_than}]" if h.earlier_than else ""
            echo(f"{h.rank:>3}. {h.engram.id}{flag}{below}{earlier}  {summary(h.engram.statement)}")
    if not explain and any(h.below_floor for h in hits):
        echo(BELOW_FLOOR_HINT, err=True)
    if not hits:
        echo("no engrams recalled", err=True)


@click.command()
@click.argument("message", callback=nonblank)
@click.option("--agent", required=True, callback=nonblank, help="The agent the block is for.")
@click.option("--scope", default=None, callback=scope_value, help="Recall within this scope (plus global); " + HERE_HELP)
@json_option
@click.pass_obj
def section(app: App, message: str, agent: str, scope: str | None, as_json: bool) -> None:
    """Print the memory block that would be injected for MESSAGE.

    An empty block prints nothing on stdout (what a host injects: nothing) and the reason on stderr.
    """
    if scope is not None:  # before a service is started for it
        _check_scope(scope)
    missing = app.missing_home()
    if missing is not None:
        app.say_no_home(missing)
        _print_block({"agent_id": agent, "text": "", "engram_ids": [], "tokens": 0, "hash": ""}, as_json)
        return
    client = app.service("section", start=True)
    if client is not None:
        got = client.block(agent, message, scope)
        say_service_warnings(got, as_json)
        block = {k: got.get(k) for k in ("agent_id", "text", "engram_ids", "tokens", "hash")}
    else:  # the same selection the recall worker makes: pinned engrams of the scope first, then the hits
        from ..prompt.selection import recall_block

        mode = "bm25" if app.keyword_only else "hybrid"  # a service is starting: no model load here
        app.memory.catch_up(progress=True, need_dense=mode != "bm25")
        b = recall_block(app.memory, message, scope=scope, agent=agent, mode=mode)
        block = {"agent_id": agent, "text": b.text, "engram_ids": list(b.engram_ids), "tokens": b.tokens,
                 "hash": b.hash}
    _print_block(block, as_json)


def _print_block(block: dict[str, Any], as_json: bool) -> None:
    """The block on stdout ('' when empty: nothing at all), or its JSON; an empty block's reason on stderr."""
    if as_json:
        emit_json(block)
    elif block["text"]:
        echo(block["text"])
    if not block["text"]:
        echo(EMPTY_SECTION, err=True)
