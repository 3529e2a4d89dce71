"""Capture: learning what the user said, for :class:`plur.prompt.worker.RecallWorker`.

On by default (the setting ``capture``: ``user``); each message goes through
:meth:`plur.memory.Memory.capture`, as every other door's: the secret screen, the trivial-turn
filter, then the ingest path. A captured message becomes an engram of type ``user`` with the
conversation provenance ``{"kind": "conversation", "format": "capture", "session", "turn", "role":
"user", "agent", "capture": true}`` and ``created`` = when it was submitted.

Privacy: captured text is written as plain YAML under ``<home>/engrams/`` and recalled for every
agent that may read its scope. The scope is the submission's, else ``agent:<agent id>`` (only that
agent and unscoped readers see it), else ``global`` when the id is not a valid scope name.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
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
