"""A user id and metadata, as plur's model holds them: a user's notes are a scope of their own, metadata are tags.

For code written against other memory libraries (mem0's ``user_id=`` and ``metadata=``), without a second
model beside scopes and tags:

* ``user_id="alice"`` is the scope ``agent:alice``: learned there, recalled there plus ``global``, listed there;
  another user's notes never reach alice's recall (a scope is an authorisation boundary).
* ``metadata={"category": "food"}`` is the tag ``category:food`` (one tag per key, ``key:value``): learned onto
  the note, and as a filter every hit must carry every one of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ValidationError


def scope_of(scope: str | None, user_id: Any, default: str | None) -> str | None:
    """The scope meant by ``scope`` and ``user_id`` (``agent:<user_id>``); ``default`` when neither is given.

    Raises:
        ValidationError: both are given, or ``user_id`` is not a non-blank string (the scope's own check
            then refuses characters a scope name cannot hold).
    """
    if user_id is None:
        return default if scope is None else scope
    if not isinstance(user_id, str) or not user_id.strip():
        raise ValidationError(f"user_id must be a non-blank string, got {user_id!r}")
    if scope is not None and scope != default:
        raise ValidationError(f"give scope ({scope!r}) or user_id ({user_id!r}), not both: user_id={user_id!r} "
                              f"is the scope 'agent:{user_id}'")
    return f"agent:{user_id}"


def tags_of(metadata: Mapping[str, Any] | None) -> list[str]:
    """``["key:value", ...]`` for ``metadata`` (values str, int, float or bool; keys without ``:``).

    Raises:
        ValidationError: not a mapping, a key that is blank or holds ``:``, a value of another type. A tag over
            64 characters is refused where tags are checked.
    """
    if metadata is None:
        return []
    if not isinstance(metadata, Mapping):
        raise ValidationError(f"metadata must be a mapping of names to values, got {type(metadata).__name__}")
    out = []
    for key, value in metadata.items():
        if not isinstance(key, str) or not key.strip() or ":" in key:
            raise ValidationError(f"metadata key {key!r} must be a non-blank name without ':'")
        if isinstance(value, bool):
            value = str(value).lower()
        elif not isinstance(value, (str, int, float)):
            raise ValidationError(f"metadata {key!r}: value {value!r} must be text, a number or a boolean "
                                  "(it is stored as the tag key:value)")
        out.append(f"{key}:{value}")
    return out


__all__ = ["scope_of", "tags_of"]
