"""API v1 routes that move notes in and out of files and bind folders to projects, for hosts that offer the
person these controls in their own UI (the DSH plugin's ``/plur export|import|bind|unbind``).

=======  ==============================  ==========================================================
method   path                            answer
=======  ==============================  ==========================================================
POST     /api/v1/export                  ``{exported, target}``: ``plur export TARGET`` (oldest first; JSONL,
                                         plur-yaml or a Claude memory folder by the target's name or ``format``)
POST     /api/v1/import                  ``{added, already_known, new_ids, secrets_removed, scopes, files, skipped,
                                         dry_run}``: ``plur import PATHS`` (``scope`` for entries that carry none)
POST     /api/v1/project/bind            ``{bound, scope}``: ``plur project bind FOLDER --to SCOPE``
POST     /api/v1/project/unbind          ``{unbound, was}``: ``plur project unbind FOLDER``
=======  ==============================  ==========================================================

The service runs as the home's owner on this machine, so a path here is a path of the owner's, read or
written as ``plur export`` / ``plur import`` would: absolute (a host resolves a relative one against its own
folder), at most 4,096 bytes, no control characters. Only the owner's token may use them (a team member's
is refused: 403): they read and write the owner's files.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ForbiddenError, ValidationError

#: Longest path accepted, bytes (as a folder for ``/project``).
MAX_PATH_BYTES = 4096
#: Most paths one ``/import`` reads.
MAX_IMPORT_PATHS = 100
#: What ``/import`` and ``/export`` accept as ``format`` (``plur import`` / ``plur export --format``).
IMPORT_FORMATS = ("jsonl", "plur-yaml", "claude-dir", "claude-memory", "chatgpt-memory", "notes")
EXPORT_FORMATS = ("jsonl", "plur-yaml", "claude-dir")


def checked_path(value: Any, field: str) -> Path:
    """``value`` as an absolute path a host may give (see the module's rules).

    Raises:
        ValidationError: not a string, relative, too long, or holding a control character; names the field.
    """
    said = f"field {field!r} {value!r:.200}"
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{said} must be an absolute path")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        raise ValidationError(f"field {field!r} is {size} bytes, too large: a path is at most {MAX_PATH_BYTES} bytes")
    bad = next((ch for ch in value if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F), None)
    if bad is not None:
        raise ValidationError(f"{said} holds a control character (U+{ord(bad):04X}); give the path as it is")
    if not os.path.isabs(value):
        raise ValidationError(f"{said} must be an absolute path (resolve it against your working folder)")
    return Path(value)


def _owner(c: Any, what: str) -> None:
    if c.member is not None:
        raise ForbiddenError(f"{what} reads and writes the owner's files; a team member's token cannot")


def _format(fmt: str | None, allowed: tuple[str, ...], what: str) -> str | None:
    if fmt is not None and fmt not in allowed:
        raise ValidationError(f"{what}: format {fmt!r} is not one of {', '.join(allowed)}; or leave it out to "
                              "detect it from the path")
    return fmt


def transfer_routes(endpoint: Callable[..., Any], required: object, prefix: str) -> list[Any]:
    """The routes above under ``prefix`` (``/api/v1``), built with :func:`plur.service.api.create_api`'s
    ``endpoint`` (locking, errors)."""
    from starlette.routing import Route

    text_or_none = (str, type(None))

    def export(c: Any, target: str, format: str | None, scope: str | None, status: str | None,
               force: bool) -> dict[str, Any]:
        from ..formats.transfer import write_engrams

        _owner(c, "export")
        where = checked_path(target, "target")
        fmt = _format(format, EXPORT_FORMATS, "export")
        if not where.parent.is_dir():
            raise ValidationError(f"cannot export to {str(where)!r}: the folder {str(where.parent)!r} does not "
                                  "exist; create it first, or give a path in an existing folder")
        engrams = c.memory.list(scope=scope, status=status)[::-1]
        n = write_engrams(engrams, where, fmt, force=force, home=c.memory.home)
        return {"exported": n, "target": str(where)}

    def import_(c: Any, paths: list[Any], format: str | None, scope: str | None, dry_run: bool) -> dict[str, Any]:
        from ..formats.transfer import import_sources, read_engrams
        from ..store.engram import check_scope

        _owner(c, "import")
        if not paths or len(paths) > MAX_IMPORT_PATHS:
            raise ValidationError(f"field 'paths' must list 1 to {MAX_IMPORT_PATHS} files or folders")
        sources = [checked_path(p, "paths") for p in paths]
        missing = [str(p) for p in sources if not p.exists()]
        if missing:
            raise ValidationError(f"cannot import {missing[0]!r}: no such file or folder")
        fmt = _format(format, IMPORT_FORMATS, "import")
        if scope is not None:
            check_scope(scope)
        skipped: list[str] = []
        files = import_sources(sources, skipped)
        engrams = []
        for p in files:
            got = read_engrams(p, fmt, scope=scope, max_bytes=c.memory.settings.max_input_bytes, skipped=skipped)
            if fmt is not None and not got:
                raise ValidationError(f"{p} read as format {fmt} holds nothing to import; leave format out to "
                                      "detect it, or give another one")
            engrams += got
        out = c.memory.import_engrams(engrams, dry_run=dry_run)
        return {"dry_run": dry_run, "files": [str(p) for p in files], "skipped": skipped,
                "added": [e.id for e in out.added], "already_known": [e.id for e in out.known],
                "new_ids": dict(out.renamed), "secrets_removed": out.secrets,
                "scopes": sorted({e.scope for e in [*out.added, *out.known]})}

    def bind(c: Any, folder: str, scope: str) -> dict[str, Any]:
        from ..project import bind as do_bind

        _owner(c, "project bind")
        got = do_bind(c.memory.home, str(checked_path(folder, "folder")), scope)
        return {"bound": got.folder, "scope": got.scope}

    def unbind(c: Any, folder: str) -> dict[str, Any]:
        from ..project import canonical, unbind as do_unbind

        _owner(c, "project unbind")
        where = str(checked_path(folder, "folder"))
        was = do_unbind(c.memory.home, where)
        return {"unbound": canonical(where), "was": was}

    R = required
    return [
        Route(prefix + "/export", endpoint("export", export, {
            "target": ((str,), R), "format": (text_or_none, None), "scope": (text_or_none, None),
            "status": (text_or_none, None), "force": ((bool,), False)}), methods=["POST"]),
        Route(prefix + "/import", endpoint("import", import_, {
            "paths": ((list,), R), "format": (text_or_none, None), "scope": (text_or_none, None),
            "dry_run": ((bool,), False)}), methods=["POST"]),
        Route(prefix + "/project/bind", endpoint("project_bind", bind, {
            "folder": ((str,), R), "scope": ((str,), R)}), methods=["POST"]),
        Route(prefix + "/project/unbind", endpoint("project_unbind", unbind, {"folder": ((str,), R)}),
              methods=["POST"]),
    ]
