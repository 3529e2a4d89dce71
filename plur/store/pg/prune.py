"""Pruning the change feed: ``plur_changes`` would otherwise grow by one row per write, forever.

Each home records the seq it has applied in ``plur_homes`` (:func:`register`, from
:meth:`plur.store.pg.store.PgStore.refresh` at most every :data:`REGISTER_EVERY_S` and at close). :func:`prune`
deletes the rows every home seen within the retention (setting ``feed_retention_days``) has applied, and every
row older than the retention whatever the homes say, but never the newest row (its seq is where the feed
stands). The last seq deleted is kept as ``plur_meta.pruned_through``.

A home whose cursor is below ``pruned_through`` (off for longer than the retention, or a lagging process) cannot
learn from the feed which engrams were forgotten meanwhile; it reloads every row and rebuilds its derived copies
from the database instead (a full resync: :func:`plur.memory.shared.resync_derived`), so nothing is missed.
"""

from __future__ import annotations

from typing import Any

from .schema import WRITE_LOCK

#: How often a store records its cursor in ``plur_homes`` while it runs, seconds.
REGISTER_EVERY_S = 60.0
#: How often one process prunes the feed, at most, seconds.
PRUNE_EVERY_S = 600.0


def pruned_through(conn: Any) -> int:
    """The last seq pruned from the feed (0: never pruned)."""
    row = conn.execute("SELECT value FROM plur_meta WHERE key = 'pruned_through'").fetchone()
    return int(row[0]) if row else 0


def register(conn: Any, home: str, cursor: int) -> None:
    """Record that ``home`` has applied the feed up to ``cursor`` (and was seen now)."""
    conn.execute("INSERT INTO plur_homes (home, cursor, seen) VALUES (%s, %s, now()) ON CONFLICT (home) DO UPDATE "
                 "SET cursor = greatest(plur_homes.cursor, excluded.cursor), seen = now()", (home, int(cursor)))


def prune(conn: Any, retention_s: float) -> int:
    """Delete the feed rows no home needs; returns how many went.

    Args:
        conn: an autocommit connection (the pruning is one transaction under the writers' advisory lock).
        retention_s: homes not seen for this many seconds stop holding rows back, and rows older than this go
            whatever the homes say.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        conn.execute("DELETE FROM plur_homes WHERE seen < now() - make_interval(secs => %s)", (float(retention_s),))
        last = conn.execute("SELECT max(seq) FROM plur_changes").fetchone()[0]
        if last is None:
            return 0
        horizon = conn.execute("SELECT min(cursor) FROM plur_homes").fetchone()[0]
        old = conn.execute("SELECT max(seq) FROM plur_changes WHERE at < now() - make_interval(secs => %s)",
                           (float(retention_s),)).fetchone()[0]
        through = min(int(last) - 1, max(int(horizon if horizon is not None else last), int(old or 0)))
        done = pruned_through(conn)
        if through <= done:
            return 0
        gone = conn.execute("DELETE FROM plur_changes WHERE seq <= %s", (through,)).rowcount
        conn.execute("INSERT INTO plur_meta VALUES ('pruned_through', %s) ON CONFLICT (key) DO UPDATE "
                     "SET value = excluded.value", (str(through),))
    return int(gone or 0)
