"""Recording that a memory block went into a prompt: the one place every door counts an injection.

The statistics page's "injected into a prompt" counts these rows (:meth:`plur.stats.db.Stats.record_injection`):
the recall worker's cached block when a section reads it, the Claude Code hook's block
(:func:`plur.prompt.increment.inject_block`) and a block a host fetched to inject (``POST /api/v1/block``
with ``inject``).
"""

from __future__ import annotations

from typing import Any

from .block import Block


def record_injected(memory: Any, agent: str, block: Block, message: str | None = None) -> None:
    """Log ``block`` (its engrams in block order, hash, tokens) as injected for ``agent`` in stats.db,
    naming the recall it was built from, unless the setting ``record_stats`` is off.

    Args:
        memory: a :class:`plur.memory.Memory`. agent: the agent (or host) the prompt is for.
        message: what the block was recalled for (the user's message, as passed to the recall): the row names
            that recall, whose query (screened, as the recall log keeps it) is the message the web page's
            injection log shows and finds a block by (:meth:`plur.stats.db.StatsDB.record_injection`).
    """
    if getattr(memory.settings, "record_stats", True):
        memory.stats.record_injection(agent=agent, engram_ids=list(block.engram_ids), block_hash=block.hash,
                                      tokens=block.tokens, message=message)
