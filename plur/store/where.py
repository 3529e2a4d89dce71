"""Which file an engram id has in a folder store that may hold both layouts (:mod:`plur.store.layout`)."""

from __future__ import annotations

import os
from collections.abc import Container
from pathlib import Path

from .layout import flat_name, month_name


def name_for(root: Path, known: Container[str], unmoved: Container[str], engram_id: str) -> str:
    """The name (path under ``root``) of ``engram_id``'s file: its month folder's when the store knows it
    or it is on disk, else a flat one known or on disk (an older plur's: read, updated and forgotten where
    it is), else, for a new engram, the month folder's. Two dict look-ups for a known id.

    Args:
        root: the engram folder. known: the names the store holds. unmoved: names of bad files it could
            not move aside.
    """
    month = month_name(engram_id)
    if month in known:
        return month
    flat = flat_name(engram_id)
    if flat in known or flat in unmoved:
        return flat
    if not os.path.lexists(root / month) and os.path.lexists(root / flat):
        return flat
    return month


def id_is_free(root: Path, known: Container[str], unmoved: Container[str], engram_id: str) -> bool:
    """True when no file, known or on disk, has ``engram_id`` in either layout."""
    names = (month_name(engram_id), flat_name(engram_id))
    return not any(n in known or n in unmoved or os.path.lexists(root / n) for n in names)


__all__ = ["id_is_free", "name_for"]
