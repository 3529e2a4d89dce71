"""Reading one engram file: the checks that decide whether its bytes load or go to quarantine.

A file loads when its name is an engram id (``<id>.yaml``, in the month folder of its id or, as older
plur wrote it, in the engram folder itself: :mod:`plur.store.layout`), its bytes are UTF-8 YAML of an
engram with that id, and its statement is within the size limit. A flat file whose id also has a file in
its month folder is a duplicate: the month folder's is the one read, and the flat one goes to quarantine
(kept, with the reason), so one id never names two engrams.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ValidationError
from .engram import Engram, validate_id
from .layout import id_of, is_flat, misplaced, twin
from .quarantine import empty_file_reason


def size_message(statement: str, max_statement_bytes: int) -> str:
    """Why ``statement`` is refused: its size, the limit and the setting that raises it."""
    size = len(statement.encode("utf-8"))
    return (f"statement is {size} bytes, over the limit of {max_statement_bytes} bytes "
            "(setting max_statement_bytes, default 1 MiB); split it or raise the limit")


def parse_file(root: Path, name: str, data: bytes, max_statement_bytes: int, quarantine_dir: Path) -> Engram:
    """The engram in the file ``root / name`` whose bytes are ``data``.

    Args:
        root: the engram folder. name: the file's path under it (``2026-12/<id>.yaml`` or ``<id>.yaml``).
        max_statement_bytes: the largest statement accepted, UTF-8 bytes. quarantine_dir: named in the
            reason for an empty file (where an earlier copy may be).

    Raises:
        ValidationError: the file does not load; the message says why and how to fix it (it becomes the
            quarantine's ``.reason``).
    """
    stem = id_of(name)
    try:
        validate_id(stem)
    except ValidationError:
        raise ValidationError(
            f"file name {name!r} is not an engram id (ENG-YYYY-MM-DD-<6 hex>.yaml); "
            "rename it to its id or import it with `plur import`") from None
    if (why := misplaced(name)) is not None:
        raise ValidationError(why)
    if is_flat(name) and os.path.lexists(root / twin(name)):
        raise ValidationError(f"engram {stem} is also in engrams/{twin(name)}, which plur reads instead; "
                              "compare the two and keep that one (edit it if this one says more)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"file is not UTF-8 text ({exc}); re-save it as UTF-8") from None
    if not text.strip():
        raise ValidationError(empty_file_reason(stem, len(data), quarantine_dir))
    engram = Engram.from_yaml(text)
    if engram.id != stem:
        raise ValidationError(
            f"file name {name!r} does not match its id field {engram.id!r}; "
            f"rename the file to {engram.id}.yaml or fix the id")
    if len(engram.statement.encode("utf-8")) > max_statement_bytes:
        raise ValidationError(size_message(engram.statement, max_statement_bytes))
    return engram


__all__ = ["parse_file", "size_message"]
