"""PLUR's ``engrams.yaml`` (the TypeScript PLUR), read and written. Pure format: no store, no index.

``plur-yaml``
The ``engrams.yaml`` of the TypeScript PLUR (github.com/plur-ai/plur,
``packages/core/src/schemas/engram.ts``): a YAML mapping whose ``engrams:`` key holds
a list of engram mappings. Field mapping (PLUR -> plur):

==================  =======================================================================
id                  kept when it is already ``ENG-YYYY-MM-DD-<6 hex>``; otherwise a new id
                    dated ``created``
type                behavioral -> feedback, procedural -> procedure, architectural -> project,
                    terminological -> reference
status              active/retired as is; dormant -> active; candidate (awaiting approval)
                    -> retired, so it is not recalled
scope               ``global``, ``project:x``, ``agent:x`` as is; any other (``group:a/b``,
                    ``user:x``) -> ``project:<kind>.<name>``, narrower, never wider
source (text)       ``{"kind": "plur", "text": ...}``
temporal            ``learned_at`` -> created (else the date in a ``ENG-YYYY-MMDD-...`` id,
                    else now); ``valid_from`` / ``valid_until`` as is
statement, rationale, domain, tags, pinned      as is
everything else     kept as unknown keys (``Engram.extra``) and written back on export
==================  =======================================================================

The PLUR values that were mapped are kept in ``extra["plur"]`` so that an export writes
them back unchanged unless the engram was edited since; plur fields with no PLUR
equivalent travel in a ``plur_py`` mapping, which PLUR's passthrough schema keeps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from ..errors import ValidationError
from ..store.safe_yaml import load_yaml
from .capped import check_depth
from ..store.engram import FIELD_ORDER, ID_RE, SCOPE_RE, Engram, content_hash, new_id, parse_time, utcnow


PLUR_TYPE_IN = {"behavioral": "feedback", "procedural": "procedure", "architectural": "project",
                "terminological": "reference"}
PLUR_TYPE_OUT = {"feedback": "behavioral", "procedure": "procedural", "project": "architectural",
                 "reference": "terminological", "fact": "terminological", "user": "behavioral"}
PLUR_STATUS_IN = {"active": "active", "retired": "retired", "dormant": "active", "candidate": "retired"}
#: PLUR fields this module maps onto plur fields (everything else is kept verbatim in ``extra``).
PLUR_MAPPED = ("id", "type", "status", "scope", "source", "temporal", "statement", "rationale", "domain",
               "tags", "pinned", "content_hash")


def read_plur_yaml(p: Path, text: str, default_scope: str = "global") -> list[Engram]:
    """The engrams of a PLUR ``engrams.yaml``; an entry without a scope gets ``default_scope``."""
    doc = check_depth(load_yaml(text, what=str(p)), str(p))
    if not isinstance(doc, Mapping) or not isinstance(doc.get("engrams"), list):
        raise ValidationError(f"{p}: a PLUR engrams.yaml is a mapping with an 'engrams:' list; "
                              "this file has none (wrong file, or truncated?)")
    out = []
    for n, entry in enumerate(doc["engrams"], 1):
        if isinstance(entry, Mapping) and entry.get("scope") is None:
            entry = {**entry, "scope": default_scope}
        try:
            out.append(from_plur(entry))
        except ValidationError as exc:
            label = entry.get("id") if isinstance(entry, Mapping) else None
            raise ValidationError(f"{p}: engram #{n}{f' ({label})' if label else ''}: {exc}") from None
    return out


def _scope_in(scope: Any) -> str:
    if scope is None:
        return "global"
    if not isinstance(scope, str) or not scope.strip():
        raise ValidationError(f"scope {scope!r} is not text")
    if SCOPE_RE.match(scope):
        return scope
    kind, _, name = scope.partition(":")
    flat = f"{kind}.{name}" if name else kind
    flat = re.sub(r"[^\w.@/-]+", "-", flat).strip("-")[:128] or "imported"
    return f"project:{flat}"


def _source_in(source: Any) -> dict[str, Any] | None:
    if source is None:
        return None
    if isinstance(source, Mapping):
        return dict(source)
    return {"kind": "plur", "text": str(source)}


def _time_or_none(value: Any, name: str) -> datetime | None:
    return None if value in (None, "") else parse_time(value, name)


def _temporal_in(temporal: Any, plur_id: Any) -> tuple[datetime, datetime | None, datetime | None]:
    t = temporal if isinstance(temporal, Mapping) else {}
    created = _time_or_none(t.get("learned_at"), "temporal.learned_at")
    if created is None and isinstance(plur_id, str):
        m = re.search(r"(\d{4})-(\d{2})(\d{2})", plur_id) or re.search(r"(\d{4})-(\d{2})-(\d{2})", plur_id)
        if m:
            try:
                created = datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=timezone.utc)
            except ValueError:
                created = None
    return (created or utcnow(), _time_or_none(t.get("valid_from"), "temporal.valid_from"),
            _time_or_none(t.get("valid_until"), "temporal.valid_until"))


def from_plur(entry: Any) -> Engram:
    """One PLUR engram mapping -> :class:`Engram` (see the module docstring for the mapping).

    An entry carrying ``plur_py`` (written by :func:`to_plur`) comes back exactly, except for
    the PLUR fields that were edited in PLUR since: those win.

    Raises:
        ValidationError: not a mapping, no statement, or a field that does not validate.
    """
    if not isinstance(entry, Mapping):
        raise ValidationError(f"expected a mapping of fields, got {type(entry).__name__}")
    mapped = _map_plur(entry)
    native = entry.get("plur_py")
    if not isinstance(native, Mapping):
        return mapped
    unknown = {k: v for k, v in entry.items() if k not in PLUR_MAPPED and k != "plur_py"}
    try:
        base = Engram.from_dict({**native, **unknown, "statement": entry.get("statement")})
    except ValidationError:
        return mapped  # plur_py no longer describes a valid engram: trust the PLUR fields
    expected = to_plur(base)
    changes: dict[str, Any] = {}
    for key, fields in (("type", ("type",)), ("status", ("status",)), ("scope", ("scope",)),
                        ("tags", ("tags",)), ("pinned", ("pinned",)), ("rationale", ("rationale",)),
                        ("domain", ("domain",)), ("temporal", ("created", "valid_from", "valid_until")),
                        ("source", ("source",))):
        if entry.get(key) != expected.get(key):
            changes.update({f: getattr(mapped, f) for f in fields})
    return base.replace(**changes) if changes else base


def _map_plur(entry: Mapping[str, Any]) -> Engram:
    statement = entry.get("statement")
    ptype = entry.get("type")
    status = entry.get("status", "active")
    if status not in PLUR_STATUS_IN:
        raise ValidationError(f"status {status!r} is not a PLUR status (active, dormant, retired, candidate)")
    created, valid_from, valid_until = _temporal_in(entry.get("temporal"), entry.get("id"))
    plur_id = entry.get("id")
    eid = plur_id if isinstance(plur_id, str) and ID_RE.match(plur_id) else new_id(created)
    tags = entry.get("tags") or ()
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise ValidationError(f"tags {tags!r} is not a list")
    original: dict[str, Any] = {k: entry[k] for k in ("id", "type", "status", "scope", "source", "temporal",
                                                       "content_hash") if k in entry}
    original["keys"] = [k for k in entry if k != "plur_py"]
    if isinstance(statement, str):
        original["statement_hash"] = content_hash(statement)  # tells export if the statement changed
    extra = {k: v for k, v in entry.items() if k not in PLUR_MAPPED and k != "plur_py"}
    extra["plur"] = original
    return Engram(
        id=eid, statement=statement, scope=_scope_in(entry.get("scope")), created=created,
        type=PLUR_TYPE_IN.get(ptype, "fact") if isinstance(ptype, str) else "fact",
        tags=tuple(str(t) for t in tags), domain=entry.get("domain"), rationale=entry.get("rationale"),
        source=_source_in(entry.get("source")), valid_from=valid_from, valid_until=valid_until,
        pinned=bool(entry.get("pinned", False)), status=PLUR_STATUS_IN[status], extra=extra,
    )


def to_plur(e: Engram) -> dict[str, Any]:
    """:class:`Engram` -> one PLUR engram mapping; inverse of :func:`from_plur`.

    For an engram that came from PLUR, unedited PLUR values (id, type, status, scope, source,
    temporal, content_hash) are written back as they were, in the original key order.
    """
    orig = e.extra.get("plur")
    orig = orig if isinstance(orig, Mapping) else {}
    keys = orig.get("keys") or ()
    fields: dict[str, Any] = {"id": orig.get("id", e.id)}
    # a PLUR value comes back only if it still maps to the engram's current value
    ptype = orig.get("type")
    fields["type"] = ptype if isinstance(ptype, str) and PLUR_TYPE_IN.get(ptype, "fact") == e.type \
        else PLUR_TYPE_OUT[e.type]
    pstatus = orig.get("status", "active" if "status" not in keys and keys else None)
    fields["status"] = pstatus if isinstance(pstatus, str) and PLUR_STATUS_IN.get(pstatus) == e.status \
        else e.status
    pscope = orig.get("scope")
    fields["scope"] = pscope if isinstance(pscope, str) and _scope_in(pscope) == e.scope else e.scope
    fields["statement"] = e.statement
    for name in ("rationale", "domain"):
        if getattr(e, name) is not None:
            fields[name] = getattr(e, name)
    if e.tags or "tags" in keys or not keys:
        fields["tags"] = list(e.tags)
    if e.pinned or "pinned" in keys:
        fields["pinned"] = e.pinned
    if e.source is not None:
        psource = orig.get("source")
        if psource is not None and _source_in(psource) == dict(e.source):
            fields["source"] = psource
        elif set(e.source) == {"kind", "text"} and e.source.get("kind") == "plur":
            fields["source"] = str(e.source["text"])
        else:
            fields["source"] = json.dumps(dict(e.source), ensure_ascii=False, sort_keys=True)
    ptemporal = orig.get("temporal")
    try:
        same_time = ptemporal is not None and \
            _temporal_in(ptemporal, orig.get("id")) == (e.created, e.valid_from, e.valid_until)
    except ValidationError:
        same_time = False
    if same_time:
        fields["temporal"] = ptemporal
    elif "temporal" in keys or not keys or e.valid_from or e.valid_until:
        temporal = {"learned_at": _iso(e.created)}
        if e.valid_from is not None:
            temporal["valid_from"] = _iso(e.valid_from)
        if e.valid_until is not None:
            temporal["valid_until"] = _iso(e.valid_until)
        fields["temporal"] = temporal
    if "content_hash" in orig and orig.get("statement_hash") == e.content_hash:
        fields["content_hash"] = orig["content_hash"]
    for k, v in e.extra.items():
        if k != "plur" and k not in fields:
            fields[k] = v
    out = {k: fields[k] for k in keys if k in fields}
    out.update((k, v) for k, v in fields.items() if k not in out)
    # plur fields PLUR cannot hold; unknown keys already travel at the top level
    out["plur_py"] = {k: v for k, v in e.to_dict().items()
                      if (k in FIELD_ORDER or k == "plur") and k not in ("statement", "content_hash")}
    return out


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


class _PlainDumper(yaml.SafeDumper):
    pass


_PlainDumper.add_representer(
    str, lambda d, v: d.represent_scalar(
        "tag:yaml.org,2002:str", v,
        style='"' if any(c in v for c in "\x85\u2028\u2029") else ("|" if "\n" in v else None)))


def dump_plur_yaml(items: Iterable[Engram]) -> str:
    """The ``engrams.yaml`` text for ``items`` (a mapping with one ``engrams:`` list), UTF-8 safe."""
    return yaml.dump({"engrams": [to_plur(e) for e in items]}, Dumper=_PlainDumper, sort_keys=False,
                     allow_unicode=True, default_flow_style=False, width=1 << 30)
