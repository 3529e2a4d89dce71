"""``<home>/service.starting``: how far a starting service has got, so ``plur service start`` waits while it
progresses (a million-engram store takes minutes to open) and gives up only once it stalls (stdlib only).

The service writes the file (mode 0600, JSON) as soon as it holds the home's lock and rewrites it every
:data:`BEAT_S` seconds from a thread of its own until it serves; then it removes it::

    {"pid": 4242, "phase": "opening the store", "cpu_s": 12.5, "beat": 25}

``cpu_s`` is the process's CPU seconds (every thread, :func:`time.process_time`): a start that reads,
parses and builds keeps it rising; one blocked on something that never comes does not. ``phase`` names the
step (:class:`StartBeat.phase`). The reader (:class:`Progress`) counts a new phase, or ``cpu_s`` up by at
least :data:`MIN_CPU_S` since the last progress, as progress.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from .files import STARTING_FILE, write_private_json
#: Seconds between two writes of the file by a starting service.
BEAT_S = 0.5
#: CPU seconds a starting service must have used since its last progress for the reader to count more
#: (the beat thread's own writes use ~0.1 ms each: far less).
MIN_CPU_S = 0.05


class StartBeat:
    """The starting service's side: writes ``service.starting`` now and every :data:`BEAT_S` until :meth:`close`.

    Args:
        home: the home folder (the service holds its lock).
        pid: the service's pid (written in the file).
    """

    def __init__(self, home: Path, pid: int) -> None:
        self._path = home / STARTING_FILE
        self._pid = pid
        self._phase = "starting"
        self._beat = 0
        self._stop = threading.Event()
        self._write()
        self._thread = threading.Thread(target=self._run, name="plur-start-beat", daemon=True)
        self._thread.start()

    def phase(self, name: str) -> None:
        """Name the step the start is in now (``"opening the store"``); written at once."""
        self._phase = name
        self._write()

    def _write(self) -> None:
        self._beat += 1
        try:
            write_private_json(self._path, {"pid": self._pid, "phase": self._phase,
                                            "cpu_s": round(time.process_time(), 3), "beat": self._beat})
        except OSError:  # a home gone read-only or deleted: the start itself will say so
            pass

    def _run(self) -> None:
        while not self._stop.wait(BEAT_S):
            self._write()

    def close(self) -> None:
        """Stop writing and remove the file (the service serves now, or is stopping)."""
        self._stop.set()
        self._thread.join(timeout=5.0)
        try:
            os.unlink(self._path)
        except FileNotFoundError:
            pass


def read_starting(home: Path) -> dict[str, object] | None:
    """The parsed ``service.starting``, or ``None`` when missing or unreadable."""
    try:
        data = json.loads((home / STARTING_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class Progress:
    """The waiting side: tells a start that progresses from one that stalled.

    Args:
        stall_s: seconds without progress (no new phase, CPU up by less than :data:`MIN_CPU_S`) after which
            :meth:`stalled` says so. The first reading counts as progress.
        first_s: seconds allowed before the first reading (the interpreter starting and importing, on a busy
            machine); at least ``stall_s``.
    """

    def __init__(self, stall_s: float, first_s: float = 120.0) -> None:
        self.stall_s = float(stall_s)
        self.first_s = max(float(first_s), self.stall_s)
        self._phase: object = None
        self._cpu_s = float("-inf")
        self._at = time.monotonic()
        self.last: dict[str, object] | None = None

    def stalled(self, state: dict[str, object] | None) -> bool:
        """Record ``state`` (a :func:`read_starting` result, or None) and say whether the start has stalled."""
        now = time.monotonic()
        if state is not None:
            self.last = state
            cpu = state.get("cpu_s")
            cpu_s = float(cpu) if isinstance(cpu, (int, float)) else self._cpu_s
            if state.get("phase") != self._phase or cpu_s >= self._cpu_s + MIN_CPU_S:
                self._phase, self._cpu_s, self._at = state.get("phase"), cpu_s, now
        return now - self._at > (self.stall_s if self.last is not None else self.first_s)
