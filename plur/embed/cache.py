"""The persistent embedding cache: no text is embedded twice with the same model, across runs too.

:class:`EmbeddingCache` keeps vectors in SQLite keyed by (model identity, :func:`text_key`);
:class:`CachedEmbedder` wraps any :class:`plur.embed.embedder.Embedder` so only unseen texts reach the model.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import StoreError
from .chunk_spans import SCHEMA as SPANS_SCHEMA

if TYPE_CHECKING:
    from .embedder import Embedder

#: A child of ``plur.embed``, so handlers and levels set there still apply to the cache's warnings.
log = logging.getLogger("plur.embed.cache")
#: The vectors table: float32 blobs keyed by (model identity, :func:`text_key`).
_VECTORS = ("CREATE TABLE IF NOT EXISTS vectors (identity TEXT NOT NULL, text_sha256 BLOB NOT NULL, dims INTEGER NOT "
            "NULL, vector BLOB NOT NULL, PRIMARY KEY (identity, text_sha256)) WITHOUT ROWID")


def text_key(text: str) -> bytes:
    """The cache key of a text: sha256 of its UTF-8 bytes (32 bytes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Vectors on disk keyed by (model identity, sha256 of the text).

    One SQLite file (WAL journal, so readers never block the writer and several processes can
    share it), table ``vectors(identity, text_sha256, dims, vector)``: vectors are float32 blobs.
    The cache is disposable: a file that is not a readable SQLite database is renamed to
    ``<name>.corrupt-<unix time>`` and a new one started, with a warning; a database another process holds
    locked is waited for, never moved aside.

    Args:
        path: the database file, e.g. ``<home>/cache/embeddings.sqlite``; parent folders are created.
    """

    _BATCH = 500  # keys per SELECT (well under SQLite's variable limit)

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.writable = True
        try:
            self._conn = self._open_when_free()
        except sqlite3.DatabaseError as exc:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            log.warning("embedding cache %s is unreadable (%s); moved aside to %s", self.path, exc, aside)
            self.path.rename(aside)
            for suffix in ("-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            self._conn = self._open()

    #: Tries to open a cache another process holds locked (each waits SQLite's busy timeout, 30 s) before giving up.
    _BUSY_TRIES = 4

    def _open_when_free(self) -> sqlite3.Connection:
        """:meth:`_open`, tried again while another process holds the database locked; a lock is never damage.

        A file another process kept locked past the busy timeout (a forget's VACUUM of a large cache on a busy
        machine) was moved aside as "unreadable" with everything in it: 146k vectors, 47 minutes of embedding on
        this machine, lost to a lock (issue 49). Locked or busy is now waited for, then a clear error.

        Raises:
            StoreError: still locked after :data:`_BUSY_TRIES` tries. sqlite3.DatabaseError: anything else.
        """
        for attempt in range(self._BUSY_TRIES):
            try:
                return self._open()
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
                if attempt + 1 == self._BUSY_TRIES:
                    raise StoreError(f"the embedding cache {self.path} stays locked by another process ({exc}); "
                                     "try again when it is done (a forget compacts the cache), or set cache_dir "
                                     "to another folder") from None
                time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    def _open(self) -> sqlite3.Connection:
        from ..store.sqlite_files import connect

        conn, self.writable = connect(self.path, timeout_s=30.0)  # read-only home: read-only cache
        try:  # a read-only file has the tables; an in-memory stand-in gets them
            conn.execute(_VECTORS)
            conn.execute(SPANS_SCHEMA)  # where texts were cut into chunks (plur.embed.chunk_spans)
        except sqlite3.Error:
            if self.writable:
                conn.close()
                raise
        return conn

    def get_many(self, identity: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Look up vectors of model ``identity`` by :func:`text_key` digests: key -> ``[dims] float32`` for the
        keys present (absent keys are left out)."""
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), self._BATCH):
                part = list(keys[start:start + self._BATCH])
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT text_sha256, dims, vector FROM vectors WHERE identity = ? AND text_sha256 IN ({marks})",
                    [identity, *part],
                ).fetchall()
                for key, dims, blob in rows:
                    if len(blob) == 4 * dims:
                        found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, identity: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors (one transaction); an existing (identity, key) is overwritten."""
        rows = [(identity, key, int(v.shape[-1]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
                for key, v in items]
        if not rows or not self.writable:
            return
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise StoreError(f"cannot write the embedding cache {self.path} ({exc}); check disk space "
                                 "and permissions, or delete the file (it is only a cache)") from None

    def forget(self, keys: Sequence[bytes]) -> int:
        """Delete the vectors of these :func:`text_key` digests, for every model identity, leaving no copy.

        Deleted rows are zeroed (``secure_delete``), the WAL truncated and the file VACUUMed (see
        :func:`plur.store.sqlite_files.scrub`).

        Returns:
            Number of rows deleted (0 on a read-only cache).
        """
        if not self.writable or not keys:
            return 0
        from ..store.sqlite_files import scrub

        n = 0
        with self._lock:
            for start in range(0, len(keys), self._BATCH):
                part = list(keys[start:start + self._BATCH])
                cur = self._conn.execute(
                    f"DELETE FROM vectors WHERE text_sha256 IN ({','.join('?' * len(part))})", part)
                n += cur.rowcount or 0
                self._conn.execute(f"DELETE FROM chunk_spans WHERE text_sha256 IN ({','.join('?' * len(part))})", part)
            scrub(self._conn)
        return n

    def count(self, identity: str | None = None) -> int:
        """Number of cached vectors, for one identity or all."""
        with self._lock:
            if identity is None:
                return int(self._conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
            return int(self._conn.execute("SELECT COUNT(*) FROM vectors WHERE identity = ?", (identity,)).fetchone()[0])

    def keys(self) -> set[bytes]:
        """Every cached text key, whatever the model identity (a full resync compares them with the database's)."""
        with self._lock:
            return {bytes(k) for (k,) in self._conn.execute("SELECT DISTINCT text_sha256 FROM vectors")}

    def identities(self) -> dict[str, int]:
        """identity -> number of vectors (for ``plur doctor`` and pruning stale models)."""
        with self._lock:
            return dict(self._conn.execute("SELECT identity, COUNT(*) FROM vectors GROUP BY identity").fetchall())

    def clear(self, identity: str | None = None) -> int:
        """Delete the vectors of one identity (or all); returns how many were deleted."""
        with self._lock:
            if identity is None:
                cur = self._conn.execute("DELETE FROM vectors")
                self._conn.execute("DELETE FROM chunk_spans")
            else:
                cur = self._conn.execute("DELETE FROM vectors WHERE identity = ?", (identity,))
                self._conn.execute("DELETE FROM chunk_spans WHERE identity = ?", (identity,))
            return cur.rowcount

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "EmbeddingCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _busy(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another connection holds the database, which is not damage."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (5, 6)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


@dataclass
class CacheStats:
    """Counters of a :class:`CachedEmbedder`: texts served from the cache / embedded by the model."""

    hits: int = 0
    misses: int = 0
    query_hits: int = 0
    query_misses: int = 0


class CachedEmbedder:
    """An :class:`plur.embed.embedder.Embedder` that asks ``inner`` only for texts it has not embedded before.

    Documents go through :class:`EmbeddingCache` (persistent); duplicates within one call are
    embedded once. Queries are kept in an in-memory LRU of ``query_cache_size`` entries.

    Args:
        inner: the embedder doing the work.
        cache: where document vectors persist.
        query_cache_size: queries kept in memory.
    """

    #: Most chunks embedded per text by :meth:`embed_document_chunks` (None = all); set from ``max_embed_chunks``.
    max_chunks: int | None = None
    #: Tokens per chunk (None = the model's limit); set from ``embed_chunk_tokens``.
    chunk_tokens: int | None = None
    _takes_tokens: bool | None = None
    #: While a bulk build reads the cache in one scan (:meth:`bulk_reads`): where document vectors are looked up.
    bulk: Any = None

    def __init__(self, inner: Embedder, cache: EmbeddingCache, query_cache_size: int = 1024) -> None:
        self.inner = inner
        self.cache = cache
        self.stats = CacheStats()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._qlock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dims(self) -> int:
        return self.inner.dims

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def max_seq_length(self) -> int:
        return self.inner.max_seq_length

    @property
    def index_identity(self) -> str:
        """:attr:`identity` plus the chunking (``|chunks=<tokens>x<max chunks>``): what a dense index's vectors
        depend on. The cache keys vectors by :attr:`identity` and chunk text, so a chunking change re-embeds
        only the chunks that changed."""
        if self.chunk_tokens is None and self.max_chunks is None:
            return self.identity
        return f"{self.identity}|chunks={self.chunk_tokens or 0}x{self.max_chunks or 0}"

    @property
    def device(self) -> str | None:
        return getattr(self.inner, "device", None)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Like :meth:`plur.embed.embedder.Embedder.embed_documents`; only unseen texts reach ``inner`` (in one batch):
        ``[len(texts), dims] float32`` unit vectors, identical to what ``inner`` returned when each was first embedded.
        """
        texts = list(texts)
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        keys = [text_key(t) for t in texts]
        unique: dict[bytes, int] = {}
        for i, k in enumerate(keys):
            unique.setdefault(k, i)
        found = (self.cache if self.bulk is None else self.bulk).get_many(self.identity, list(unique))
        todo = [k for k in unique if k not in found]
        if todo:
            vecs = self.inner.embed_documents([texts[unique[k]] for k in todo])
            try:
                self.cache.put_many(self.identity, zip(todo, vecs))
            except StoreError as exc:  # a cache that cannot grow (full disk) must not fail the caller
                log.warning("%s", exc)
            found.update(zip(todo, vecs))
        self.stats.hits += len(unique) - len(todo)
        self.stats.misses += len(todo)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def bulk_reads(self, chunks_wanted: int) -> Any:
        """A context manager in which document vectors come from one scan of the cache (:mod:`.bulk_vectors`)."""
        from .bulk_vectors import scanned

        return scanned(self, chunks_wanted)

    def cached_query(self, text: str) -> np.ndarray | None:
        """:meth:`embed_query`'s vector when memoised (a copy), else None; never calls the model (issue 49)."""
        with self._qlock:
            hit = self._queries.get(text)
            if hit is not None:
                self._queries.move_to_end(text)
                self.stats.query_hits += 1
        return hit.copy() if hit is not None else None

    @property
    def queries_beside_model(self) -> bool:  # the inner embedder's: model_thread.submit_query may embed queries
        return bool(getattr(self.inner, "queries_beside_model", False))

    def embed_query(self, text: str) -> np.ndarray:
        """Like :meth:`plur.embed.embedder.Embedder.embed_query`, memoised in memory: ``[dims] float32``."""
        if (hit := self.cached_query(text)) is not None:
            return hit
        vec = np.asarray(self.inner.embed_query(text), dtype=np.float32)
        with self._qlock:
            self.stats.query_misses += 1
            self._queries[text] = vec
            while len(self._queries) > self._query_cache_size:
                self._queries.popitem(last=False)
        return vec.copy()

    def prepare_fast_queries(self, runtime: str = "auto", cache_dir: Path | None = None) -> bool:
        """Delegates to ``inner.prepare_fast_queries`` where it has one (else False)."""
        prepare = getattr(self.inner, "prepare_fast_queries", None)
        return bool(prepare(runtime, cache_dir)) if prepare is not None else False

    @property
    def query_runtime(self) -> str:
        """The inner embedder's query path (``eager`` when it has no other)."""
        return str(getattr(self.inner, "query_runtime", "eager"))

    def chunk_texts(self, texts: Sequence[str], max_tokens: int | None = None) -> tuple[list[str], np.ndarray]:
        """Delegates to ``inner.chunk_texts`` (``max_tokens`` defaults to :attr:`chunk_tokens`)."""
        tokens = max_tokens or self.chunk_tokens
        if tokens and self._takes_tokens is None:
            self._takes_tokens = _takes_max_tokens(self.inner)
        window = int(tokens) if tokens and self._takes_tokens else 0
        cut = (lambda part: self.inner.chunk_texts(part, window)) if window else self.inner.chunk_texts
        if not isinstance(self.cache, EmbeddingCache) or not texts:
            return cut(list(texts))
        from .chunk_spans import cached_chunks  # spans cut before: no tokenizing again (issue 49)

        return cached_chunks(self.cache, self.identity, window, texts, [text_key(t) for t in texts], cut)

    def embed_document_chunks(self, texts: Sequence[str], tokens: Sequence[int | None] | None = None,
                              headers: Sequence[str | None] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Chunk with ``inner``'s tokenizer (:meth:`document_chunks`), then embed the chunks through the cache.

        Returns:
            (``[m, dims] float32`` unit vectors, ``[m] int64`` owner index into ``texts``).
        """
        chunks, owners = self.document_chunks(texts, tokens, headers)
        note = getattr(self.cache, "note_chunks", None)  # a shared store: who owns each chunk, for forgets
        if note is not None:
            note([(text_key(texts[o]), text_key(c)) for c, o in zip(chunks, owners.tolist()) if c != texts[o]])
        return self.embed_documents(chunks), owners

    def document_chunks(self, texts: Sequence[str], tokens: Sequence[int | None] | None = None,
                        headers: Sequence[str | None] | None = None) -> tuple[list[str], np.ndarray]:
        """The chunk texts :meth:`embed_document_chunks` embeds, and their owners.

        Chunks hold at most :attr:`chunk_tokens` tokens (setting ``embed_chunk_tokens``), or
        ``tokens[i]`` for text ``i`` when given (the index asks for smaller chunks of conversation
        turns, setting ``turn_chunk_tokens``). At most :attr:`max_chunks` chunks per text are
        embedded (the first ones; setting ``max_embed_chunks``; scaled up for a text cut into
        smaller chunks, so the same length of text is covered), which bounds the time one huge
        engram costs to index; the rest of its text is still found by BM25, which indexes the
        whole statement. ``headers[i]`` (e.g. ``"Calvin: "``) is put in front of each chunk of
        text ``i`` that does not already start with it, so every piece of a turn says who spoke.

        Args:
            texts: the documents.
            tokens: per text, tokens per chunk (``None`` = :attr:`chunk_tokens`); ``None`` = all default.
            headers: per text, a prefix for its chunks (``None`` = none); ``None`` = no headers.

        Returns:
            (chunks, owners): ``owners`` ``[m] int64`` indexes ``texts``, grouped and ascending.
        """
        n = len(texts)
        sizes = list(tokens) if tokens is not None else [None] * n
        if len(sizes) != n or (headers is not None and len(headers) != n):
            raise ValueError(f"tokens/headers must have one entry per text ({n})")
        base = self.chunk_tokens or self.max_seq_length
        groups: dict[int | None, list[int]] = {}
        for i, size in enumerate(sizes):
            groups.setdefault(size if size and size != self.chunk_tokens else None, []).append(i)
        per_text: list[list[str]] = [[] for _ in range(n)]
        for size, members in groups.items():
            chunks, owners = self.chunk_texts([texts[i] for i in members], size)
            limit = self.max_chunks
            if limit is not None and size:
                limit = max(limit, -(-limit * base // size))
            for c, o in zip(chunks, owners.tolist()):
                bucket = per_text[members[o]]
                if limit is None or len(bucket) < limit:
                    bucket.append(c)
        out: list[str] = []
        own: list[int] = []
        for i, bucket in enumerate(per_text):
            head = headers[i] if headers is not None else None
            for c in bucket:
                out.append(head + c if head and not c.startswith(head) else c)
                own.append(i)
        return out, np.asarray(own, dtype=np.int64)

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, cache={str(self.cache.path)!r})"


_WARNED_CHUNKING: set[str] = set()


def _takes_max_tokens(embedder: Any) -> bool:
    """Whether ``embedder.chunk_texts`` accepts ``max_tokens`` (an embedder written before it did is
    chunked at its own limit, with one warning naming it)."""
    import inspect

    try:
        ok = "max_tokens" in inspect.signature(embedder.chunk_texts).parameters
    except (TypeError, ValueError):
        ok = False
    if not ok and type(embedder).__name__ not in _WARNED_CHUNKING:
        _WARNED_CHUNKING.add(type(embedder).__name__)
        log.warning("%s.chunk_texts takes no max_tokens: its chunks keep the model's limit and the setting "
                    "embed_chunk_tokens is ignored for it", type(embedder).__name__)
    return ok


__all__ = ["CacheStats", "CachedEmbedder", "EmbeddingCache", "text_key"]
