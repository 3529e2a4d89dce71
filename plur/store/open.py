"""Open the store the settings name: the YAML folder (default) or a PostgreSQL database (setting ``store``)."""

from __future__ import annotations

from typing import Any


def open_store(settings: Any) -> Any:
    """The engram store for ``settings``.

    Args:
        settings: a :class:`plur.config.Settings`.

    Returns:
        :class:`plur.store.store.EngramStore` on ``<home>/engrams`` when ``settings.store`` is empty,
        else :class:`plur.store.pg.store.PgStore` on that URI (psycopg imported only then).
    """
    if settings.store:
        from .pg.store import PgStore

        return PgStore(settings.store, settings.home, max_statement_bytes=settings.max_statement_bytes,
                       retention_s=settings.feed_retention_days * 86400.0)
    from .store import EngramStore

    return EngramStore(settings.home, max_statement_bytes=settings.max_statement_bytes, fsync=settings.fsync)
