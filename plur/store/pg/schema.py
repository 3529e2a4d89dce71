"""The tables of the PostgreSQL store, created on first use (idempotent, safe when several machines start at once).

::

    plur_meta(key, value)                      schema version
    plur_engrams(id, scope, status, content_hash, doc json, yaml)
        doc: Engram.to_dict() (unknown keys included) as ``json``, not ``jsonb``: jsonb sorts keys, and
        key order is part of an engram's YAML and so of its version token; ``doc::jsonb`` gives the
        jsonb operators (an expression index can serve them). yaml: the engram's YAML text, only when its
        unknown keys do not survive JSON (NaN, non-text map keys...), so every engram round-trips exactly
    plur_changes(seq bigserial, id, op, at, keys)   the change feed: one row per write ("added" | "updated" |
        "removed"), ids and no text, read by every machine from its cursor (the last seq it applied); a
        "removed" row carries the sha256 keys of the texts whose vectors machines may cache (statement and
        chunks), so a machine that was off during the forget still erases its copies when it comes back
    plur_vectors(identity, text_sha256, vec)   embeddings computed once per (model identity, text)
    plur_homes(home, cursor, seen)             each home's applied cursor, so the feed can be pruned
        (:mod:`plur.store.pg.prune`); ``plur_meta`` row ``pruned_through`` is the last seq deleted
    plur_chunk_keys(owner, text_sha256)        the sha256 of each chunk text some machine embedded for a
        statement (owner: the statement's sha256), so a forget on a machine without a model still erases them

Writers serialise on one transaction-level advisory lock (:data:`WRITE_LOCK`), so feed sequence numbers
commit in order and a reader that has applied seq n has seen every change up to n.
"""

from __future__ import annotations

from typing import Any

from ...errors import StoreError

#: Bumped when the tables change shape; a database with a newer version is refused.
SCHEMA_VERSION = 2
#: pg_advisory_xact_lock key every writer takes ("plur" in ASCII).
WRITE_LOCK = 0x706C7572
#: pg_advisory_xact_lock key for creating the tables.
DDL_LOCK = WRITE_LOCK + 1
#: The NOTIFY channel; the payload is the change's seq.
CHANNEL = "plur_changes"

DDL = (
    "CREATE TABLE IF NOT EXISTS plur_meta (key text PRIMARY KEY, value text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS plur_engrams (id text PRIMARY KEY, scope text NOT NULL, status text NOT NULL, "
    "content_hash text NOT NULL, doc json NOT NULL, yaml text)",
    "CREATE INDEX IF NOT EXISTS plur_engrams_dedup ON plur_engrams (scope, content_hash) WHERE status = 'active'",
    "CREATE TABLE IF NOT EXISTS plur_changes (seq bigserial PRIMARY KEY, id text NOT NULL, op text NOT NULL, "
    "at timestamptz NOT NULL DEFAULT now(), keys bytea[])",
    "CREATE TABLE IF NOT EXISTS plur_vectors (identity text NOT NULL, text_sha256 bytea NOT NULL, "
    "vec vector NOT NULL, PRIMARY KEY (identity, text_sha256))",
    "CREATE TABLE IF NOT EXISTS plur_homes (home text PRIMARY KEY, cursor bigint NOT NULL, "
    "seen timestamptz NOT NULL DEFAULT now())",
    "CREATE TABLE IF NOT EXISTS plur_chunk_keys (owner bytea NOT NULL, text_sha256 bytea NOT NULL, "
    "PRIMARY KEY (owner, text_sha256))",
)


def ensure_schema(conn: Any) -> None:
    """Create the extension and tables when missing; refuse a database written by a newer plur.

    Args:
        conn: an autocommit psycopg connection.

    Raises:
        StoreError: pgvector cannot be enabled (the message says what to ask an administrator), or the
            schema is newer than this plur.
    """
    pg = __import__("psycopg")
    try:  # the usual case, one query: the tables are there, at this version
        with conn.transaction():
            row = conn.execute("SELECT value FROM plur_meta WHERE key = 'schema_version'").fetchone()
        if row is not None and int(row[0]) == SCHEMA_VERSION:
            return
    except pg.errors.UndefinedTable:
        pass
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK,))
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except pg.errors.InsufficientPrivilege:
            raise StoreError("the engram database lacks the pgvector extension and this user may not add it; "
                             "ask its administrator to run CREATE EXTENSION vector; in it") from None
        except pg.errors.FeatureNotSupported as exc:
            raise StoreError(f"pgvector is not installed on the database server ({exc}); install it "
                             "(https://github.com/pgvector/pgvector) or use a server that has it") from None
        for stmt in DDL:
            conn.execute(stmt)
        row = conn.execute("SELECT value FROM plur_meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            conn.execute("INSERT INTO plur_meta VALUES ('schema_version', %s)", (str(SCHEMA_VERSION),))
        elif int(row[0]) < SCHEMA_VERSION:  # version 1 lacked plur_homes, created above
            conn.execute("UPDATE plur_meta SET value = %s WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
        elif int(row[0]) > SCHEMA_VERSION:
            raise StoreError(f"the engram database has schema version {row[0]}, newer than this plur's "
                             f"{SCHEMA_VERSION}; upgrade plur on this machine")
