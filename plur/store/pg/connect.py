"""Connections to the PostgreSQL store: open one, tell "database unreachable" apart, never print a password.

Every psycopg failure to reach the server (refused, shut down, restarting, connection lost) becomes one
:class:`~plur.errors.DatabaseUnavailableError` whose message names the database without its password.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import DatabaseUnavailableError, require

#: Seconds a connection attempt waits for the server before it counts as unreachable.
CONNECT_TIMEOUT_S = 5


def redact(uri: str) -> str:
    """``uri`` with any password replaced by ``***`` (``postgresql://u:secret@h/db`` -> ``postgresql://u:***@h/db``)."""
    uri = re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", uri)
    return re.sub(r"(password=)[^&\s]*", r"\1***", uri)


def psycopg() -> Any:
    """The psycopg 3 module, or :class:`~plur.errors.MissingDependencyError` naming the ``postgres`` extra."""
    return require("psycopg", "postgres")


def is_unreachable(exc: BaseException) -> bool:
    """True for psycopg errors that mean the server is not there (as opposed to a bad query)."""
    pg = psycopg()
    return isinstance(exc, (pg.OperationalError, pg.InterfaceError))


def unavailable(uri: str, exc: BaseException, doing: str) -> DatabaseUnavailableError:
    """The one-line error for an unreachable database while ``doing`` (e.g. ``"saving the engram"``)."""
    reason = " ".join(str(exc).split())[:200] or type(exc).__name__
    return DatabaseUnavailableError(
        f"the engram database {redact(uri)} is unreachable while {doing} ({reason}); start it or fix the "
        "setting store (PLUR_STORE); nothing was half-written, run the command again when it is back")


def connect(uri: str, *, autocommit: bool = True) -> Any:
    """A new psycopg connection with pgvector's types registered.

    Raises:
        DatabaseUnavailableError: the server cannot be reached in :data:`CONNECT_TIMEOUT_S` seconds.
        MissingDependencyError: psycopg or pgvector is not installed.
    """
    pg = psycopg()
    try:
        conn = pg.connect(uri, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S)
    except pg.Error as exc:
        raise unavailable(uri, exc, "connecting") from None
    return conn


def close_quietly(conn: Any) -> None:
    """Close ``conn`` when there is one; a connection the server already dropped may raise on close: ignored."""
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection: nothing left to do
            pass


def register_vector(conn: Any) -> None:
    """Register pgvector's ``vector`` type on ``conn`` (numpy arrays in and out, binary)."""
    require("pgvector", "postgres")
    from pgvector.psycopg import register_vector as reg

    reg(conn)
