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
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` on ``conn`` (rolled back on an error, which is re-raised).

    :func:`connect` opens in autocommit mode, where ``with conn:`` makes no transaction: each statement was one,
    ~34 WAL pages for a recall's record of 10 hits in 12 commits instead of ~5 in one (issue 49).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


#: Commits between two checkpoints taken by :class:`CheckpointBehind` (a recall's record is ~5 pages of WAL, so
#: ~500 pages: about what SQLite's own autocheckpoint of 1,000 pages does).
CHECKPOINT_EVERY = 100


class CheckpointBehind:
    """WAL checkpoints of a connection's database taken on a thread of their own, not in its commits.

    SQLite checkpoints in the commit that grows the WAL past 1,000 pages: it copies them into the database file
    and fsyncs it. The recall whose record made that commit waited for it, ~1 recall in 200: 10 ms at p99 of
    ``stats.db`` records on this machine at load 4, 40-80 ms while 4 writers fsync each engram (issue 49, recall
    p99 under writers). :meth:`attach` turns SQLite's own off on a connection; :meth:`wrote` after each commit
    starts a ``PASSIVE`` checkpoint on a connection of the thread's own every :data:`CHECKPOINT_EVERY` commits
    (writers go on meanwhile). A checkpoint that fails turns SQLite's own back on.

    Args:
        path: the database file.
        every: commits between two checkpoints.
    """

    def __init__(self, path: Path, every: int = CHECKPOINT_EVERY) -> None:
        self.path, self.every = Path(path), int(every)
        self._conn: sqlite3.Connection | None = None
        self._since = 0
        self._thread: threading.Thread | None = None
        self._failed = False

    def attach(self, conn: sqlite3.Connection) -> None:
        """Take over ``conn``'s checkpoints (a writable WAL connection; its caller serialises its use)."""
        conn.execute("PRAGMA wal_autocheckpoint=0")
        self._conn = conn

    def wrote(self) -> None:
        """After a commit on the attached connection (under its caller's lock): start a checkpoint when due."""
        if self._conn is None:
            return
        if self._failed:
            with suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_autocheckpoint=1000")
            self._conn = None
            return
        self._since += 1
        if self._since >= self.every and not (self._thread is not None and self._thread.is_alive()):
            self._since = 0
            self._thread = threading.Thread(target=self._checkpoint, name="plur-wal-checkpoint", daemon=True)
            self._thread.start()

    def _checkpoint(self) -> None:
        try:
            conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                conn.close()
        except sqlite3.Error as exc:
            log.warning("could not checkpoint %s (%s); SQLite checkpoints it itself from now on", self.path, exc)
            self._failed = True

    def wait(self, timeout_s: float = 30.0) -> None:
        """Wait for a checkpoint in flight (before a checkpoint of the caller's own, or closing)."""
        t = self._thread
        if t is not None:
            t.join(timeout_s)


__all__ = ["CHECKPOINT_EVERY", "CheckpointBehind", "connect", "scrub", "transaction"]
