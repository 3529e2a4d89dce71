"""The thin client: ``plur recall`` and ``plur section`` answered through a running service without click.

A hook runs ``plur recall QUERY`` cold, once per prompt; importing click and rebuilding
:class:`~plur.store.engram.Engram` objects from the service's JSON was most of that process's own
work. :func:`run` recognises only the common, fully valid forms of those two commands (the pattern of
Gradle's and Bazel's thin clients), sends them over the kept-alive socket of
:mod:`plur.service.client` and prints what the click command would print, byte for byte. Anything
else returns ``None`` *before anything is printed or sent*, and :func:`plur.cli.main` runs the full
click CLI, which then gives the usual help, value errors and in-process work:

* an option or form not listed in :data:`RECALL` / :data:`SECTION` (``--help``, ``--explain``,
  ``--``, ``-k5``, a repeated single-valued option, a second positional, a value starting with ``-``);
* a value click would check and might refuse (``-k`` not a plain number, ``--min-score`` outside
  ``[0, 1]``, an unknown ``--mode`` or ``--type``, an empty value, a blank recall query, an argument that is
  not UTF-8);
* ``--scope here`` or a scope with non-ASCII characters (the click command resolves and normalises it);
* no service for the home, or one that does not accept a connection (nothing was sent);
* stdout or stderr not UTF-8 (click's echo re-wraps such a stream; ``print`` would fail on ``…``).

Once a request was sent, its outcome is printed here: a :class:`~plur.errors.PlurError` becomes
``plur: error: <message>`` and its exit code, as :class:`plur.cli.group.PlurGroup` does, followed by the
quarantine warning. ``tests/test_cli_fast.py`` runs a matrix of argument forms both ways and fails on
any difference in stdout, stderr or exit code.
"""

from __future__ import annotations

import json
import sys
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is ~2 ms of a cold CLI recall
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

from ..web.display import safe_text
from ..errors import PlurError
from ..service.session import Session

#: The recall modes and engram types click accepts (``plur.index.recall.MODES``, ``plur.store.engram.TYPES``;
#: a test checks they are the same).
MODES = ("hybrid", "bm25", "dense")
TYPES = ("user", "project", "feedback", "reference", "fact", "procedure")

#: option -> (keyword, kind): "value" (single), "many" (repeatable), "flag"
RECALL = {"-k": ("k", "value"), "--scope": ("scope", "value"), "--mode": ("mode", "value"),
          "--type": ("types", "many"), "--tag": ("tags", "many"), "--min-score": ("min_score", "value"),
          "--include-expired": ("include_expired", "flag"), "--agent": ("agent", "value"),
          "--json": ("as_json", "flag")}
SECTION = {"--agent": ("agent", "value"), "--scope": ("scope", "value"), "--json": ("as_json", "flag")}

#: What ``plur section`` says on stderr for an empty block, whose stdout is '' (both paths; the click one
#: imports it from here): a shell hook that injects stdout injects nothing.
EMPTY_SECTION = "plur: empty memory block: nothing to show (no memory here, or nothing fits the token budget)"
#: The mark of a plain ``plur recall`` line whose hit the relevance floor keeps out of the memory block,
#: and the one stderr line that explains it (both paths; the click one imports them from here).
BELOW_FLOOR = " [below floor]"
BELOW_FLOOR_HINT = ("plur: hits marked [below floor] stay out of the memory block (relevance floor); "
                    "`plur recall --explain` says why")

def warning_line(kind: str, text: str, as_json: bool) -> str:
    """A warning for stderr: the ``plur: ...`` line itself, or with ``--json`` one JSON object
    ``{"warning": kind, "message": text}`` (stdout holds only the command's JSON document)."""
    return json.dumps({"warning": kind, "message": text}, ensure_ascii=False) if as_json else text


def say_service_warnings(answer: dict[str, Any], as_json: bool) -> None:
    """The service's ``warnings`` (its model fell back), on stderr as an in-process command says them."""
    for text in answer.get("warnings") or ():
        _out(warning_line("model-fallback", str(text), as_json), err=True)


def _parse(args: list[str], spec: dict[str, tuple[str, str]]) -> tuple[str, dict[str, Any]] | None:
    """The one positional and the options of ``args``, or ``None`` for any form outside ``spec``."""
    positional: list[str] = []
    opts: dict[str, Any] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-") or a == "-":
            positional.append(a)
            i += 1
            continue
        name, eq, attached = a.partition("=")
        if name not in spec or (eq and not name.startswith("--")):
            return None
        key, kind = spec[name]
        if kind == "flag":
            if eq or key in opts:
                return None
            opts[key] = True
            i += 1
            continue
        if eq:
            value, i = attached, i + 1
        elif i + 1 < len(args):
            value, i = args[i + 1], i + 2
        else:
            return None
        if not value.strip() or value.startswith("-"):
            return None
        if kind == "many":
            opts.setdefault(key, []).append(value)
        elif key in opts:
            return None
        else:
            opts[key] = value
    if len(positional) != 1:
        return None
    return positional[0], opts


def _recall_values(opts: dict[str, Any]) -> dict[str, Any] | None:
    """Checked values of a recall (``None``: let click check and say)."""
    k = opts.get("k", "10")
    if not (k.isascii() and k.isdigit()):
        return None
    min_score = opts.get("min_score")
    if min_score is not None:
        try:
            min_score = float(min_score)
        except ValueError:
            return None
        if not 0.0 <= min_score <= 1.0:  # also refuses nan
            return None
    mode = opts.get("mode", "hybrid")
    types = opts.get("types") or []
    if mode not in MODES or any(t not in TYPES for t in types):
        return None
    return {"k": int(k), "scope": opts.get("scope"), "mode": mode, "agent": opts.get("agent"),
            "types": types or None, "tags": opts.get("tags") or None, "min_score": min_score,
            "include_expired": bool(opts.get("include_expired"))}


def _split(argv: list[str]) -> tuple[str | None, bool, str, list[str]] | None:
    """``--home``, ``-v`` and the command before it, or ``None``."""
    home: str | None = None
    verbose = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-v", "--verbose") and not verbose:
            verbose, i = True, i + 1
        elif a == "--home" and home is None and i + 1 < len(argv) and argv[i + 1] and not argv[i + 1].startswith("-"):
            home, i = argv[i + 1], i + 2
        elif a.startswith("--home=") and home is None and len(a) > 7 and a[7] != "-":
            home, i = a[7:], i + 1
        elif a in ("recall", "section"):
            return home, verbose, a, argv[i + 1:]
        else:
            return None
    return None


def _out(text: str, err: bool = False) -> None:
    """What ``plur.cli.output.echo`` writes: the text made safe, a newline, flushed."""
    stream = sys.stderr if err else sys.stdout
    stream.write(safe_text(text) + "\n")
    stream.flush()


def _summary(text: str, width: int = 90) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _flag(engram: dict[str, Any]) -> str:
    """`` [retired]`` / `` [expired]`` / ``""``: :meth:`Engram.is_current` on the JSON form."""
    status = engram.get("status", "active")
    if status != "active":
        return " [retired]"
    if "valid_from" in engram or "valid_until" in engram:
        from ..store.times import parse_time, utcnow

        now = utcnow()
        start, end = engram.get("valid_from"), engram.get("valid_until")
        if (start is not None and parse_time(start) > now) or (end is not None and parse_time(end) <= now):
            return " [expired]"
    return ""


def _warn_quarantined(app: Session, as_json: bool) -> None:
    """The quarantine warning of ``plur.cli.output.warn_quarantined``."""
    try:
        n = app.quarantined()
    except Exception:  # noqa: BLE001 - a warning must never turn into an error
        return
    if not n:
        return
    if as_json:
        _out(json.dumps({"warning": "quarantined", "quarantined": n, "see": "plur doctor"}), err=True)
    else:
        _out(f"plur: warning: {n} file{'s are' if n != 1 else ' is'} quarantined (could not be loaded); "
             "see `plur doctor`, fix the file, then `plur doctor --restore NAME`", err=True)


def _connect(app: Session, what: str):  # noqa: ANN202 - Client | None
    """``app.service(what)`` when it connects, saying what it says then; ``None`` (silently) otherwise."""
    verbose, app.verbose = app.verbose, False
    try:
        client = app.service(what)
    finally:
        app.verbose = verbose
    if client is not None and verbose:
        client.request("GET", "/status")  # what Session.service checks with --verbose
        app.say(f"{what}: via the service (service pid {client.info.get('pid')}, {client.via})")
    return client


def run(argv: list[str]) -> int | None:
    """Answer ``argv`` (without the program name) through the service; its exit code, or ``None`` to use click."""
    for stream in (sys.stdout, sys.stderr):  # click.echo re-wraps a misconfigured (e.g. ASCII) stream: leave it that
        encoding = getattr(stream, "encoding", None)
        if encoding is not None and encoding.lower().replace("-", "").replace("_", "") != "utf8":
            return None
    for a in argv:
        try:
            a.encode("utf-8")
        except UnicodeEncodeError:
            return None
    split = _split(argv)
    if split is None:
        return None
    home, verbose, command, rest = split
    parsed = _parse(rest, RECALL if command == "recall" else SECTION)
    if parsed is None:
        return None
    text, opts = parsed
    if not text.strip():
        return None  # a blank query or message: click refuses it with the usual one line
    values = _recall_values(opts) if command == "recall" else {k: v for k, v in opts.items() if k != "as_json"}
    if values is None or (command == "section" and "agent" not in values):
        return None
    scope = values.get("scope")
    if scope is not None and (scope == "here" or not scope.isascii()):
        return None  # `here` (the current folder's project) and NFC normalising: the click command does them
    from pathlib import Path

    app = Session(Path(home) if home is not None else None, verbose)
    as_json = bool(opts.get("as_json"))
    try:
        try:
            client = _connect(app, command)
            if client is None:
                return None
            if command == "section":
                got = client.block(values["agent"], text, values.get("scope"))
                say_service_warnings(got, as_json)
                if as_json:
                    app.json_output = True
                    doc = {k: got.get(k) for k in ("agent_id", "text", "engram_ids", "tokens", "hash")}
                    sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
                    sys.stdout.flush()
                elif got["text"]:
                    _out(got["text"])
                if not got["text"]:
                    _out(EMPTY_SECTION, err=True)
                return 0
            answer = client.recall(text, **values)
            say_service_warnings(answer, as_json)
            hits = answer["hits"]
            if as_json:
                app.json_output = True
                sys.stdout.write(json.dumps(hits, ensure_ascii=False, indent=2, default=str) + "\n")
                sys.stdout.flush()
                return 0
            for h in hits:
                e = h["engram"]
                below = BELOW_FLOOR if h.get("below_floor") else ""
                _out(f"{h['rank']:>3}. {e['id']}{_flag(e)}{below}  {_summary(e['statement'])}")
            if any(h.get("below_floor") for h in hits):
                _out(BELOW_FLOOR_HINT, err=True)
            if not hits:
                _out("no engrams recalled", err=True)
            return 0
        except PlurError as exc:
            one_line = str(exc).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
            _out(f"plur: error: {one_line}", err=True)
            return exc.exit_code
    finally:
        if app._clients:
            _warn_quarantined(app, as_json)
        app.close()
