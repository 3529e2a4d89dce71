"""Embeddings kept in the database (table ``plur_vectors``, a pgvector column), so a text is embedded once
for every machine that shares the store.

:class:`PgVectorCache` has the interface of :class:`plur.embed.cache.EmbeddingCache` (``get_many``,
``put_many``, ``forget``, ``count``, ``identities``, ``clear``, ``close``), keyed the same way: (model
identity, sha256 of the text's UTF-8 bytes).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .connect import connect, is_unreachable, register_vector, unavailable
from .schema import ensure_schema


def text_key(text: str) -> bytes:
    """sha256 of the text's UTF-8 bytes (32 bytes): the same key as :func:`plur.embed.cache.text_key`."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class PgVectorCache:
    """Vectors in ``plur_vectors(identity, text_sha256, vec)``, on a connection of its own.

    Args:
        uri: the database URI (setting ``store``).

    Every method raises :class:`~plur.errors.DatabaseUnavailableError` when the server cannot be reached.
    """

    _BATCH = 1000

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._lock = threading.Lock()
        self._conn: Any = None
        self.writable = True

    def _run(self, fn: Any, doing: str) -> Any:
        with self._lock:
            for attempt in (0, 1):
                if self._conn is None or self._conn.closed:
                    conn = connect(self.uri)
                    try:
                        ensure_schema(conn)
                        register_vector(conn)
                    except Exception:
                        conn.close()
                        raise
                    self._conn = conn
                try:
                    return fn(self._conn)
                except Exception as exc:
                    if not is_unreachable(exc):
                        raise
                    try:
                        self._conn.close()
                    finally:
                        self._conn = None
                    if attempt:
                        raise unavailable(self.uri, exc, doing) from None
            raise AssertionError("unreachable")  # pragma: no cover

    def get_many(self, identity: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """key -> ``[dims] float32`` for the keys stored (absent keys left out)."""
        def fn(conn: Any) -> dict[bytes, np.ndarray]:
            found: dict[bytes, np.ndarray] = {}
            for start in range(0, len(keys), self._BATCH):
                part = [bytes(k) for k in keys[start:start + self._BATCH]]
                for key, vec in conn.cursor(binary=True).execute("SELECT text_sha256, vec FROM plur_vectors WHERE identity = %s "
                                             "AND text_sha256 = ANY(%s)", (identity, part)):
                    arr = vec.to_numpy() if hasattr(vec, "to_numpy") else vec  # pgvector >= 0.4: a Vector
                    found[bytes(key)] = np.asarray(arr, dtype=np.float32)
            return found

        return self._run(fn, "reading stored embeddings") if keys else {}

    def put_many(self, identity: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors (one transaction); an existing (identity, key) is overwritten."""
        rows = [(identity, bytes(k), np.ascontiguousarray(v, dtype=np.float32)) for k, v in items]
        if not rows:
            return

        def fn(conn: Any) -> None:
            with conn.transaction(), conn.cursor() as cur:
                if len(rows) <= 50:
                    cur.executemany("INSERT INTO plur_vectors VALUES (%s, %s, %s) ON CONFLICT (identity, text_sha256) "
                                    "DO UPDATE SET vec = excluded.vec", rows)
                    return
                # many: binary COPY into a temporary table, then one upsert (~10x faster than INSERTs)
                cur.execute("CREATE TEMP TABLE plur_vectors_in (identity text, text_sha256 bytea, vec vector) "
                            "ON COMMIT DROP")
                with cur.copy("COPY plur_vectors_in FROM STDIN WITH (FORMAT BINARY)") as copy:
                    copy.set_types(["text", "bytea", "vector"])
                    for row in rows:
                        copy.write_row(row)
                cur.execute("INSERT INTO plur_vectors SELECT DISTINCT ON (identity, text_sha256) * FROM plur_vectors_in "
                            "ON CONFLICT (identity, text_sha256) DO UPDATE SET vec = excluded.vec")

        self._run(fn, "saving embeddings")

    def forget(self, keys: Sequence[bytes]) -> int:
        """Delete the vectors of these keys for every model identity; returns how many rows went."""
        if not keys:
            return 0
        return int(self._run(lambda conn: conn.execute("DELETE FROM plur_vectors WHERE text_sha256 = ANY(%s)",
                                                       ([bytes(k) for k in keys],)).rowcount or 0,
                             "erasing embeddings"))

    def note_chunks(self, pairs: Sequence[tuple[bytes, bytes]]) -> None:
        """Record ``(statement key, chunk key)`` pairs in ``plur_chunk_keys``, so that a forget on any machine
        (also one without a model, which cannot chunk) erases the chunks' vectors (:meth:`PgStore.delete`)."""
        if not pairs:
            return
        self._run(lambda conn: conn.execute(
            "INSERT INTO plur_chunk_keys SELECT * FROM unnest(%s::bytea[], %s::bytea[]) ON CONFLICT DO NOTHING",
            ([bytes(o) for o, _ in pairs], [bytes(k) for _, k in pairs])), "saving chunk keys")

    def present(self, keys: Sequence[bytes]) -> set[bytes]:
        """The keys among ``keys`` that have a stored vector (any identity)."""
        def fn(conn: Any) -> set[bytes]:
            out: set[bytes] = set()
            for start in range(0, len(keys), 10000):
                part = [bytes(k) for k in keys[start:start + 10000]]
                out.update(bytes(r[0]) for r in conn.execute(
                    "SELECT DISTINCT text_sha256 FROM plur_vectors WHERE text_sha256 = ANY(%s)", (part,)))
            return out
        return set(self._run(fn, "reading embeddings")) if keys else set()

    def count(self, identity: str | None = None) -> int:
        """Number of stored vectors, for one identity or all."""
        if identity is None:
            return int(self._run(lambda c: c.execute("SELECT count(*) FROM plur_vectors").fetchone()[0], "counting"))
        return int(self._run(lambda c: c.execute("SELECT count(*) FROM plur_vectors WHERE identity = %s",
                                                 (identity,)).fetchone()[0], "counting"))

    def identities(self) -> dict[str, int]:
        """identity -> number of vectors."""
        return dict(self._run(lambda c: c.execute(
            "SELECT identity, count(*) FROM plur_vectors GROUP BY identity").fetchall(), "counting"))

    def clear(self, identity: str | None = None) -> int:
        """Delete the vectors of one identity (or all)."""
        if identity is None:
            return int(self._run(lambda c: c.execute("DELETE FROM plur_vectors").rowcount, "clearing"))
        return int(self._run(lambda c: c.execute("DELETE FROM plur_vectors WHERE identity = %s",
                                                 (identity,)).rowcount, "clearing"))

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
