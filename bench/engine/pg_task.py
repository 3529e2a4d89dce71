"""A schema of its own per benchmark task when the stores are on PostgreSQL (``--set store=postgresql://...``).

Each benchmark task (one LoCoMo conversation, one LongMemEval question) is its own corpus; on the folder
store it gets a temporary home, on PostgreSQL it gets a temporary schema, dropped afterwards.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

_N = itertools.count()


@contextmanager
def task_store(uri: str | None) -> Iterator[str | None]:
    """Yield ``uri`` pointed at a fresh schema (``search_path=<schema>,public``), or ``None`` for the folder store."""
    if not uri:
        yield None
        return
    import psycopg

    name = f"plur_bench_{os.getpid()}_{next(_N)}"
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE SCHEMA {name}")
    sep = "&" if "?" in uri else "?"
    try:
        yield f"{uri}{sep}options={quote(f'-csearch_path={name},public')}"
    finally:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")
