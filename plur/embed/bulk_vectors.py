"""One range scan of the embedding cache for a bulk build, instead of one keyed lookup per chunk.

A build of the indexes from cached embeddings looks up every chunk's vector in the cache
(:meth:`plur.embed.cache.EmbeddingCache.get_many`): at 100k engrams 144k keyed lookups, each a B-tree descent
and an overflow page (a 1,536-byte vector does not fit a 4 KiB page's local payload), 4.3 s of CPU and 8.7 s of
wall at load 5, against 0.6 s and 1.2 s for reading the same rows in one scan of the model's key range
(issue 49). Python's sqlite3 also lets go of the GIL at every row it steps, so each lookup is a turn taken with
the lexical thread of a rebuild (:mod:`plur.index.rebuild`).

:class:`BulkVectors` reads every vector of one model identity in one scan, in key order, into an unlinked scratch
file beside the cache (page cache, not the process's memory: at 100k engrams the vectors are 221 MB, half the
build's RSS budget), and keeps only the sorted keys in memory (``[n] S32``, 32 bytes a vector). Its
:meth:`~BulkVectors.get_many` answers like the cache's: a batch's keys are found with one ``searchsorted``, their
rows copied out of a read-only map of the scratch file :data:`PAGE_ROWS` at a time (the GIL held: a read call a
row would let go of it a row), the map's pages dropped after each copy so they never add up in RSS. Keys it does not hold (vectors written after the
scan) are looked up in the cache as before.
"""

from __future__ import annotations

import logging
import mmap
import os
import sqlite3
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["BulkVectors", "scanned", "worth_scanning"]

log = logging.getLogger("plur.embed.cache")
#: Rows fetched from SQLite per ``fetchmany`` of the scan.
SCAN_ROWS = 1024
#: Rows copied out of the scratch file's map before its pages are dropped. The page cache holds the file in large
#: folios (2 MiB here), and a fault maps the whole folio: 740 random rows mapped all 221 MB of a 144k-vector file
#: (RSS +213 MiB). A batch's rows are copied in file order, 8 at a time: at most 8 folios mapped (fewer: a batch
#: of ~740 rows has ~7 in a folio), then dropped.
PAGE_ROWS = 8


def worth_scanning(cache: Any, dims: int, chunks_wanted: int) -> bool:
    """Whether one scan of the cache's vectors beats ``chunks_wanted`` keyed lookups.

    A scan reads every row of the model (~7x cheaper a row than a lookup), so it pays when the build wants a good
    share of the file: a rebuild, not a thousand new engrams beside a million cached. Judged by the file's size
    against ``8 x chunks_wanted`` rows of ``4 x dims + 64`` bytes (a row takes at least that): counting the
    model's rows would read as much of the file as the scan (3.3 s at 144k vectors).
    """
    path = getattr(cache, "path", None)
    if chunks_wanted <= 0 or not hasattr(cache, "_conn") or path is None:
        return False
    try:
        size_bytes = os.path.getsize(path)
    except OSError:
        return False
    return 0 < size_bytes <= 8 * chunks_wanted * (4 * int(dims) + 64)


class BulkVectors:
    """Every cached vector of one model identity, read in one range scan; ``get_many`` as the cache's.

    Args:
        cache: the :class:`~plur.embed.cache.EmbeddingCache` (its connection and lock are used; its
            :meth:`~plur.embed.cache.EmbeddingCache.get_many` answers for keys the scan did not see).
        identity: the model identity whose vectors are read.
        dims: vector width; rows of another width are left to the cache (which skips them too).
        folder: where the scratch file goes (default: beside the cache file).

    Raises:
        OSError: the scratch file cannot be written (the caller falls back to keyed lookups).
        sqlite3.Error: the scan fails.
    """

    def __init__(self, cache: Any, identity: str, dims: int, folder: str | os.PathLike[str] | None = None) -> None:
        self.cache, self.identity, self.dims = cache, identity, int(dims)
        self.row_bytes = 4 * self.dims
        self._file = tempfile.TemporaryFile(dir=folder if folder is not None else cache.path.parent,
                                            prefix="plur-bulk-vectors-")
        keys = bytearray()  # 32 bytes a key, not a bytes object each (~65): the build's RSS
        try:
            with cache._lock:
                cur = cache._conn.execute("SELECT text_sha256, vector FROM vectors WHERE identity = ? AND dims = ? "
                                          "ORDER BY text_sha256", (identity, self.dims))
                while rows := cur.fetchmany(SCAN_ROWS):
                    keep = [(k, v) for k, v in rows if len(v) == self.row_bytes and len(k) == 32]
                    keys += b"".join(k for k, _ in keep)
                    self._file.write(b"".join(v for _, v in keep))
                    del rows, keep
            self._file.flush()
        except BaseException:
            self._file.close()
            raise
        held = np.frombuffer(bytes(keys), dtype="S32")
        del keys
        self.count = len(held)
        ordered = len(held) < 2 or bool(np.all(held[1:] > held[:-1]))  # SQLite's key order: no second copy
        self._order: np.ndarray | None = None if ordered else np.argsort(held, kind="stable")  # position -> row
        self._keys = held if self._order is None else held[self._order]
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if self.count else None

    def __len__(self) -> int:
        """Vectors the scan read."""
        return self.count

    def get_many(self, identity: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Like :meth:`plur.embed.cache.EmbeddingCache.get_many`: key -> ``[dims] float32`` for the keys present.

        Keys of 32 bytes the scan read come from the scratch file; any other key (another identity, a vector
        written since the scan) is looked up in the cache.
        """
        keys = list(keys)
        if identity != self.identity or self._map is None or not keys:
            return self.cache.get_many(identity, keys)
        wanted = np.array(keys, dtype="S32")
        at = np.minimum(np.searchsorted(self._keys, wanted), len(self._keys) - 1)
        hit = (self._keys[at] == wanted) & np.fromiter((len(k) == 32 for k in keys), dtype=bool, count=len(keys))
        rows = at[hit] if self._order is None else self._order[at[hit]]
        table = np.frombuffer(self._map, dtype=np.float32).reshape(self.count, self.dims)
        by_row = np.argsort(rows, kind="stable")                # in file order: a folio mapped once, not per row
        vecs = np.empty((len(rows), self.dims), dtype=np.float32)
        try:
            for start in range(0, len(rows), PAGE_ROWS):  # the GIL held: no turn taken with another thread a row
                part = by_row[start:start + PAGE_ROWS]
                vecs[part] = table[rows[part]]
                _drop_pages(self._map)
        finally:
            del table
            _drop_pages(self._map)
        found = dict(zip((k for k, h in zip(keys, hit.tolist()) if h), vecs))
        missing = [k for k, h in zip(keys, hit.tolist()) if not h]
        if missing:
            found.update(self.cache.get_many(identity, missing))
        return found

    def close(self) -> None:
        """Drop the map and the scratch file (idempotent)."""
        if self._map is not None:
            self._map.close()
            self._map = None
        self._file.close()

    def __enter__(self) -> "BulkVectors":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_pages(view: mmap.mmap) -> None:
    """Take a read-only map's pages out of this process's RSS (they stay in the page cache); no-op where unknown."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is not None:
        try:
            view.madvise(advice)
        except (OSError, ValueError):
            pass


class scanned:  # noqa: N801 - used as a context manager, like contextlib's
    """While open, ``embedder``'s document vectors come from one :class:`BulkVectors` scan of its cache.

    Nothing happens (keyed lookups as before) when the cache is not a local SQLite one, when the build wants too
    few of its vectors (:func:`worth_scanning`), or when the scan fails (a warning).

    Args:
        embedder: a :class:`~plur.embed.cache.CachedEmbedder` (its ``bulk`` is set while open).
        chunks_wanted: about how many chunks the build will look up (engrams pending, say).
    """

    def __init__(self, embedder: Any, chunks_wanted: int) -> None:
        self.embedder, self.chunks_wanted = embedder, int(chunks_wanted)
        self.bulk: BulkVectors | None = None

    def __enter__(self) -> BulkVectors | None:
        emb = self.embedder
        if getattr(emb, "bulk", None) is not None or not worth_scanning(emb.cache, emb.dims, self.chunks_wanted):
            return None
        try:
            self.bulk = BulkVectors(emb.cache, emb.identity, emb.dims)
        except (OSError, sqlite3.Error) as exc:
            log.warning("reading the embedding cache in one scan failed (%s); looking vectors up one by one", exc)
            return None
        emb.bulk = self.bulk
        return self.bulk

    def __exit__(self, *exc: object) -> None:
        if self.bulk is not None:
            self.embedder.bulk = None
            self.bulk.close()
            self.bulk = None
