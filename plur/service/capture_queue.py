"""The service's capture thread: ``POST /api/v1/capture`` answers at once and the turn is stored here,
in arrival order, under the service's lock, so a host's turn never waits for capture. Each queued turn is
in the capture journal (:mod:`plur.service.capture_journal`) until it has run."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("plur.service.capture")


class CaptureQueue:
    """One daemon thread that runs queued captures in order, each under ``lock`` (the API's lock).

    Args:
        lock: the lock every API call holds (``None``: a private one).
    """

    def __init__(self, lock: Any = None) -> None:
        self._lock = lock or threading.Lock()
        self._q: queue.SimpleQueue[tuple[Callable[[], Any], Callable[[], Any] | None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def put(self, job: Callable[[], Any], done: Callable[[], Any] | None = None) -> None:
        """Queue ``job``; ``done`` runs after it, whether it stored or failed. The thread starts on the first."""
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="plur-capture", daemon=True)
                self._thread.start()
        self._q.put((job, done))

    def _run(self) -> None:
        while True:
            job, done = self._q.get()
            try:
                with self._lock:
                    job()
            except Exception as exc:  # noqa: BLE001 - one bad turn must not stop capture
                log.warning("a captured turn was not stored: %s", exc)
            if done is not None:
                try:
                    done()
                except Exception as exc:  # noqa: BLE001
                    log.warning("capture journal: %s", exc)


def check(mem: Any, text: str, session: str, turn: int, role: str, scope: str, when: str | None) -> None:
    """Raise :class:`~plur.errors.ValidationError` now for input :meth:`Memory.capture` would refuse later."""
    from ..errors import ValidationError
    from ..store.engram import _check_scope, parse_time

    if role not in ("user", "assistant"):
        raise ValidationError(f"role {role!r}: use user or assistant")
    if not session.strip() or len(session) > 200:
        raise ValidationError(f"session {session!r:.60}: give the conversation's id (1-200 characters)")
    if isinstance(turn, bool) or turn < 0:
        raise ValidationError(f"turn {turn!r}: give the turn's 0-based position in the conversation")
    _check_scope(scope)
    if when is not None:
        parse_time(when, "when")
