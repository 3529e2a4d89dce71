"""An engram as a database row and back, exactly: the same engram (same :func:`engram_version`) comes out.

``doc`` is :meth:`Engram.to_dict` as ``json`` (key order kept; see :mod:`plur.store.pg.schema`), unknown
keys included. JSON cannot hold every YAML value
(NaN, infinities, maps with non-text keys, binary); an engram carrying one also keeps its YAML text in
``yaml``, and is read back from that.
"""

from __future__ import annotations

import math
from typing import Any

from ..engram import Engram


def _json_exact(value: Any) -> bool:
    """True when ``value`` survives a JSON round trip unchanged (types included)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_exact(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_exact(v) for k, v in value.items())
    return False


def to_row(engram: Engram) -> tuple[str, str, str, str, Any, str | None]:
    """``(id, scope, status, content_hash, doc, yaml)`` for an INSERT; ``doc`` is wrapped for json.

    ``yaml`` is None unless an unknown key's value does not survive JSON (then ``doc`` holds the
    rest, with that value as text, for queries only).
    """
    from psycopg.types.json import Json

    doc = engram.to_dict()
    yaml_text = None
    if not all(_json_exact(v) for v in engram.extra.values()):
        yaml_text = engram.to_yaml()
        doc = {k: (v if _json_exact(v) else repr(v)) for k, v in doc.items()}
    return (engram.id, engram.scope, engram.status, engram.content_hash, Json(doc), yaml_text)


def from_row(doc: dict[str, Any], yaml_text: str | None) -> Engram:
    """The engram a row holds.

    Raises:
        ValidationError: the row does not hold a valid engram (edited by hand in SQL).
    """
    if yaml_text is not None:
        return Engram.from_yaml(yaml_text)
    chash = doc.get("content_hash")
    if isinstance(chash, str):
        fast = Engram.from_manifest(doc, chash)  # skips re-validation (as the folder's manifest); None when unsure
        if fast is not None:
            return fast
    return Engram.from_dict(doc)
