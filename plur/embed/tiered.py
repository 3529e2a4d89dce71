"""A two-level embedding cache: this machine's SQLite file in front of the shared database's vectors.

With the PostgreSQL store (setting ``store``) a text is embedded once for every machine: a lookup tries
the local :class:`~plur.embed.cache.EmbeddingCache` first, then the database
(:class:`plur.store.pg.vectors.PgVectorCache`), copying what it finds there into the local file; a new
vector goes to both. Reads and writes of the shared level that fail because the database is down only
cost a re-embedding (a warning, once); :meth:`TieredCache.forget` does not hide such a failure, because
forget must erase every copy.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import DatabaseUnavailableError

log = logging.getLogger("plur.embed.cache")


class TieredCache:
    """``local`` (an EmbeddingCache) backed by ``shared`` (a PgVectorCache); the EmbeddingCache interface.

    Attributes:
        shared_hits: vectors served by the shared level (computed on another machine, or before).
    """

    def __init__(self, local: Any, shared: Any) -> None:
        self.local = local
        self.shared = shared
        self.path = getattr(local, "path", None)
        self.writable = getattr(local, "writable", True)
        self.shared_hits = 0
        self._warned = False
        self._noted: set[bytes] = set()  # statement keys whose chunk keys were recorded in the database

    def _warn(self, exc: Exception) -> None:
        if not self._warned:
            log.warning("%s (embeddings are computed on this machine meanwhile)", exc)
            self._warned = True

    def get_many(self, identity: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """key -> ``[dims] float32``: local hits, then the database's for the rest (copied locally)."""
        found = self.local.get_many(identity, keys)
        missing = [k for k in keys if k not in found]
        if missing:
            try:
                more = self.shared.get_many(identity, missing)
            except DatabaseUnavailableError as exc:
                self._warn(exc)
                more = {}
            if more:
                self.shared_hits += len(more)
                self.local.put_many(identity, more.items())
                found.update(more)
        return found

    def note_chunks(self, pairs: Sequence[tuple[bytes, bytes]]) -> None:
        """Record ``(statement key, chunk key)`` pairs in the database once per statement (skipped, with the
        warning, while it is down: a later embedding of the statement records them)."""
        todo = [(o, k) for o, k in pairs if o not in self._noted]
        if not todo:
            return
        try:
            self.shared.note_chunks(todo)
        except DatabaseUnavailableError as exc:
            self._warn(exc)
            return
        self._noted.update(o for o, _ in todo)

    def put_many(self, identity: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors in both levels (the shared one skipped, with a warning, while it is down)."""
        rows = list(items)
        self.local.put_many(identity, rows)
        try:
            self.shared.put_many(identity, rows)
        except DatabaseUnavailableError as exc:
            self._warn(exc)

    def forget(self, keys: Sequence[bytes]) -> int:
        """Erase the keys' vectors in both levels; returns the rows deleted in total.

        Raises:
            DatabaseUnavailableError: the shared level could not be reached (the local copies are gone).
        """
        self._noted.difference_update(bytes(k) for k in keys)
        n = self.local.forget(keys)
        return n + self.shared.forget(keys)

    def count(self, identity: str | None = None) -> int:
        """Vectors in the local level."""
        return self.local.count(identity)

    def identities(self) -> dict[str, int]:
        """identity -> vectors, local level."""
        return self.local.identities()

    def clear(self, identity: str | None = None) -> int:
        """Clear the local level only (the shared vectors belong to every machine)."""
        return self.local.clear(identity)

    def close(self) -> None:
        """Close both levels."""
        self.local.close()
        self.shared.close()
