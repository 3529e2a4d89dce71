"""Team members and their scope grants, kept in the shared database (the data layer of team access).

Tables (created here on first use)::

    plur_members(name, token_sha256, created)      one row per member; only the token's sha256 is stored
    plur_grants(member, scope, can_write)          a member may read a granted scope (and write it if can_write)

Rule (:func:`may_read` / :func:`may_write`, pure): every member reads and writes ``global``; an ``agent:`` or
``project:`` scope only with a grant for exactly that scope. A token is shown once, when the member is
added; a lost token is replaced by :func:`rotate_token`. Tokens carry 256 random bits, so one unsalted sha256
is enough to keep them out of the database (no dictionary to guess from) and lets a door find the member by an
indexed lookup. :class:`TeamDirectory` is what a service's door asks, once per request, so a revoke or a removal
takes effect on the member's next request (:mod:`plur.service.access`; ``plur team``, :mod:`plur.cli.team`).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from dataclasses import dataclass
from typing import Any

from ...errors import AuthError, NotFoundError, ValidationError
from ..engram import _check_scope

DDL = (
    "CREATE TABLE IF NOT EXISTS plur_members (name text PRIMARY KEY, token_sha256 bytea NOT NULL UNIQUE, "
    "created timestamptz NOT NULL DEFAULT now())",
    "CREATE TABLE IF NOT EXISTS plur_grants (member text NOT NULL REFERENCES plur_members(name) ON DELETE CASCADE, "
    "scope text NOT NULL, can_write boolean NOT NULL, PRIMARY KEY (member, scope))",
)


@dataclass(frozen=True)
class Member:
    """A member and the scopes granted: ``read`` (includes every writable scope) and ``write``."""

    name: str
    read: frozenset[str]
    write: frozenset[str]


def may_read(member: Member, scope: str) -> bool:
    """True when ``member`` may read engrams of ``scope`` (``global``, or a scope granted to it)."""
    return scope == "global" or scope in member.read


def may_write(member: Member, scope: str) -> bool:
    """True when ``member`` may write engrams in ``scope`` (``global``, or a scope granted with write)."""
    return scope == "global" or scope in member.write


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 100 or any(c.isspace() for c in name):
        raise ValidationError(f"member name {name!r}: use 1-100 characters without spaces, e.g. ana")
    return name


def ensure_tables(conn: Any) -> None:
    """Create the member tables when missing (idempotent)."""
    with conn.transaction():
        for stmt in DDL:
            conn.execute(stmt)


def add_member(conn: Any, name: str) -> str:
    """Add a member; returns its token (shown once: only its sha256 is kept).

    Raises:
        ValidationError: a bad name, or a member of that name exists.
    """
    _check_name(name)
    token = "plur_" + secrets.token_urlsafe(32)
    ensure_tables(conn)
    with conn.transaction():
        if conn.execute("SELECT 1 FROM plur_members WHERE name = %s", (name,)).fetchone():
            raise ValidationError(f"member {name!r} exists; `plur team rotate {name}` gives it a new token")
        conn.execute("INSERT INTO plur_members (name, token_sha256) VALUES (%s, %s)", (name, _digest(token)))
    return token


def rotate_token(conn: Any, name: str) -> str:
    """Give a member a new token (the old one stops working); returns it. Raises NotFoundError."""
    token = "plur_" + secrets.token_urlsafe(32)
    ensure_tables(conn)
    with conn.transaction():
        if conn.execute("UPDATE plur_members SET token_sha256 = %s WHERE name = %s",
                        (_digest(token), name)).rowcount == 0:
            raise NotFoundError(f"no member {name!r}")
    return token


def grant(conn: Any, name: str, scope: str, *, write: bool = False) -> None:
    """Let ``name`` read ``scope`` (and write it when ``write``); replaces an earlier grant of that scope.

    Raises:
        ValidationError: a bad scope, or ``global`` (every member has it). NotFoundError: no such member.
    """
    _check_scope(scope)
    if scope == "global":
        raise ValidationError("every member reads and writes global; grant agent:<name> or project:<name> scopes")
    ensure_tables(conn)
    with conn.transaction():
        if not conn.execute("SELECT 1 FROM plur_members WHERE name = %s", (name,)).fetchone():
            raise NotFoundError(f"no member {name!r}; add it first")
        conn.execute("INSERT INTO plur_grants VALUES (%s, %s, %s) ON CONFLICT (member, scope) "
                     "DO UPDATE SET can_write = excluded.can_write", (name, scope, bool(write)))


def revoke(conn: Any, name: str, scope: str) -> bool:
    """Remove ``name``'s grant of ``scope``; True when there was one."""
    ensure_tables(conn)
    with conn.transaction():
        return bool(conn.execute("DELETE FROM plur_grants WHERE member = %s AND scope = %s",
                                 (name, scope)).rowcount)


def member_for_token(conn: Any, token: str) -> Member:
    """The member a token belongs to, with its grants.

    Raises:
        AuthError: no member has this token (HTTP 401 at a door).
    """
    ensure_tables(conn)
    return _lookup(conn, token)


def _lookup(conn: Any, token: str) -> Member:
    rows = conn.execute("SELECT m.name, g.scope, g.can_write FROM plur_members m LEFT JOIN plur_grants g "
                        "ON g.member = m.name WHERE m.token_sha256 = %s", (_digest(str(token)),)).fetchall()
    if not rows:
        raise AuthError("unknown member token; ask the team's administrator for yours (`plur team add`)")
    grants = [(s, w) for _, s, w in rows if s is not None]
    return Member(rows[0][0], frozenset(s for s, _ in grants), frozenset(s for s, w in grants if w))

def list_members(conn: Any) -> list[Member]:
    """Every member with its grants, by name."""
    ensure_tables(conn)
    rows = conn.execute("SELECT m.name, g.scope, g.can_write FROM plur_members m LEFT JOIN plur_grants g "
                        "ON g.member = m.name ORDER BY m.name, g.scope").fetchall()
    grants: dict[str, list[tuple[str, bool]]] = {}
    for name, scope, can_write in rows:
        grants.setdefault(name, [])
        if scope is not None:
            grants[name].append((scope, bool(can_write)))
    return [Member(n, frozenset(s for s, _ in g), frozenset(s for s, w in g if w)) for n, g in grants.items()]


def remove_member(conn: Any, name: str) -> bool:
    """Remove a member and its grants (its token stops working at once); True when there was one."""
    ensure_tables(conn)
    with conn.transaction():
        return bool(conn.execute("DELETE FROM plur_members WHERE name = %s", (name,)).rowcount)


class TeamDirectory:
    """The members of the database at ``uri``, for a door: :meth:`member` looks a token up at every call.

    One connection of its own (not the store's, so a long write does not hold a login up), reconnected once
    when the server went away.

    Args:
        uri: the database URI (setting ``store``).
    """

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._conn: Any = None
        self._lock = threading.Lock()

    def member(self, token: str) -> Member:
        """The member whose token this is, with its grants as they are now.

        Raises:
            AuthError: no member has this token. DatabaseUnavailableError: the server cannot be reached.
        """
        from .connect import connect, is_unreachable, unavailable

        with self._lock:
            for attempt in (0, 1):
                try:
                    if self._conn is None or self._conn.closed:
                        conn = connect(self.uri)
                        ensure_tables(conn)
                        self._conn = conn
                    return _lookup(self._conn, token)
                except Exception as exc:
                    if not is_unreachable(exc):
                        raise
                    self.close_connection()
                    if attempt:
                        raise unavailable(self.uri, exc, "checking a member's token") from None
            raise AssertionError("unreachable")  # pragma: no cover

    def close_connection(self) -> None:
        """Close the connection (the next :meth:`member` reconnects); idempotent."""
        from .connect import close_quietly

        close_quietly(self._conn)
        self._conn = None
