"""Scope syntax: :data:`SCOPE_RE`, and :func:`check_scope` (NFC, one error naming what is wrong)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from ..errors import ValidationError

#: ``global``, ``project:<name>``, ``agent:<name>``; names are letters/digits of any
#: script plus ``. _ - @ /`` (no whitespace, no colon), 1..128 characters.
SCOPE_RE = re.compile(r"\A(global|(project|agent):[\w.@/-]{1,128})\Z")


def _scope_problem(scope: str) -> str:
    """What is wrong with a scope that :data:`SCOPE_RE` refuses, for the error message."""
    kind, colon, name = scope.partition(":")
    if not colon or kind not in ("project", "agent"):
        return "it must be 'global' or start with 'project:' or 'agent:'"
    if not name:
        return "the name after the colon is empty"
    if len(name) > 128:
        return f"the name is {len(name)} characters, over 128"
    bad = next((c for c in name if not (c.isalnum() or c in "_.@/-")), None)
    if bad is None:
        return "the name holds a character that is not allowed"
    return (f"the character {bad!r} (U+{ord(bad):04X}, {unicodedata.name(bad, 'unnamed')}) is not allowed "
            "in a scope name")


def check_scope(scope: Any) -> str:
    """``scope`` in NFC if :data:`SCOPE_RE` accepts it (so ``project:Café`` typed as ``e`` + a combining
    accent is the same scope as the composed one).

    Raises:
        ValidationError: naming the value, what is wrong (the first character not allowed) and the form.
    """
    if isinstance(scope, str):
        scope = unicodedata.normalize("NFC", scope)
        if SCOPE_RE.match(scope):
            return scope
    why = _scope_problem(scope) + "; " if isinstance(scope, str) else ""
    raise ValidationError(
        f"invalid scope {scope!r}: {why}use 'global', 'project:<name>' or 'agent:<name>' "
        "(name: 1-128 letters or digits of any script, and . _ - @ /)"
    )


def _check_scope(scope: Any) -> str:
    """Raise :class:`ValidationError` unless ``scope`` is a valid scope as it is (not normalised)."""
    if not isinstance(scope, str) or not SCOPE_RE.match(scope):
        check_scope(scope)  # raises with the reason, or the NFC form passes:
        raise ValidationError(f"invalid scope {scope!r}: it is not in Unicode NFC form; "
                              f"write it composed: {unicodedata.normalize('NFC', scope)!r}")
    return scope
