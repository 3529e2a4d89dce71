"""The one selection every host path makes: recall for a message, then render the memory block.

The recall worker, the service's ``/api/v1/block`` and ``plur section`` all call :func:`recall_block`,
so a block is the same whichever way a host asks for it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from .block import Block, build_block


def recall_block(memory: Any, text: str, *, scope: str | None = None, agent: str | None = None,
                 k: int | None = None, budget_tokens: int | None = None, pinned: Any = None,
                 now: datetime | None = None) -> Block:
    """Recall for ``text`` and render the memory block now: the one selection every host path uses.

    The worker, the service's ``/api/v1/block`` and ``plur section`` all call this, so a block
    is the same whichever way a host asks for it.

    Args:
        memory: a :class:`plur.memory.Memory`.
        text: what to recall for (usually the newest user message).
        scope: ``None`` = every scope, else that scope plus ``global`` (enforced twice: by the recall
            and again here, defence in depth).
        agent: who asks (recorded with the recall in stats.db).
        k: top-k hits (default ``settings.recall_k``). budget_tokens: block budget (default
            ``settings.budget_tokens``). pinned: pinned engrams to put first (default
            ``memory.pinned(scope)``). now: validity-window time (default now, UTC).

    Returns:
        A :class:`~plur.prompt.block.Block` (``EMPTY_BLOCK`` when nothing is recalled or fits).
    """
    s = memory.settings
    hits = memory.recall(text, s.recall_k if k is None else k, scope=scope, agent=agent)
    if scope is not None:
        hits = [h for h in hits if h.engram.scope in (scope, "global")]
    return build_block(hits, s.budget_tokens if budget_tokens is None else budget_tokens,
                       now or datetime.now(timezone.utc),
                       pinned=memory.pinned(scope) if pinned is None else pinned)
