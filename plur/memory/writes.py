"""Writes through a :class:`~plur.memory.Memory`: learn, learn_many, update, supersede, feedback.

Each goes to the store at once (atomic YAML files) and, when the indexes are open, into them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..errors import ValidationError
from ..store.engram import Engram, parse_duration, parse_time, tag_tuple, utcnow


def learn(mem: Any, statement: str, *, scope: str = "global", type: str = "fact", tags: Sequence[str] = (),
          domain: str | None = None, rationale: str | None = None, source: Mapping[str, Any] | None = None,
          pinned: bool = False, created: Any = None, valid_from: Any = None, valid_until: Any = None,
          ttl: Any = None) -> Engram:
    """Remember ``statement``: :meth:`plur.memory.Memory.learn`, which documents it."""
    return learn_outcome(mem, statement, scope=scope, type=type, tags=tags, domain=domain, rationale=rationale,
                         source=source, pinned=pinned, created=created, valid_from=valid_from,
                         valid_until=valid_until, ttl=ttl)[0]


def learn_outcome(mem: Any, statement: str, **fields: Any) -> tuple[Engram, bool]:
    """The body of :meth:`plur.memory.Memory.learn_outcome`, which documents it."""
    ttl, valid_until = fields.pop("ttl", None), fields.pop("valid_until", None)
    tags = tag_tuple(fields.pop("tags", ()))
    engram = Engram.create(statement, max_statement_bytes=mem.settings.max_statement_bytes, tags=tags,
                           valid_until=_until(valid_until, ttl), **fields)
    with mem._lock:
        stored, created_new = mem.store.add(engram)
        if created_new and mem._indexes is not None:
            mem._indexes.add([stored])
        mem._note_own_write()
    return stored, bool(created_new)


def learn_many(mem: Any, items: Iterable[Mapping[str, Any]]) -> list[Engram]:
    """Learn many engrams under one store lock: :meth:`plur.memory.Memory.learn_many`, which documents it."""
    engrams = []
    for item in items:
        item = dict(item)
        statement = item.pop("statement")
        item["tags"] = tag_tuple(item.get("tags", ()))
        engrams.append(Engram.create(statement, max_statement_bytes=mem.settings.max_statement_bytes, **item))
    with mem._lock:
        results = mem.store.add_many(engrams)
        if mem._indexes is not None:
            mem._indexes.add([e for e, new in results if new])
        mem._note_own_write()
    return [e for e, _ in results]


def update(mem: Any, engram_id: str, *, expected: str | None = None, **changes: Any) -> Engram:
    """Change fields of an engram: :meth:`plur.memory.Memory.update`, which documents it."""
    from ..store.engram import engram_version

    if "statement" in changes:
        Engram.create(changes["statement"], max_statement_bytes=mem.settings.max_statement_bytes)
    if "tags" in changes:
        changes["tags"] = tag_tuple(changes["tags"])
    with mem._lock:
        base = mem.store.get(engram_id)
        new = base.replace(**changes)
        stored = mem.store.put(new, expected=expected or engram_version(base))
        if mem._indexes is not None:
            mem._indexes.add([stored])
        mem._note_own_write()
    return stored


def supersede(mem: Any, old_id: str, statement: str, **fields: Any) -> Engram:
    """Replace an engram by a new statement: :meth:`plur.memory.Memory.supersede`, which documents it."""
    old = mem.get(old_id)
    if old.status != "active":
        raise ValidationError(f"{old_id} is already retired; supersede the engram that replaced it "
                              "(see `plur list --status active`)")
    if Engram.create(statement).content_hash == old.content_hash and fields.get("scope", old.scope) == old.scope:
        raise ValidationError(f"the new statement equals {old_id}'s; use `plur update` to change its fields")
    for name in ("scope", "type", "tags", "domain", "pinned"):
        fields.setdefault(name, getattr(old, name))
    new = mem.learn(statement, **fields)
    with mem._lock:
        stored = mem.store.put(dataclasses.replace(new, supersedes=old.id))
        retired = mem.store.put(old.replace(status="retired", valid_until=utcnow()))
        if mem._indexes is not None:
            mem._indexes.add([stored, retired])
        mem._note_own_write()
    return stored


def feedback(mem: Any, engram_id: str, useful: bool, *, agent: str | None = None,
             query: str | None = None) -> dict[str, int]:
    """Record that an engram was (or was not) useful: :meth:`plur.memory.Memory.feedback`, which documents it."""
    if not isinstance(useful, bool):
        raise ValidationError(f"useful must be true or false, got {useful!r}")
    mem.get(engram_id)
    mem.stats.record_feedback(engram_id=engram_id, useful=useful, agent=agent, query=query)
    return mem.stats.feedback_counts(engram_id)

# -- reads ----------------------------------------------------------------------------


def _until(valid_until: Any, ttl: Any) -> datetime | None:
    """``valid_until`` from an explicit time or a time to live from now (at most one of the two)."""
    if ttl is None:
        return None if valid_until is None else parse_time(valid_until, "valid_until")
    if valid_until is not None:
        raise ValidationError("give either ttl or valid_until, not both")
    return utcnow() + parse_duration(ttl)  # bounded (100 years): never an OverflowError
