"""The recall log's SQLite schema (``<home>/stats.db``) and its migrations.

Times are Unix epoch seconds, UTC, ``REAL``::

    recalls(id INTEGER PRIMARY KEY, ts REAL, agent TEXT, scope TEXT, query TEXT,
            mode TEXT, latency_ms REAL, n_hits INTEGER)
    recall_hits(recall_id INTEGER, engram_id TEXT, rank INTEGER, score REAL,
                bm25_rank INTEGER, dense_rank INTEGER,          -- rank is 1-based
                above_floor INTEGER)                            -- 1 cleared the relevance floor, 0 below
                                                                -- it, NULL recorded before schema 2
    feedback(id INTEGER PRIMARY KEY, ts REAL, engram_id TEXT, useful INTEGER, agent TEXT, query TEXT)
    injections(id INTEGER PRIMARY KEY, ts REAL, agent TEXT, block_hash TEXT, tokens INTEGER,
               recall_id INTEGER)                               -- the recall that built the block (its query is
                                                                -- the injection's message), NULL before schema 3
    injection_engrams(injection_id INTEGER, engram_id TEXT, position INTEGER)
    screened(id INTEGER PRIMARY KEY, ts REAL, kind TEXT, door TEXT)   -- one row per secret redacted
                                                                       -- (never the secret itself)
"""

from __future__ import annotations

import re
import sqlite3

SCHEMA_VERSION = 3
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS recalls(
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, agent TEXT, scope TEXT, query TEXT NOT NULL,
    mode TEXT NOT NULL, latency_ms REAL NOT NULL, n_hits INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS recalls_ts ON recalls(ts);
CREATE TABLE IF NOT EXISTS recall_hits(
    recall_id INTEGER NOT NULL REFERENCES recalls(id) ON DELETE CASCADE, engram_id TEXT NOT NULL,
    rank INTEGER NOT NULL, score REAL, bm25_rank INTEGER, dense_rank INTEGER, above_floor INTEGER);
CREATE INDEX IF NOT EXISTS recall_hits_engram ON recall_hits(engram_id);
CREATE INDEX IF NOT EXISTS recall_hits_recall ON recall_hits(recall_id);
CREATE TABLE IF NOT EXISTS injections(
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, agent TEXT NOT NULL, block_hash TEXT, tokens INTEGER, recall_id INTEGER);
CREATE INDEX IF NOT EXISTS injections_ts ON injections(ts);
CREATE TABLE IF NOT EXISTS injection_engrams(
    injection_id INTEGER NOT NULL REFERENCES injections(id) ON DELETE CASCADE,
    engram_id TEXT NOT NULL, position INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS injection_engrams_engram ON injection_engrams(engram_id);
CREATE INDEX IF NOT EXISTS injection_engrams_injection ON injection_engrams(injection_id);
CREATE TABLE IF NOT EXISTS feedback(
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, engram_id TEXT NOT NULL, useful INTEGER NOT NULL,
    agent TEXT, query TEXT);
CREATE INDEX IF NOT EXISTS feedback_engram ON feedback(engram_id);
CREATE TABLE IF NOT EXISTS screened(id INTEGER PRIMARY KEY, ts REAL NOT NULL, kind TEXT NOT NULL, door TEXT);
"""


def columns(db: sqlite3.Connection, table: str) -> set[str]:
    """The column names of ``table`` (empty when it does not exist)."""
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


#: The tables other tables' foreign keys name (their ``id`` must be their primary key).
PARENTS = ("recalls", "injections")


def keyed(db: sqlite3.Connection, table: str) -> bool:
    """True when ``table``'s ``id`` is its primary key (or the table does not exist)."""
    info = list(db.execute(f"PRAGMA table_info({table})"))
    return not info or any(r[1] == "id" and r[5] for r in info)


def rekey(db: sqlite3.Connection, table: str) -> None:
    """Rebuild ``table`` as :data:`SCHEMA` makes it, keeping every row (foreign keys off meanwhile).

    A table copied by ``CREATE TABLE ... AS SELECT`` (a hand repair, a tool's export) has no primary key, and a
    foreign key naming it fails every insert into the child table ("foreign key mismatch"): in one transaction,
    a whole record (issue 49: a recall's record is one transaction).
    """
    made = re.search(rf"CREATE TABLE IF NOT EXISTS {table}\(.*?\);", SCHEMA, re.S)
    assert made is not None, table
    cols = ", ".join(sorted(columns(db, table)))
    db.commit()
    db.execute("PRAGMA foreign_keys=OFF")  # else the DROP deletes the child rows (cascade) or fails
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute(made.group(0).replace(f"EXISTS {table}(", f"EXISTS {table}_keyed("))
        db.execute(f"INSERT INTO {table}_keyed({cols}) SELECT {cols} FROM {table}")
        db.execute(f"DROP TABLE {table}")
        db.execute(f"ALTER TABLE {table}_keyed RENAME TO {table}")
        db.execute("COMMIT")
    except sqlite3.Error:
        db.execute("ROLLBACK")
        raise
    finally:
        db.execute("PRAGMA foreign_keys=ON")
    db.executescript(SCHEMA)  # its indexes went with the old table


def migrate(db: sqlite3.Connection) -> None:
    """Bring an older file up to :data:`SCHEMA_VERSION`, keeping every row.

    Schema 1 -> 2: ``recall_hits.above_floor`` (old rows stay NULL: recorded before the floor).
    Schema 2 -> 3: ``injections.recall_id`` (old rows stay NULL: recorded before injections named their recall).
    Any: a table that other tables' foreign keys name but whose ``id`` is not its primary key is rebuilt
    (:func:`rekey`).
    """
    if "above_floor" not in columns(db, "recall_hits"):
        db.execute("ALTER TABLE recall_hits ADD COLUMN above_floor INTEGER")
    if "recall_id" not in columns(db, "injections"):
        db.execute("ALTER TABLE injections ADD COLUMN recall_id INTEGER")
    for table in PARENTS:
        if not keyed(db, table):
            rekey(db, table)
    db.execute("INSERT OR REPLACE INTO meta VALUES('schema_version', ?)", (str(SCHEMA_VERSION),))
    db.commit()
