"""Capture: learning what the user said, for :class:`plur.prompt.worker.RecallWorker` (``capture=True``).

Opt-in. A captured message becomes an engram of type ``user`` with the conversation provenance
``{"kind": "conversation", "format": "messages", "session", "turn", "role": "user", "agent",
"capture": true}`` and ``created`` = when it was submitted. The store merges an exact duplicate in
the same scope into the engram already there, so a repeated message is remembered once.

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
        ``(learned, failed)`` counts (a merged duplicate counts as learned).
    """
    ok = failed = 0
    for c in captures:
        source = {"kind": "conversation", "format": "messages", "session": c.session, "turn": c.turn,
                  "role": "user", "agent": agent_id, "capture": True}
        try:
            memory.learn(c.text, scope=c.scope, type="user", source=source, created=c.when)
            ok += 1
        except Exception as exc:  # noqa: BLE001 - capture must never break the worker
            failed += 1
            log.warning("could not capture a message of agent %r: %s", agent_id, exc)
    return ok, failed
