"""Restoring a quarantined engram file once it was fixed: validated as on load, checked against the store
(same id again, duplicate text), moved back under the store's write lock (:meth:`EngramStore.restore`).
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..errors import ConflictError, DuplicateError, NotFoundError, StoreError, ValidationError
from .atomic import fsync_dir, private_dirs
from .engram import ID_RE, Engram
from .layout import SUFFIX, id_of, month_name, twin
from .quarantine import shown, unshown


def restore_quarantined(store: Any, name: str) -> Engram:
    """Bring a quarantined file back into the store after it was fixed; validated as on load.

    Args:
        name: the quarantined file's name (``<id>.yaml.<timestamp>``, as ``plur doctor`` lists it)
            or an engram id (its newest quarantined file).

    Returns:
        The engram now loaded from ``<home>/engrams/YYYY-MM/<id>.yaml`` (its month folder, wherever it was).

    Raises:
        NotFoundError: no quarantined file by that name or id.
        ValidationError: the file still does not load (the message says why; fix it and retry).
        ConflictError: an engram file with that id exists again, or its text duplicates an active engram.
        StoreError: the file could not be moved back (read-only home...).
    """
    found = _find(store, name)
    src, at = found["file"], found["path"]  # at: src as plur shows it (UTF-8, one line)
    base = Path(unshown(found["original"]) or found["original"]).name
    target_name = month_name(id_of(base)) if base.endswith(SUFFIX) and ID_RE.match(id_of(base)) else base
    with store._write_lock():
        store._sync_for_write()
        try:
            data = src.read_bytes()
        except OSError as exc:
            raise StoreError(f"cannot read {at} ({exc})") from None
        try:
            engram = store._parse(target_name, data)
        except ValidationError as exc:
            raise ValidationError(f"{at} still does not load: {exc}; fix the file, then restore it again") from None
        target = store.root / target_name
        if target.exists() or engram.id in store._by_id or (store.root / twin(target_name)).exists():
            raise ConflictError(f"an engram {engram.id} is in the store again; compare it with {at} "
                                "and forget one of them first")
        dup = store._duplicate_of(engram.scope, engram.content_hash) if engram.status == "active" else None
        if dup is not None:
            raise DuplicateError(f"engram {dup.id} already says exactly what {Path(at).name} says; "
                                 f"delete {at} instead of restoring it", dup.id)
        store._writes.append(target_name)
        try:
            private_dirs(target.parent)
            os.replace(src, target)
        except OSError as exc:
            raise StoreError(f"cannot move {at} back to {shown(str(target))} ({exc})") from None
        with suppress(OSError):
            src.with_name(src.name + ".reason").unlink()
        for folder in (target.parent, store.root, store.quarantine_dir) if store.fsync else ():
            fsync_dir(folder)
        store._check_one(target_name)
    return store.get(engram.id)



def discard_quarantined(store: Any, name: str) -> Path:
    """Delete a quarantined file (and its ``.reason``) the user does not want back; returns where it was.

    Args:
        name: as for :func:`restore_quarantined` (the file's name, or an engram id: its newest file).

    Raises:
        NotFoundError: no quarantined file by that name or id.
        StoreError: the file could not be deleted (read-only home...).
    """
    found = _find(store, name)
    src, at = found["file"], found["path"]
    with store._write_lock():
        try:
            src.unlink()
        except OSError as exc:
            raise StoreError(f"cannot delete {at} ({exc})") from None
        with suppress(OSError):
            src.with_name(src.name + ".reason").unlink()
        if store.fsync:
            fsync_dir(store.quarantine_dir)
    return src


def _find(store: Any, name: str) -> dict[str, Any]:
    """The moved quarantined file called ``name``, else the newest one of engram id ``name``; its record with
    ``file``, the file's real path.

    ``name`` is the file's name as ``plur doctor`` lists it (:func:`~plur.store.quarantine.shown`: a byte that
    is not UTF-8 as ``\\xNN``...) or the name itself (a shell's ``$'\\xff...'``).

    Raises:
        NotFoundError: neither (the message says where they are listed).
    """
    items = [q for q in store.quarantined() if q.get("moved")]
    found = [q for q in items if Path(q["path"]).name == name]
    if not found:
        found = [q for q in items if Path(q["path"]).name == shown(name)]
    if not found:
        found = [q for q in items if Path(q["original"]).name == f"{name}.yaml"][-1:]
    real = unshown(found[0]["path"]) if found else None
    if real is None:
        said = name if name.isprintable() else shown(name)
        raise NotFoundError(f"no quarantined file '{said}'; `plur doctor` lists them (name or engram id)")
    return {**found[0], "file": Path(real)}
