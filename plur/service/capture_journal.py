"""The service's capture journal: a turn ``POST /api/v1/capture`` acknowledges survives a kill of the service.

A capture without ``wait`` is answered before the turn is stored (the host's turn never waits for the
embedding model); the turn is written here first, one small file per turn in ``<home>/capture-queue/``,
and the file is removed once :meth:`plur.memory.Memory.capture` has run. A service that dies in between
(``kill -9``, an out-of-memory kill, a crash) finds the files at its next start and captures them, in the
order they arrived, before any new turn.

* The text is screened before it is written (:func:`plur.screen.text.screen`): the journal never holds a
  key or a password, and the kinds cut out travel with the turn so they are counted once, when it is stored.
* Each file is written to a temporary name, then renamed: a kill mid-write leaves no half turn (the
  temporary file was never acknowledged and is removed at the next start). Files are 0600 in a 0700 folder.
* The write is not fsync'd: it survives the death of the process (the kernel holds the page), not a power
  cut. An fsync per turn would add milliseconds to every acknowledgement (bench capture-wait).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger("plur.service.capture")

#: The journal's folder inside the home.
FOLDER = "capture-queue"
#: Largest journal file read back at start (a turn is at most the API's body cap, 4 MiB).
MAX_ENTRY_BYTES = 8 << 20


class CaptureJournal:
    """Turns acknowledged but not yet stored, one JSON file each under ``<home>/capture-queue``.

    Args:
        home: the plur home.
    """

    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.folder = Path(home) / FOLDER
        self._seq = itertools.count()

    def _ensure(self) -> None:
        from ..store.atomic import private_dirs

        private_dirs(self.folder)

    def append(self, entry: dict[str, Any]) -> Path:
        """Write ``entry`` (JSON-serialisable) as the newest pending turn; returns its file.

        Raises:
            OSError: the file could not be written (the capture is then refused, not lost silently).
        """
        self._ensure()
        name = f"{time.time_ns():020d}-{os.getpid()}-{next(self._seq):06d}.json"
        tmp = self.folder / f".tmp-{name}"
        data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        final = self.folder / name
        os.replace(tmp, final)
        return final

    def done(self, path: Path) -> None:
        """The turn of ``path`` is stored (or refused for good): forget its file."""
        try:
            path.unlink()
        except FileNotFoundError:
            pass

    def pending(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        """The turns left by a service that stopped before storing them, oldest first.

        A temporary file (a write the kill interrupted, never acknowledged) is removed; a file that is not
        a journal entry is logged and moved aside as ``<name>.bad`` (never read as a turn, never lost).
        """
        if not self.folder.is_dir():
            return
        for p in sorted(self.folder.iterdir(), key=lambda q: q.name):
            if p.name.startswith(".tmp-"):
                self.done(p)
                continue
            if not p.name.endswith(".json") or p.is_symlink() or not p.is_file():
                continue
            try:
                if p.stat().st_size > MAX_ENTRY_BYTES:
                    raise ValueError(f"too large ({p.stat().st_size} bytes, the most is {MAX_ENTRY_BYTES})")
                entry = json.loads(p.read_bytes())
                if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
                    raise ValueError("not a captured turn")
            except (OSError, ValueError) as exc:
                log.warning("capture journal: %s is not a turn plur wrote (%s); moved aside as %s.bad",
                            p.name, exc, p.name)
                try:
                    os.replace(p, p.with_name(p.name + ".bad"))
                except OSError:
                    pass
                continue
            yield p, entry


__all__ = ["CaptureJournal", "FOLDER", "MAX_ENTRY_BYTES"]
