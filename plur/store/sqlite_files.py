"""Opening plur's SQLite side files (``stats.db``, the embedding cache) so reads survive a read-only home.

Both files are logs or caches beside the engram files, never the only copy of a memory. So:

* a writable file is opened in WAL mode (readers never block the writer) with
  ``PRAGMA secure_delete=ON``: deleted rows are overwritten with zeros, so forgetting an engram
  leaves no copy of its rows in free pages (https://sqlite.org/pragma.html#pragma_secure_delete);
* a file that cannot be written (read-only home or mount) is opened read-only
  (``immutable=1``: no ``-wal``/``-shm`` files are needed), and a missing one on a read-only
  folder becomes an empty in-memory database, so recall, ``section`` and ``doctor`` keep working;
* :func:`scrub` checkpoints and truncates the WAL and VACUUMs, so a deleted row survives in no
  journal either (used by ``forget``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote
from .atomic import private_dirs
from .modes import touch_private

log = logging.getLogger("plur.store.sqlite_files")


def _writable(path: Path) -> bool:
    folder = path.parent
    try:
        private_dirs(folder)
    except OSError:
        return False
    if not os.access(folder, os.W_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def connect(path: Path, *, timeout_s: float = 5.0, read_only: bool = False) -> tuple[sqlite3.Connection, bool]:
    """Open ``path`` for plur's use; see the module docstring.

    Args:
        path: the database file.
        timeout_s: how long a write waits for another process's write lock, in seconds.
        read_only: open read-only even when the file looks writable (after a write failed).

    Returns:
        ``(connection, writable)``; ``writable`` is False when the file was opened read-only (or
        as an empty in-memory stand-in) because the home cannot be written.

    Raises:
        sqlite3.DatabaseError: the file exists, is writable, and is not a SQLite database.
    """
    path = Path(path)
    if not read_only and _writable(path):
        touch_private(path)  # 0600 before SQLite creates it: its -wal and -shm files copy that mode
        conn = sqlite3.connect(path, check_same_thread=False, timeout=timeout_s, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA secure_delete=ON")
        except sqlite3.OperationalError as exc:  # read-only, full disk, I/O error: fall back to reading
            conn.close()
            log.warning("%s cannot be written (%s); opened read-only: nothing new is recorded", path, exc)
        else:
            return conn, True
    elif not read_only:  # asked for (a report, or a caller that saw a write fail and says so itself)
        log.warning("%s cannot be written (read-only home?); opened read-only: nothing new is recorded", path)
    if path.exists():
        uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
        return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None), False
    return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None), False


def scrub(conn: sqlite3.Connection) -> None:
    """After deleting rows: checkpoint and truncate the WAL, then VACUUM, so no old copy of them remains.

    Errors (another connection busy, disk full) are logged, not raised: the rows are already deleted
    and zeroed by ``secure_delete``.
    """
    for sql in ("PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"):
        try:
            conn.execute(sql)
        except sqlite3.Error as exc:
            log.warning("could not %s after a delete (%s); the next forget retries", sql, exc)


__all__ = ["connect", "scrub"]
