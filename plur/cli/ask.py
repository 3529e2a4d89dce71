"""Asking the person at the terminal: a yes/no question, and their editor on a file.

Both end in plur's one-line errors instead of click's bare ``Aborted!`` (a question with no one to
answer it: stdin is not a terminal and has no answer) or ``Error: vim: Editing failed`` (an editor that
is not installed or failed), each naming the fix.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..errors import ConfigError, PlurError, ValidationError

#: Editors tried, in order, when neither $VISUAL nor $EDITOR is set (click.edit's order); else ``vi``.
FALLBACK_EDITORS = ("sensible-editor", "vim", "nano")
EDITOR_FIX = "set $VISUAL or $EDITOR to an installed editor, e.g. export EDITOR=nano"


def _stdin_is_terminal() -> bool:
    isatty = getattr(sys.stdin, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def confirm(question: str, refusal: str, *, default: bool = False) -> bool:
    """``click.confirm(question)`` on stderr: the answer, read from stdin.

    Args:
        question: e.g. ``"Forget this engram?"``.
        refusal: the error when no answer can come, naming the fix
            (``"forget needs a confirmation: run it in a terminal or pass -y"``).
        default: the answer to an empty line.

    Raises:
        ValidationError: ``refusal`` (exit 2): stdin is not a terminal and ended without an answer
            (``</dev/null``, a closed pipe).
        click.Abort: Ctrl-C or Ctrl-D at a terminal (click's ``Aborted!``, exit 1).
    """
    try:
        return click.confirm(question, default=default, err=True)
    except click.Abort:
        if _stdin_is_terminal():
            raise
        click.echo(err=True)  # end the question's line: the error is a line of its own
        raise ValidationError(refusal) from None


def editor_command() -> tuple[str, str]:
    """The editor command and where it came from: ``$VISUAL``, else ``$EDITOR``, else the first installed
    of :data:`FALLBACK_EDITORS`, else ``vi`` (``notepad`` on Windows), as ``click.edit`` picks it."""
    for key in ("VISUAL", "EDITOR"):
        value = os.environ.get(key)
        if value:
            return value, f"${key}"
    if os.name == "nt":  # pragma: no cover - Windows
        return "notepad", "the default editor"
    import shutil  # here, not at the top: `plur forget` asks a question and never starts an editor

    for name in FALLBACK_EDITORS:
        if shutil.which(name) is not None:
            return name, "the default editor"
    return "vi", "the default editor"


def run_editor(path: Path) -> None:
    """Open ``path`` in the person's editor (:func:`editor_command`) and wait until it exits.

    Raises:
        ConfigError: (exit 2) the editor command is empty, cannot be parsed, or cannot be started
            (not installed); the message names it and :data:`EDITOR_FIX`.
        PlurError: (exit 1) the editor exited with a non-zero status (e.g. vim's ``:cq``).
    """
    import shlex
    import subprocess

    command, source = editor_command()
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"the editor command {command!r} (from {source}) cannot be read ({exc}); "
                          f"{EDITOR_FIX}") from None
    if not argv:
        raise ConfigError(f"the editor command {command!r} (from {source}) is blank; {EDITOR_FIX}")
    try:
        code = subprocess.call([*argv, str(path)])
    except OSError as exc:
        raise ConfigError(f"cannot start the editor {command!r} (from {source}): {exc.strerror or exc}; "
                          f"{EDITOR_FIX}") from None
    if code != 0:
        raise PlurError(f"the editor {command!r} (from {source}) exited with status {code}; "
                        f"save and quit it normally, or {EDITOR_FIX}")


__all__ = ["EDITOR_FIX", "confirm", "editor_command", "run_editor"]
