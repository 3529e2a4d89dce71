"""The store's inter-process write lock, ``<home>/.lock``, and its owner record.

The lock is a :mod:`filelock` lock (``flock`` on POSIX), re-entrant within one
instance. The outermost acquisition records ``pid`` and ``since`` in
``<home>/.lock.owner`` so a writer that times out can say who held the lock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


from .engram import format_time
from ..errors import StoreError, ValidationError
from .safe_yaml import load_yaml
from .atomic import private_dirs


def _overwrite(path: Path, data: bytes, width: int = 80) -> None:
    """Write a small file in place, padded with spaces to ``width`` bytes.

    No truncation: on ext4 (auto_da_alloc) truncating and rewriting a file forces a
    data flush, which cost ~4 ms per write here. Readers strip the padding.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, data.ljust(width), 0)
        if os.fstat(fd).st_size > max(width, len(data)):
            os.ftruncate(fd, max(width, len(data)))
    finally:
        os.close(fd)


class StoreLock:
    """``<home>/.lock`` with an owner record; see the module docstring.

    Not guarded against threads: callers hold their own in-process mutex around it.

    Args:
        home: the plur home folder (created on first :meth:`hold`).
        timeout_s: how long :meth:`hold` waits for another process, in seconds.

    Attributes:
        path: ``<home>/.lock``.
        owner_path: ``<home>/.lock.owner``.
    """

    def __init__(self, home: Path, timeout_s: float) -> None:
        self.home = home
        self.path = home / ".lock"
        self.owner_path = home / ".lock.owner"
        self.timeout_s = float(timeout_s)
        self._made: Any = None  # the filelock.FileLock, made on first use: readers never lock, and
        # importing filelock (it pulls in asyncio) cost ~40 ms of a cold `plur recall --mode bm25`

    @property
    def _filelock_mod(self) -> Any:
        import filelock

        return filelock

    @property
    def _lock(self) -> Any:
        if self._made is None:
            # filelock polls a non-blocking flock; its 50 ms default makes 8 contending writers
            # spend most of their time asleep; 2 ms keeps the hand-over short at small CPU cost.
            self._made = self._filelock_mod.FileLock(str(self.path), timeout=self.timeout_s, poll_interval=0.002,
                                                     thread_local=False, preserve_lock_file=True, mode=0o600)
        return self._made

    @property
    def is_locked(self) -> bool:
        """True while this instance holds the lock."""
        return self._made is not None and bool(self._made.is_locked)

    def free_now(self) -> bool:
        """True when no process holds the lock at this instant: one non-blocking shared ``flock`` on a read-only
        descriptor, released at once; it never waits (a writer polling meanwhile tries again 2 ms later).

        A writer names a file in the writer journal and writes it under one hold, so every write named before
        this returned True has landed (the quick refresh settles what it saw, issue 49). False where it cannot
        tell: no lock file, no ``flock`` (not POSIX, a file system without it), any error.
        """
        try:
            import fcntl

            fd = os.open(self.path, os.O_RDONLY)
        except (ImportError, OSError):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return False
        finally:
            os.close(fd)  # closing the descriptor releases the lock
        return True

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the ``with`` block (re-entrant).

        Raises:
            StoreError: another process held it for over ``timeout_s`` seconds (the
                message names the last holder), or ``home`` is not writable.
        """
        outer = not self._lock.is_locked
        try:
            private_dirs(self.home)
            self._lock.acquire(timeout=self.timeout_s)
        except self._filelock_mod.Timeout:
            owner = ""
            with suppress(OSError):
                owner = " (last holder: " + self.owner_path.read_text(encoding="utf-8").replace("\n", " ").strip() + ")"
            raise StoreError(
                f"the store at {self.home} is locked by another process{owner}; waited "
                f"{self.timeout_s:g} s for {self.path}. Retry when that process finishes"
            ) from None
        except OSError as exc:
            raise StoreError(f"cannot create or lock {self.path} ({exc}); check that {self.home} "
                             "is writable") from None
        try:
            if outer:
                with suppress(OSError):
                    _overwrite(self.owner_path, f"pid: {os.getpid()}\nsince: "
                               f"'{format_time(datetime.now(timezone.utc))}'\n".encode("ascii"))
            yield
        finally:
            self._lock.release()

    def state(self) -> dict[str, Any]:
        """Who holds the lock, without waiting for it.

        Returns:
            ``{path, exists, held_here, locked, owner}``: ``locked`` is True when any
            process (this one included) holds it now; ``owner`` is the last holder's
            ``{pid, since}`` as recorded in ``<home>/.lock.owner`` (may be stale when
            ``locked`` is False).
        """
        state: dict[str, Any] = {"path": str(self.path), "exists": self.path.exists(),
                                 "held_here": self.is_locked, "locked": False, "owner": None}
        with suppress(OSError, ValidationError):
            owner = load_yaml(self.owner_path.read_bytes(), what=str(self.owner_path), max_bytes=1 << 16)
            if isinstance(owner, dict):
                state["owner"] = owner
        if state["held_here"]:
            state["locked"] = True
        elif state["exists"]:
            probe = self._filelock_mod.FileLock(str(self.path), thread_local=False, preserve_lock_file=True, mode=0o600)
            try:
                probe.acquire(blocking=False)
            except self._filelock_mod.Timeout:
                state["locked"] = True
            except OSError as exc:  # read-only home: the lock cannot even be probed
                state["locked"] = None
                state["error"] = str(exc)
            else:
                probe.release()
        return state
