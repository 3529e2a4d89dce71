"""Where an engram's file lives under ``<home>/engrams/``: month folders, and the flat layout of older plur.

Since issue 49 the store writes ``<home>/engrams/YYYY-MM/<id>.yaml``, the month taken from the id
(``ENG-YYYY-MM-DD-<6 hex>``), so a file's place is a pure function of its id and one folder holds a month
of notes (~4,500 at 150 a day) instead of all of them. Older plur wrote ``<home>/engrams/<id>.yaml``; the
store reads both: a flat file (an older plur's, or one a person put there) is found, read, updated and
forgotten where it is, and ``plur migrate --layout month`` (or ``flat``, to hand the store back to an
older plur) moves them (:mod:`plur.store.relayout`).

Inside the store a file is named by its path relative to the engram folder, with ``/`` between the month
and the file name: ``2026-12/ENG-2026-12-07-0a1b2c.yaml`` or, flat, ``ENG-2026-12-07-0a1b2c.yaml``. These
are the keys of the store's manifest and the lines of its writer journal. Only folders named like a month
(``YYYY-MM``) are read; anything else under ``engrams/`` (a ``.git`` folder, a person's own) is left alone.
"""

from __future__ import annotations

import re

from .engram import ID_RE

#: A month folder's name: ``YYYY-MM``.
MONTH_RE = re.compile(r"\A\d{4}-(0[1-9]|1[0-2])\Z")
SUFFIX = ".yaml"
#: ``YYYY-MM/<id>.yaml`` or ``<id>.yaml`` (the ``YYYY-MM`` is checked against the id by :func:`misplaced`).
_NAME_RE = re.compile(r"\A(?:(\d{4}-\d{2})/)?(ENG-[^/]+)\.yaml\Z")


def month_of(engram_id: str) -> str:
    """``YYYY-MM`` of an id ``ENG-YYYY-MM-DD-<6 hex>`` (not validated here: callers pass valid ids)."""
    return engram_id[4:11]


def month_name(engram_id: str) -> str:
    """Where the store writes ``engram_id``: ``YYYY-MM/<id>.yaml``."""
    return f"{engram_id[4:11]}/{engram_id}{SUFFIX}"


def flat_name(engram_id: str) -> str:
    """Where older plur wrote ``engram_id``: ``<id>.yaml``."""
    return f"{engram_id}{SUFFIX}"


def id_of(name: str) -> str:
    """The id part of a name (``2026-12/ENG-....yaml`` or ``ENG-....yaml`` -> ``ENG-...``), unvalidated."""
    return name[name.rfind("/") + 1: -len(SUFFIX)]


def is_flat(name: str) -> bool:
    """True for a name in the engram folder itself (no month folder)."""
    return "/" not in name


def twin(name: str) -> str:
    """The same id's name in the other layout (month <-> flat)."""
    eid = id_of(name)
    return month_name(eid) if is_flat(name) else flat_name(eid)


def is_engram_name(name: str) -> bool:
    """True for a journal or manifest name of an engram file in either layout (a valid id, a month folder)."""
    m = _NAME_RE.match(name)
    return bool(m) and ID_RE.match(m.group(2)) is not None and (m.group(1) is None or MONTH_RE.match(m.group(1)) is not None)


def misplaced(name: str) -> str | None:
    """Why a file in a month folder is not where its id says (``None`` when it is, or when it is flat)."""
    if is_flat(name):
        return None
    folder, eid = name[: name.find("/")], id_of(name)
    if folder == month_of(eid):
        return None
    return (f"{eid}.yaml is in the month folder {folder}/ but its id is of {month_of(eid)}; "
            f"move it to engrams/{month_name(eid)}")


__all__ = ["MONTH_RE", "SUFFIX", "flat_name", "id_of", "is_engram_name", "is_flat", "misplaced", "month_name",
           "month_of", "twin"]
