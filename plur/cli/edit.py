"""Changing engrams: ``plur edit`` (in $VISUAL / $EDITOR, validated), ``update``, ``supersede``, ``pin``, ``unpin``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from ..errors import PlurError, ValidationError
from ..service.session import Session as App
from ..store.engram import Engram
from .output import echo, emit_json, json_option, one_line


def _changes(old: Engram, new: Engram) -> dict[str, Any]:
    return {f.name: getattr(new, f.name) for f in dataclasses.fields(Engram)
            if f.name not in ("id", "content_hash") and getattr(new, f.name) != getattr(old, f.name)}


def _edit_folder(home: Path) -> Path:
    """``<home>/edit`` (0700): where ``plur edit`` puts the file it opens, so the statement (and the
    editor's swap and backup files beside it) never lands in a shared temp folder outside the home."""
    from ..store.atomic import private_dirs

    folder = home / "edit"
    private_dirs(folder)
    return folder


def _edit_in_home(home: Path, engram_id: str, text: str) -> str | None:
    """Open ``text`` in the editor (:func:`plur.cli.ask.run_editor`) from a 0600 file in :func:`_edit_folder`;
    the saved text, or None if not saved.

    The file is removed afterwards (an editor's own swap file goes when the editor closes).

    Raises:
        ConfigError / PlurError: the editor cannot be started, or failed (:func:`~plur.cli.ask.run_editor`).
    """
    import os
    import tempfile

    from .ask import run_editor

    fd, name = tempfile.mkstemp(prefix=f"{engram_id}-", suffix=".yaml", dir=_edit_folder(home))
    path = Path(name)
    try:
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        before = os.stat(path).st_mtime_ns
        run_editor(path)
        if os.stat(path).st_mtime_ns == before:
            return None  # not saved
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)


def _keep(home: Path, engram_id: str, text: str) -> Path:
    """Save the person's edited ``text`` (not in the store) as ``<home>/edit/kept-<id>-*.yaml``; its path."""
    import tempfile

    fd, kept = tempfile.mkstemp(prefix=f"kept-{engram_id}-", suffix=".yaml", dir=_edit_folder(home))
    with open(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return Path(kept)


@click.command()
@click.argument("engram_id")
@click.pass_obj
def edit(app: App, engram_id: str) -> None:
    """Edit an engram in $VISUAL / $EDITOR; it is validated before it replaces the stored one.

    An invalid edit is shown with the error and re-opened (or abandoned, leaving the stored engram
    untouched). Whenever the edit does not reach the store, the edited text is kept in <home>/edit/
    and the message says where.
    """
    mem = app.memory
    old = mem.get(engram_id)
    draft: list[str] = []  # the person's latest edited text, while it is not in the store
    try:
        _edit(mem, old, draft)
    except PlurError as exc:
        if draft:
            exc.args = (f"{exc}; your edited text is kept in {_keep(mem.home, engram_id, draft[-1])}",)
        raise
    except (click.Abort, KeyboardInterrupt):  # Ctrl-C at the question or in the editor
        if draft:
            echo(f"plur: your edited text is kept in {_keep(mem.home, engram_id, draft[-1])}", err=True)
        raise


def _edit(mem: Any, old: Engram, draft: list[str]) -> None:
    """The edit loop of :func:`edit`; appends each edited text to ``draft`` until it is stored."""
    from ..store.engram import engram_version
    from .ask import confirm

    engram_id = old.id
    version = engram_version(old)  # the update is refused if the engram changes while the editor is open
    text = old.to_yaml()
    while True:
        edited = _edit_in_home(mem.home, engram_id, text)
        if edited is None or edited == old.to_yaml():
            draft.clear()  # nothing of the person's is left out of the store
            echo(f"no changes: {engram_id}")
            return
        draft.append(edited)
        try:
            new = Engram.from_yaml(edited)
            if new.id != old.id:
                raise ValidationError(f"the id cannot change (was {old.id}, now {new.id}); "
                                      "use `plur learn` for a new engram")
            break
        except ValidationError as exc:
            echo(f"invalid engram: {one_line(str(exc))}", err=True)
            if not confirm("Re-open the editor?", f"edit of {engram_id} needs an answer to 'Re-open the editor?' "
                           f"after an invalid edit ({one_line(str(exc))}): run it in a terminal", default=True):
                raise ValidationError(f"edit of {engram_id} abandoned ({one_line(str(exc))}); "
                                      "the stored engram is unchanged") from None
            text = edited
    changes = _changes(old, new)
    if not changes:
        draft.clear()
        echo(f"no changes: {engram_id}")
        return
    mem.update(engram_id, expected=version, **changes)  # a ConflictError keeps the draft (edit)
    draft.clear()
    echo(f"updated: {engram_id} ({', '.join(sorted(changes))})")


@click.command()
@click.argument("engram_id")
@click.argument("statement")
@json_option
@click.pass_obj
def update(app: App, engram_id: str, statement: str, as_json: bool) -> None:
    """Replace the text of an engram in place (same id; use `supersede` to keep the old text as history)."""
    e = app.memory.update(engram_id, statement=statement)
    emit_json({"updated": engram_id, "engram": e.to_dict()}) if as_json else click.echo(f"updated: {engram_id}")


@click.command()
@click.argument("old_id")
@click.argument("statement")
@click.option("--ttl", default=None, help="The new engram expires after this long, e.g. 30d.")
@json_option
@click.pass_obj
def supersede(app: App, old_id: str, statement: str, ttl: str | None, as_json: bool) -> None:
    """Replace OLD_ID by STATEMENT: a new engram (supersedes OLD_ID); the old one is retired, kept on disk."""
    new = app.memory.supersede(old_id, statement, ttl=ttl)
    if as_json:
        emit_json({"id": new.id, "supersedes": old_id, "retired": old_id, "engram": new.to_dict()})
    else:
        click.echo(f"{new.id} supersedes {old_id} (retired)")


@click.command()
@click.argument("engram_id")
@json_option
@click.pass_obj
def pin(app: App, engram_id: str, as_json: bool) -> None:
    """Pin an engram: it goes first in every memory block of its scope."""
    e = app.memory.update(engram_id, pinned=True)
    emit_json({"pinned": engram_id, "engram": e.to_dict()}) if as_json else click.echo(f"pinned: {engram_id}")


@click.command()
@click.argument("engram_id")
@json_option
@click.pass_obj
def unpin(app: App, engram_id: str, as_json: bool) -> None:
    """Unpin an engram."""
    e = app.memory.update(engram_id, pinned=False)
    emit_json({"unpinned": engram_id, "engram": e.to_dict()}) if as_json else click.echo(f"unpinned: {engram_id}")
