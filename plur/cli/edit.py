"""Changing engrams: ``plur edit`` (in $EDITOR, validated), ``update``, ``supersede``, ``pin``, ``unpin``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from ..errors import ConflictError, ValidationError
from ..service.session import Session as App
from ..store.engram import Engram
from .output import echo, one_line


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
    """Open ``text`` in $EDITOR from a 0600 file in :func:`_edit_folder`; the saved text, or None if not saved.

    The file is removed afterwards (an editor's own swap file goes when the editor closes).
    """
    import os
    import tempfile

    fd, name = tempfile.mkstemp(prefix=f"{engram_id}-", suffix=".yaml", dir=_edit_folder(home))
    path = Path(name)
    try:
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        before = os.stat(path).st_mtime_ns
        click.edit(filename=str(path))
        if os.stat(path).st_mtime_ns == before:
            return None  # not saved
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)


@click.command()
@click.argument("engram_id")
@click.pass_obj
def edit(app: App, engram_id: str) -> None:
    """Edit an engram in $EDITOR; it is validated before it replaces the stored one.

    An invalid edit is shown with the error and re-opened (or abandoned, leaving
    the stored engram untouched).
    """
    from ..store.engram import engram_version

    mem = app.memory
    old = mem.get(engram_id)
    version = engram_version(old)  # the update is refused if the engram changes while the editor is open
    text = old.to_yaml()
    while True:
        edited = _edit_in_home(mem.home, engram_id, text)
        if edited is None or edited == old.to_yaml():
            echo(f"no changes: {engram_id}")
            return
        try:
            new = Engram.from_yaml(edited)
            if new.id != old.id:
                raise ValidationError(f"the id cannot change (was {old.id}, now {new.id}); "
                                      "use `plur learn` for a new engram")
            break
        except ValidationError as exc:
            echo(f"invalid engram: {one_line(str(exc))}", err=True)
            if not click.confirm("Re-open the editor?", default=True, err=True):
                raise ValidationError(f"edit of {engram_id} abandoned ({one_line(str(exc))}); "
                                      "the stored engram is unchanged") from None
            text = edited
    changes = _changes(old, new)
    if not changes:
        echo(f"no changes: {engram_id}")
        return
    try:
        mem.update(engram_id, expected=version, **changes)
    except ConflictError as exc:  # keep the person's text: it is not in the store
        import tempfile

        folder = _edit_folder(mem.home)
        fd, kept = tempfile.mkstemp(prefix=f"kept-{engram_id}-", suffix=".yaml", dir=folder)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(edited)
        exc.args = (f"{exc}; your edited text is kept in {kept}",)
        raise
    echo(f"updated: {engram_id} ({', '.join(sorted(changes))})")


@click.command()
@click.argument("engram_id")
@click.argument("statement")
@click.pass_obj
def update(app: App, engram_id: str, statement: str) -> None:
    """Replace the text of an engram in place (same id; use `supersede` to keep the old text as history)."""
    app.memory.update(engram_id, statement=statement)
    click.echo(f"updated: {engram_id}")


@click.command()
@click.argument("old_id")
@click.argument("statement")
@click.option("--ttl", default=None, help="The new engram expires after this long, e.g. 30d.")
@click.pass_obj
def supersede(app: App, old_id: str, statement: str, ttl: str | None) -> None:
    """Replace OLD_ID by STATEMENT: a new engram (supersedes OLD_ID); the old one is retired, kept on disk."""
    new = app.memory.supersede(old_id, statement, ttl=ttl)
    click.echo(f"{new.id} supersedes {old_id} (retired)")


@click.command()
@click.argument("engram_id")
@click.pass_obj
def pin(app: App, engram_id: str) -> None:
    """Pin an engram: it goes first in every memory block of its scope."""
    app.memory.update(engram_id, pinned=True)
    click.echo(f"pinned: {engram_id}")


@click.command()
@click.argument("engram_id")
@click.pass_obj
def unpin(app: App, engram_id: str) -> None:
    """Unpin an engram."""
    app.memory.update(engram_id, pinned=False)
    click.echo(f"unpinned: {engram_id}")
