"""A real PostgreSQL 16 with pgvector for the tests (the ``pgserver`` wheel), one per test session.

:func:`start_server` starts it in a temporary folder; :func:`fresh_database` gives each test a schema of
its own. Without pgserver/psycopg the PostgreSQL tests skip, unless ``PLUR_REQUIRE_POSTGRES=1`` (set by
``scripts/test``), where they fail.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from typing import Any

import pytest

_NAMES = itertools.count()


def start_server() -> tuple[Any, str]:
    """``(server, base uri)``: a pgserver PostgreSQL in a fresh temporary folder (runs as root too)."""
    try:
        import pgserver
        import psycopg  # noqa: F401
    except ImportError as exc:
        if os.environ.get("PLUR_REQUIRE_POSTGRES") == "1":
            raise
        pytest.skip(f"PostgreSQL tests need the 'postgres' extra and pgserver ({exc})")
    folder = tempfile.mkdtemp(prefix="plur-pg-")
    server = pgserver.get_server(folder, cleanup_mode="delete")
    return server, server.get_uri()


def fresh_database(base: str) -> str:
    """An empty schema of its own on the server's ``postgres`` database, as a URI whose search_path names it
    first (pgvector lives in ``public``); far cheaper than a database per test."""
    import psycopg

    name = f"plur_t{os.getpid()}_{next(_NAMES)}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{base}&options=-csearch_path%3D{name}%2Cpublic"
