"""Capture: learning what the user said, for :class:`plur.prompt.worker.RecallWorker`.

On by default (the setting ``capture``: ``user``); each message goes through
:meth:`plur.memory.Memory.capture`, as every other door's: the secret screen, the trivial-turn
filter, then the ingest path. A captured message becomes an engram of type ``user`` with the
conversation provenance ``{"kind": "conversation", "format": "capture", "session", "turn", "role":
"user", "agent", "capture": true}`` and ``created`` = when it was submitted.

Privacy: captured text is written as plain YAML under ``<home>/engrams/`` and recalled for every
agent that may read its scope. The scope is the submission's, else ``agent:<agent id>`` (only that
agent and unscoped readers see it), else ``global`` when the id is not a valid scope name.

Off the turn path: the worker learns on a thread of its own (:class:`CaptureThread`), never on a recall
thread, so a message that arrives while the previous one is stored and embedded is recalled at once.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..store.engram import SCOPE_RE

log = logging.getLogger("plur.prompt.worker")


@dataclass(frozen=True)
class Capture:
    """One submitted message waiting to be learned after its recall.

    Attributes:
        gen: the submission's generation (learned once the recall of this or a later one finished).
        text: the message. scope: where it is learned. session, turn: its provenance.
        when: submission time (aware UTC), the engram's ``created``.
    """

    gen: int
    text: str
    scope: str
    session: str
    turn: int
    when: datetime


def own_scope(agent_id: str) -> str:
    """``agent:<agent id>`` when that is a valid scope, else ``global``."""
    scope = f"agent:{agent_id}"
    return scope if SCOPE_RE.match(scope) else "global"


def learn(memory: Any, agent_id: str, captures: Iterable[Capture]) -> tuple[int, int]:
    """Learn ``captures`` into ``memory``; never raises (errors are logged).

    Returns:
        ``(learned, failed)`` counts (a turn left out as trivial or already stored counts as learned).
    """
    ok = failed = 0
    mode = "user" if getattr(memory.settings, "capture", "off") == "off" else None  # the host asked: capture
    for c in captures:
        try:
            memory.capture(c.text, session=c.session, turn=c.turn, role="user", scope=c.scope, when=c.when,
                           agent=agent_id, mode=mode)
            ok += 1
        except Exception as exc:  # noqa: BLE001 - capture must never break the worker
            failed += 1
            log.warning("could not capture a message of agent %r: %s", agent_id, exc)
    return ok, failed


_STOP = object()


class CaptureThread:
    """The worker's capture thread: runs ``learn(agent_id, captures, embed)`` for each :meth:`put`, in order.

    A recall thread hands over the messages its recall answered and goes on with the next recall; the store
    and embedding of a captured message never delay a block (bench: ``python -m bench capture-wait``).
    """

    def __init__(self, learn: Callable[[str, list[Capture], bool], None]) -> None:
        self._learn = learn
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="plur-capture", daemon=True)
        self._thread.start()

    def put(self, agent_id: str, captures: list[Capture], embed: bool = True) -> None:
        """Queue ``captures`` of ``agent_id`` (``embed``: embed them right after storing, between turns)."""
        if captures:
            self._inbox.put((agent_id, list(captures), embed))

    def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Block until everything put before this call is learned; ``False`` if ``timeout_s`` passed first."""
        done = threading.Event()
        self._inbox.put(done)
        return done.wait(timeout_s)

    def close(self, timeout_s: float | None = None) -> bool:
        """Learn what is queued, then stop; ``False`` if the thread is still busy after ``timeout_s``."""
        self._inbox.put(_STOP)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            from .exit import shutting_down

            log.log(logging.DEBUG if shutting_down() else logging.WARNING,
                    "capture thread still busy after %s s; left running as a daemon", timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            item = self._inbox.get()
            if item is _STOP:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                self._learn(*item)
            except Exception:  # noqa: BLE001 - the capture thread must survive anything
                log.exception("plur recall worker: unexpected error while capturing")
