"""The recall worker's per-agent bookkeeping (:mod:`plur.prompt.worker`): requests, published entries, agent state."""

from __future__ import annotations

from dataclasses import dataclass

from .block import Block
from .capture import Capture


@dataclass(frozen=True)
class _Request:
    gen: int
    text: str
    scope: str | None
    awaited: bool = False   # a host waits for it (wait_for): recall by keyword at once while the model loads


class _Entry:
    """One published block. Immutable except the two one-way flags (False -> True)."""

    __slots__ = ("block", "scope", "gen", "message", "read", "recorded")

    def __init__(self, block: Block, scope: str | None, gen: int, message: str | None = None) -> None:
        self.block = block
        self.scope = scope
        self.gen = gen
        self.message = message  # the submitted text the block was recalled for (the injection log shows it)
        self.read = False       # set by the first reader (any thread)
        self.recorded = False   # set by the worker when the injection row is written


class _AgentState:
    __slots__ = ("gen", "scope", "pending", "published_gen", "finished_gen", "captures", "turns")

    def __init__(self) -> None:
        self.captures: list[Capture] = []        # submitted, to learn after their recall
        self.turns: dict[str, int] = {}          # session -> next capture turn number
        self.gen = 0                             # newest generation submitted
        self.scope: str | None = None            # scope bound by the newest submission
        self.pending: _Request | None = None     # newest request not started yet
        self.published_gen = 0                   # generation of the newest result accepted
        self.finished_gen = 0                    # newest generation finished (any outcome)
