"""The ``plur`` command line (click). Thin: every command is a few calls on :class:`plur.memory.Memory`.

One module per command group, each imported only when one of its commands runs
(:class:`~plur.cli.group.LazyGroup`, click's documented lazy-loading pattern):

===================  =====================================================================
:mod:`.learn`        learn
:mod:`.browse`       list, show
:mod:`.edit`         edit, update, supersede, pin, unpin
:mod:`.forget`       forget, sessions
:mod:`.transfer`     export
:mod:`.imports`      import, ingest
:mod:`.link`         link claude-code, link list, link remove
:mod:`.migrate`      migrate (folder <-> PostgreSQL)
:mod:`.team`         team add, list, grant, revoke, remove, rotate (members of a PostgreSQL store)
:mod:`.recall`       recall, section
:mod:`.health`       init, doctor, reindex
:mod:`.serve`        serve, mcp
:mod:`.hook`         hook claude-code (its --help and --print-config; a hook run skips click)
:mod:`.project`      project which, list, bind, unbind (:mod:`plur.project`)
:mod:`.completion`   completion (bash, zsh, fish)
``service``          :mod:`plur.service.commands` (start, stop, status)
===================  =====================================================================

Errors: any :class:`~plur.errors.PlurError` becomes one line on stderr
(``plur: error: <message>``) and the exit code of its class
(``PlurError.exit_code``), in one place: :meth:`plur.cli.group.PlurGroup.invoke`.

Human output by default; ``--json`` where offered prints one JSON document on stdout
(:mod:`plur.cli.output`).

``recall``, ``section``, ``learn``, ``forget``, ``doctor`` and ``list --limit N`` go through a running local service
(:mod:`plur.service.client`) when the home has one, and work in-process otherwise; ``--verbose``
says which (:meth:`plur.service.session.Session.service`).

``plur recall`` and ``plur section`` in their common forms are first tried by the thin client
:mod:`plur.cli.fast` (no click import; through a running service only); any other form, or no
service, runs the click group :data:`cli` (defined in :mod:`plur.cli.root`, imported on first use).
"""

from __future__ import annotations

import sys
import warnings
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is ~2 ms of a cold CLI recall
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

#: command name -> where it lives (imported when the command runs).
COMMANDS = {
    "learn": "plur.cli.learn.learn",
    "list": "plur.cli.browse.list_",
    "show": "plur.cli.browse.show",
    "edit": "plur.cli.edit.edit",
    "update": "plur.cli.edit.update",
    "supersede": "plur.cli.edit.supersede",
    "pin": "plur.cli.edit.pin",
    "unpin": "plur.cli.edit.unpin",
    "forget": "plur.cli.forget.forget",
    "sessions": "plur.cli.forget.sessions",
    "import": "plur.cli.imports.import_",
    "export": "plur.cli.transfer.export",
    "ingest": "plur.cli.imports.ingest",
    "link": "plur.cli.link.link",
    "migrate": "plur.cli.migrate.migrate",
    "team": "plur.cli.team.team",
    "recall": "plur.cli.recall.recall",
    "section": "plur.cli.recall.section",
    "init": "plur.cli.health.init",
    "doctor": "plur.cli.health.doctor",
    "reindex": "plur.cli.health.reindex",
    "serve": "plur.cli.serve.serve",
    "mcp": "plur.cli.serve.mcp",
    "hook": "plur.cli.hook.hook",
    "project": "plur.cli.project.project",
    "service": "plur.service.commands.service",
    "completion": "plur.cli.completion.completion",
}


def __getattr__(name: str) -> Any:
    if name == "cli":  # the click group: imported only when the thin client does not answer
        from .root import cli

        return cli
    raise AttributeError(f"module 'plur.cli' has no attribute {name!r}")


def log_to_stderr(json_lines: bool = False) -> None:
    """plur's warnings on stderr as bare lines (what logging's last resort printed), each fallback line once
    per process however many times the model is resolved; with ``json_lines`` (a ``--json`` run) each is one
    JSON object, ``{"warning": "model-fallback" | "log", "message": ...}``, as every warning of a JSON run."""
    import logging

    class Stderr(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.said: set[str] = set()
            self.json_lines = False

        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            fallback = record.name == "plur.embed.fallback"
            if fallback:
                if text in self.said:
                    return
                self.said.add(text)
            from ..screen.logs import redact_line
            from .fast import warning_line

            line = warning_line("model-fallback" if fallback else "log", redact_line(text), self.json_lines)
            sys.stderr.write(line + "\n")  # the current stderr (click's test runner swaps it)

    logger = logging.getLogger("plur")
    handler = next((h for h in logger.handlers if type(h).__name__ == "Stderr"), None)
    if handler is None:
        handler = Stderr()
        logger.addHandler(handler)
    handler.json_lines = json_lines  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        if "recall" in args or "section" in args:  # the thin client's commands; others go straight to click
            # before logging is set up: the thin client logs nothing and loads no model, and importing
            # logging (threading, traceback, string, ...) was ~a third of its own imports (issue 49)
            from .fast import run

            code = run(args)
            if code is not None:
                return code
        # A model fallback is said once on stderr, as its log line (plur.embed.fallback), not also as a warning.
        warnings.filterwarnings("ignore", message="plur: embedding model")
        warnings.filterwarnings("ignore", message="plur: no embedding model")
        log_to_stderr(json_lines="--json" in args)
        from .root import cli

        cli.main(args=argv, prog_name="plur", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BrokenPipeError:  # `plur list | head`
        sys.stderr.close()
        return 141
    return 0


__all__ = ["COMMANDS", "cli", "log_to_stderr", "main"]
