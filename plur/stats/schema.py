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


def migrate(db: sqlite3.Connection) -> None:
    """Bring an older file up to :data:`SCHEMA_VERSION`, keeping every row.

    Schema 1 -> 2: ``recall_hits.above_floor`` (old rows stay NULL: recorded before the floor).
    Schema 2 -> 3: ``injections.recall_id`` (old rows stay NULL: recorded before injections named their recall).
    """
    if "above_floor" not in columns(db, "recall_hits"):
        db.execute("ALTER TABLE recall_hits ADD COLUMN above_floor INTEGER")
    if "recall_id" not in columns(db, "injections"):
        db.execute("ALTER TABLE injections ADD COLUMN recall_id INTEGER")
    db.execute("INSERT OR REPLACE INTO meta VALUES('schema_version', ?)", (str(SCHEMA_VERSION),))
    db.commit()
