"""Human and JSON output of the ``plur`` command: control sequences neutralised, one JSON document on
stdout with ``--json``, and the quarantine warning every command that read the store gives.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ..web.display import safe_text
from ..service.session import Session as App

if TYPE_CHECKING:  # pragma: no cover
    from ..store.engram import Engram


def one_line(text: str) -> str:
    """Line breaks -> spaces (other whitespace is kept: it may be part of a quoted value)."""
    return str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def echo(text: str = "", **kwargs: Any) -> None:
    """click.echo of human output, control sequences neutralised (see :func:`safe_text`)."""
    click.echo(safe_text(text), **kwargs)


def quarantine_count(ctx: click.Context) -> int:
    app = ctx.obj
    if not isinstance(app, App):
        return 0
    try:
        return app.quarantined()
    except Exception:  # noqa: BLE001 - a warning must never turn into an error
        return 0


def warn_quarantined(ctx: click.Context) -> None:
    """Every command that read the store says, on stderr, how many files are quarantined (until dealt with)."""
    n = quarantine_count(ctx)
    if not n:
        return
    if getattr(ctx.obj, "json_output", False):
        click.echo(json.dumps({"warning": "quarantined", "quarantined": n,
                               "see": "plur doctor"}), err=True)
    else:
        click.echo(f"plur: warning: {n} file{'s are' if n != 1 else ' is'} quarantined (could not be loaded); "
                   "see `plur doctor`, fix the file, then `plur doctor --restore NAME`", err=True)


#: The ``--json`` flag of every command that reports a result (one JSON document on stdout).
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")


def emit_json(data: Any) -> None:
    ctx = click.get_current_context(silent=True)
    if ctx is not None and isinstance(ctx.find_root().obj, App):
        ctx.find_root().obj.json_output = True
        if isinstance(data, dict) and "quarantined" not in data:
            data = {**data, "quarantined": quarantine_count(ctx.find_root())}
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def summary(text: str, width: int = 90) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def engram_line(e: Engram) -> str:
    flags = ("*" if e.pinned else " ") + ("r" if e.status == "retired" else " " if e.is_current() else "x")
    return f"{e.id} {flags} {e.type:<9} {e.scope:<16} {summary(e.statement)}"


def fmt_number(x: float | None, spec: str = ".4f") -> str:
    return "-" if x is None else format(x, spec)
