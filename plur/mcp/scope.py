"""The MCP server's scope pin: which scopes a tool call may read and write.

``plur mcp --scope project:x`` is an authorisation boundary, not a default: every tool call is
checked here, so a model cannot widen it by passing another scope. A pinned server

* reads ``project:x`` and ``global`` (as :meth:`plur.memory.Memory.recall` does for a scope);
  asking for ``global`` alone narrows, asking for any other scope is refused;
* writes (learn, update, pin, forget) only engrams in ``project:x``, never ``global`` ones
  (they are shared with every other project), and cannot move an engram out of ``project:x``;
* may give feedback on any engram it can read.

An unpinned server (no ``--scope``) may read and write every scope.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ValidationError
from ..store.engram import SCOPE_RE


class ScopeError(ValidationError):
    """A tool call asked for a scope outside the server's pin."""


@dataclass(frozen=True)
class ScopePin:
    """Args: scope: the pinned scope (``project:<name>``, ``agent:<name>`` or ``global``), or ``None`` = no pin."""

    scope: str | None = None

    def __post_init__(self) -> None:
        if self.scope is not None and not SCOPE_RE.match(self.scope):
            raise ValidationError(f"invalid --scope {self.scope!r}: use 'global', 'project:<name>' or 'agent:<name>'")

    def _refuse(self, asked: str, what: str) -> ScopeError:
        return ScopeError(f"scope {asked!r} is outside this server's scope {self.scope!r}: it may {what} "
                          f"{self.scope!r}" + (" and 'global'" if what == "read" and self.scope != "global" else "")
                          + "; restart `plur mcp` with another --scope to use it")

    def read(self, asked: str | None, default: str | None = None) -> str | None:
        """The scope to recall/list in for a call that asked for ``asked`` (``None`` = the pin's scope, or on an
        unpinned server ``default``: the client's project, :mod:`plur.mcp.project`)."""
        if asked is not None and not SCOPE_RE.match(asked):
            raise ValidationError(f"invalid scope {asked!r}: use 'global', 'project:<name>' or 'agent:<name>'")
        if self.scope is None:
            return asked if asked is not None else default
        if asked is None or asked == self.scope:
            return self.scope
        if asked == "global":
            return "global"
        raise self._refuse(asked, "read")

    def visible(self, engram_scope: str) -> bool:
        """Whether an engram in ``engram_scope`` may be read."""
        return self.scope is None or engram_scope in (self.scope, "global")

    def write(self, asked: str | None, default: str | None = None) -> str:
        """The scope to write into for a call that asked for ``asked`` (``None`` = the pin, else ``default``,
        else global)."""
        if asked is not None and not SCOPE_RE.match(asked):
            raise ValidationError(f"invalid scope {asked!r}: use 'global', 'project:<name>' or 'agent:<name>'")
        if self.scope is None:
            return asked or default or "global"
        if asked is None or asked == self.scope:
            return self.scope
        raise self._refuse(asked, "write")

    def writable(self, engram_scope: str) -> bool:
        """Whether an engram in ``engram_scope`` may be changed or forgotten."""
        return self.scope is None or engram_scope == self.scope
