"""The injection log's reads: which memory block went into which agent's prompt, when, and for which message.

An injection row names the recall that built its block (``injections.recall_id``, schema 3), and its message is
that recall's query as the recall log keeps it: screened once (a key is ``[redacted <kind>]``, counted once,
under ``recall``), cut like it when a key was pasted over two queries, blanked like it when a forget erases it.
No second copy of what the user typed is written. Functions here take the connection; the caller
(:class:`plur.stats.db.StatsDB`) holds its lock.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .schema import columns

__all__ = ["agents", "history", "listing"]


def _recall(db: sqlite3.Connection) -> tuple[str, str]:
    """``(join, message)`` SQL: the recall an injection names, or nothing in a read-only file before schema 3."""
    if "recall_id" in columns(db, "injections"):
        return " LEFT JOIN recalls r ON r.id = i.recall_id", "r.query"
    return "", "NULL"


def _rows(db: sqlite3.Connection, sql: str, args: Any = ()) -> list[dict[str, Any]]:
    return [dict(r) for r in db.execute(sql, tuple(args)).fetchall()]


def history(db: sqlite3.Connection, engram_id: str, limit: int) -> list[dict[str, Any]]:
    """Injections whose block held ``engram_id``, newest first: time, agent, position, tokens, message."""
    join, message = _recall(db)
    return _rows(db, f"SELECT i.id AS injection_id, i.ts AS time, i.agent, e.position, i.tokens, i.block_hash, "
                     f"{message} AS message FROM injection_engrams e JOIN injections i ON i.id = e.injection_id{join} "
                     "WHERE e.engram_id=? ORDER BY i.ts DESC, i.id DESC LIMIT ?", (engram_id, int(limit)))


def listing(db: sqlite3.Connection, *, text: str | None, agent: str | None, engram_id: str | None, limit: int,
            offset: int) -> tuple[int, list[dict[str, Any]]]:
    """:meth:`plur.stats.db.StatsDB.injections`, which documents it."""
    join, message = _recall(db)
    where, args = [], []
    if text:
        if message == "NULL":
            return 0, []
        where.append(f"instr(lower({message}), lower(?)) > 0")
        args.append(text)
    if agent:
        where.append("i.agent = ?")
        args.append(agent)
    if engram_id:
        where.append("i.id IN (SELECT injection_id FROM injection_engrams WHERE engram_id = ?)")
        args.append(engram_id)
    clause = join + ((" WHERE " + " AND ".join(where)) if where else "")
    matched = int(_rows(db, f"SELECT COUNT(*) AS n FROM injections i{clause}", args)[0]["n"])
    rows = _rows(db, f"SELECT i.id AS injection_id, i.ts AS time, i.agent, {message} AS message, i.tokens, "
                     f"i.block_hash FROM injections i{clause} ORDER BY i.ts DESC, i.id DESC LIMIT ? OFFSET ?",
                 [*args, int(limit), int(offset)])
    ids = [r["injection_id"] for r in rows]
    held: dict[int, list[str]] = {i: [] for i in ids}
    if ids:
        marks = ",".join("?" * len(ids))
        for r in _rows(db, f"SELECT injection_id, engram_id FROM injection_engrams WHERE injection_id IN ({marks}) "
                           "ORDER BY injection_id, position", ids):
            held[r["injection_id"]].append(r["engram_id"])
    return matched, [{**r, "engram_ids": held[r["injection_id"]]} for r in rows]


def agents(db: sqlite3.Connection) -> list[str]:
    """The agents the injection log names, sorted."""
    return [r["agent"] for r in _rows(db, "SELECT DISTINCT agent FROM injections ORDER BY agent")]
