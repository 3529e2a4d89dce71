"""What ``plur doctor`` and a forget ask of :class:`plur.store.pg.store.PgStore` beyond reading and writing:
the folder store's health calls (nothing is ever quarantined in a database) and the VACUUM after a forget."""

from __future__ import annotations

from typing import Any

from ...errors import NotFoundError
from ..engram import Engram
from .connect import redact


class PgHealth:
    """Mixed into :class:`~plur.store.pg.store.PgStore` (uses its ``uri``, ``_connection``, ``_feed``, ``_cursor``)."""

    uri: str
    _feed: Any
    _cursor: int
    _loaded: bool
    _by_id: dict[str, Any]
    _connection: Any

    def _vacuum(self) -> None:
        """Plain VACUUM of the rows a forget deleted (best effort): dead tuples are freed now, not at the next
        autovacuum, so new rows overwrite them (README "What PostgreSQL keeps after a forget")."""
        try:
            self._connection().execute("VACUUM plur_engrams, plur_vectors")
        except Exception as exc:  # noqa: BLE001 - not the owner, or the server went away: autovacuum does it later
            import logging

            logging.getLogger("plur.store.pg").info("VACUUM after forget skipped: %s", " ".join(str(exc).split()))

    def quarantined(self) -> list[dict[str, Any]]:
        """Always ``[]``: rows are validated on write, nothing is quarantined."""
        return []

    def quarantined_count(self) -> int:
        """Always 0."""
        return 0

    def restore(self, name: str) -> Engram:
        """Nothing to restore in a database. Raises NotFoundError."""
        raise NotFoundError(f"no quarantined file {name!r}: engrams in a database are never quarantined")

    def lock_state(self) -> dict[str, Any]:
        """For ``plur doctor``: the folder store's keys (``locked`` False: writers hold a transaction-level advisory
        lock only while they write; ``path``: the database) plus ``kind``, ``listening`` and ``cursor``."""
        feed = self._feed
        return {"locked": False, "path": f"{redact(self.uri)} (advisory lock)", "owner": None, "kind": "postgresql",
                "listening": bool(feed and feed.connected), "cursor": self._cursor}

    def manifest_info(self) -> dict[str, Any]:
        """What ``plur doctor`` shows for the folder's manifest: the database and the cursor."""
        return {"path": redact(self.uri), "exists": self._loaded, "bytes": 0, "entries": len(self._by_id)}

    def save_manifest(self) -> None:
        """Nothing to save: the database is the record."""

