"""Erasing what the recall log (``stats.db``) holds of forgotten engrams: :meth:`plur.stats.db.StatsDB.forget_engrams`.

A person who forgets an engram (or a whole conversation, ``plur forget --session``) gets every row that names
it, or may repeat its words, erased in one transaction, then the file scrubbed (``secure_delete``, the WAL
truncated, VACUUM), so no copy stays in the file, its journal or free pages.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..errors import StoreError
from ..screen.text import screen

#: What SQLite's ``trim`` strips here: the whitespace Python's ``str.strip`` strips from a typed message.
_BLANKS = "char(32, 9, 10, 13, 11, 12)"


def erase(db: sqlite3.Connection, engram_ids: Sequence[str], texts: Sequence[str] = ()) -> None:
    """Erase the rows of ``engram_ids`` in one transaction (the caller holds the connection's lock).

    Erased: their feedback rows (with their query text); their own ``recall_hits`` rows; the query text of
    every recall that returned one (blanked: a query that found the engram may repeat its words); their
    ``injection_engrams`` rows. ``texts`` (the forgotten statements: a captured turn is the message the user
    typed) also blank every recall query that is one of them, as the screen stored it: the turns of a forgotten
    conversation leave no copy in the recall log, nor as the message of an injection (which is its recall's
    query, :mod:`plur.stats.injections`). Kept: the other hits of those recalls and the other engrams of those
    blocks (forgetting one note takes no other note's counts), and the rows that hold no text (times, agents,
    modes, latencies, tokens).

    Raises:
        sqlite3.Error: the transaction failed (rolled back).
    """
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("CREATE TEMP TABLE IF NOT EXISTS _gone(id INTEGER PRIMARY KEY)")
        db.execute("DELETE FROM _gone")
        for engram_id in engram_ids:
            db.execute("DELETE FROM feedback WHERE engram_id=?", (engram_id,))
            db.execute("INSERT OR IGNORE INTO _gone SELECT recall_id FROM recall_hits WHERE engram_id=?", (engram_id,))
            db.execute("DELETE FROM recall_hits WHERE engram_id=?", (engram_id,))
            db.execute("DELETE FROM injection_engrams WHERE engram_id=?", (engram_id,))
        db.execute("UPDATE recalls SET query='' WHERE id IN (SELECT id FROM _gone)")
        said = sorted({screen(t).text.strip() for t in texts if isinstance(t, str)} - {""})
        for i in range(0, len(said), 400):
            chunk = said[i:i + 400]
            marks = ",".join("?" * len(chunk))
            db.execute(f"UPDATE recalls SET query='' WHERE trim(query, {_BLANKS}) IN ({marks})", chunk)
        db.execute("COMMIT")
    except sqlite3.Error:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def refuse(named: str, path: object, exc: BaseException | None = None) -> StoreError:
    """The one-line error of a forget whose stats cannot be erased (read-only home, full disk)."""
    if exc is None:
        return StoreError(f"cannot erase the stats of {named}: {path} is read-only")
    return StoreError(f"cannot erase the stats of {named} in {path} ({exc}); "
                      "check free space and permissions, then forget again")
