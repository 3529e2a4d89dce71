"""Quarantine: bad files moved aside with a reason, and the list of them.

Layout::

    <quarantine>/<name>.<timestamp>          the file as it was (timestamp UTC, ``%Y%m%dT%H%M%S.%fZ``)
    <quarantine>/<name>.<timestamp>.reason   YAML: original, reason, when (ISO-8601 UTC), bytes

A name already taken gets a ``-1``, ``-2``... suffix, so nothing is ever overwritten.
This module only moves and lists files; deciding what is bad (and taking the
write lock) is the caller's job.

A file name is any bytes but ``/`` and NUL; the list spells each one as :func:`shown` does (UTF-8 text
on one line, one spelling per name) and :func:`unshown` turns that spelling back into the name, so
``plur doctor --discard NAME`` can name any file the quarantine holds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from ..errors import ValidationError
from .atomic import atomic_write, fsync_dir, private_dirs
from .safe_yaml import load_yaml
from .engram import format_time


def shown(path: str) -> str:
    """``path`` as plur lists it: UTF-8 text on one line that names exactly one file name.

    A byte that is not UTF-8 is ``\\xNN`` (80..ff), a control character ``\\xNN`` (00..1f, 7f) or
    ``\\uNNNN`` (C1: 0080..009f; another lone surrogate), a backslash ``\\\\``; everything else is itself. Two names never
    show alike, and :func:`unshown` reverses it.
    """
    out = []
    for ch in path:
        n = ord(ch)
        if 0xDC80 <= n <= 0xDCFF:  # os.fsdecode's spelling of a byte that is not UTF-8
            out.append(f"\\x{n - 0xDC00:02x}")
        elif n < 0x20 or n == 0x7F:
            out.append(f"\\x{n:02x}")
        elif 0x80 <= n <= 0x9F or 0xD800 <= n <= 0xDFFF:
            out.append(f"\\u{n:04x}")
        elif ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
    return "".join(out)


def unshown(text: str) -> str | None:
    """The path :func:`shown` spelt as ``text`` (a ``str`` as :func:`os.fsdecode` gives), ``None`` when
    ``text`` is no such spelling (a lone backslash, a bad escape)."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        kind = text[i + 1:i + 2]
        width = {"\\": 0, "x": 2, "u": 4}.get(kind)
        digits = text[i + 2:i + 2 + (width or 0)]
        if width is None or len(digits) != width or (width and not all(c in "0123456789abcdef" for c in digits)):
            return None
        n = int(digits, 16) if width else ord("\\")
        out.append(chr(0xDC00 + n) if width == 2 and n >= 0x80 else chr(n))
        i += 2 + width
    return "".join(out)


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


def empty_file_reason(engram_id: str, nbytes: int, quarantine_dir: Path) -> str:
    """The reason an engram file with no content (``nbytes`` of whitespace, or none) is quarantined, with both fixes."""
    what = f"{nbytes} bytes, whitespace only" if nbytes else "0 bytes"
    return (f"the file is empty ({what}: a write cut short, or emptied by hand); write its fields back "
            f"(id: {engram_id}, statement, scope, created, as in any engram file) and run "
            f"`plur doctor --restore {engram_id}`, or delete it from {quarantine_dir} if the engram is not needed")


def unmoved_record(src: Path, reason: str) -> dict[str, Any]:
    """The :func:`list_quarantined`-shaped record of a bad file that could not be moved.

    Returns:
        ``{path, original, reason, when, moved: False}`` with ``path == original == shown(str(src))``
        and ``when`` the current time, ISO-8601 UTC.
    """
    return {"path": shown(str(src)), "original": shown(str(src)), "reason": reason,
            "when": format_time(datetime.now(timezone.utc)), "moved": False}


def move_aside(src: Path, quarantine_dir: Path, reason: str, nbytes: int, fsync: bool = True,
               before_move: Callable[[], None] | None = None) -> Path:
    """Move ``src`` into ``quarantine_dir`` next to a ``.reason`` file; see the module docstring.

    Order: the ``.reason`` file is written (atomically), then ``before_move`` runs
    (e.g. to journal the name), then ``src`` is renamed into place.

    Args:
        src: the bad file.
        quarantine_dir: where it goes (created when missing).
        reason: why it was moved, for people (one line).
        nbytes: its size in bytes, recorded in the ``.reason`` file.
        fsync: fsync the ``.reason`` file and both folders (crash safety).
        before_move: called just before the rename.

    Returns:
        The new path of the file.

    Raises:
        OSError: the rename or the folder creation failed (read-only home...).
        StoreError: the ``.reason`` file could not be written.
    """
    stamp = _stamp()
    private_dirs(quarantine_dir)
    name = src.name
    dst = quarantine_dir / f"{name}.{stamp}"
    n = 1
    while dst.exists() or dst.with_name(dst.name + ".reason").exists():
        dst = quarantine_dir / f"{name}.{stamp}-{n}"
        n += 1
    # a name that is not UTF-8 (an old archive, a sync tool) is spelt with \xNN for its other bytes
    info = {"original": shown(str(src)), "reason": reason, "when": format_time(datetime.now(timezone.utc)),
            "bytes": nbytes}
    atomic_write(dst.with_name(dst.name + ".reason"),
                 yaml.safe_dump(info, allow_unicode=True, sort_keys=False).encode("utf-8"), sync=fsync)
    if before_move is not None:
        before_move()
    os.replace(src, dst)
    if fsync:
        fsync_dir(src.parent)
        fsync_dir(quarantine_dir)
    return dst


def count_quarantined(quarantine_dir: Path) -> int:
    """How many files were moved into ``quarantine_dir`` (its ``.reason`` files; none read, so cheap enough
    for every recall's warning)."""
    try:
        return sum(1 for _ in quarantine_dir.glob("*.reason"))
    except OSError:
        return 0


def list_quarantined(quarantine_dir: Path) -> list[dict[str, Any]]:
    """Files moved into ``quarantine_dir``, in file-name order.

    Returns:
        Dicts ``{path, original, reason, when, moved: True}``: ``path`` is where the
        file is now, ``original`` where it was (both as :func:`shown` spells them), ``when`` ISO-8601 UTC. An unreadable
        ``.reason`` file yields empty fields and the reason ``(unreadable .reason file)``.
    """
    out: list[dict[str, Any]] = []
    try:
        reasons = sorted(quarantine_dir.glob("*.reason"))
    except OSError:
        reasons = []
    for rp in reasons:
        try:
            info = load_yaml(rp.read_bytes(), what=str(rp), max_bytes=1 << 20) or {}
        except (OSError, ValidationError):
            info = {}
        if not isinstance(info, dict):
            info = {}
        out.append({
            "path": shown(str(rp.with_suffix(""))),  # \xNN: not UTF-8; unshown() finds the file again
            "original": str(info.get("original", "")),
            "reason": str(info.get("reason", "(unreadable .reason file)")),
            "when": str(info.get("when", "")),
            "moved": True,
        })
    return out
