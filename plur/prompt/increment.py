"""Memory for hosts that keep what they are shown (Claude Code's hooks): only what is new, in small pieces.

A section host (:mod:`plur.prompt.section`) replaces its block every turn, so the block can hold the
best engrams for the newest message whatever was shown before. A hook host appends each answer
to the conversation and keeps it there; re-sending an engram there only grows the context. So
:func:`new_engrams_block` recalls as the section does, drops every engram the session has already
been shown (``exclude``), and renders at most ``max_engrams`` of the rest within a small budget:
bounded growth per prompt instead of replacement.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from .block import Block, build_block
from .injected import record_injected
from .overview import WHY_ASKED
from .selection import overview_lines, overview_why, requested

#: Defaults for a hook's injection: at most this many engrams, within this many tokens, per prompt.
HOOK_MAX_ENGRAMS = 4
HOOK_BUDGET_TOKENS = 400
#: A hit is injected only if it scores at least this share of the prompt's best hit (shown or not),
#: so a prompt whose answer was shown before does not pull in weaker notes instead. Not calibrated
#: by the benchmark: chosen on the ten-topic prompts of tests/test_doors.py (the best hit scored
#: 0.16-0.89, the next 0.08-0.14).
HOOK_RELATIVE_FLOOR = 0.5
#: What a session's shown set holds once the overview (:mod:`plur.prompt.overview`) was shown in it.
OVERVIEW_MARK = "plur:overview"


def new_engrams_block(memory: Any, text: str, *, exclude: Iterable[str] = (), scope: str | None = None,
                      agent: str | None = None, k: int | None = None, max_engrams: int = HOOK_MAX_ENGRAMS,
                      budget_tokens: int = HOOK_BUDGET_TOKENS, include_pinned: bool = True,
                      mode: str = "hybrid", now: datetime | None = None) -> Block:
    """Recall for ``text`` and render only engrams not in ``exclude``, at most ``max_engrams`` of them.

    Hits under the relevance floor (:mod:`plur.index.floor`, as in every memory block) and hits below
    :data:`HOOK_RELATIVE_FLOOR` of the best hit's score are left out, except a hit that answers one question of
    a compound prompt (:attr:`~plur.index.recall.Hit.answers`: judged against that question's own best); pinned
    engrams are not.

    The overview of what memory holds (:mod:`plur.prompt.overview`) comes after the notes when ``text``
    asks about the user as a whole (every time), or when no hit clears the floor and the session was
    not shown it yet (:data:`OVERVIEW_MARK` not in ``exclude``): the block's ``overview`` says so, and
    the caller adds the mark to the session's shown set.

    Args:
        memory: a :class:`plur.memory.Memory`.
        text: the user's prompt ('' = pinned engrams only, e.g. at session start).
        exclude: ids the session was already shown (never rendered again).
        scope: ``None`` = every scope, else that scope plus ``global``.
        agent: who asks (recorded in stats.db). k: hits recalled (default ``settings.recall_k``).
        max_engrams: most engrams rendered (>= 0). budget_tokens: the block's budget, fences included.
        include_pinned: put not-yet-shown pinned engrams of the scope first.
        mode: recall mode (``bm25`` while a service loads the model).
        now: validity-window time (default now, UTC).

    Returns:
        A :class:`~plur.prompt.block.Block` (``engram_ids`` = what the caller must add to the
        session's shown set); ``EMPTY_BLOCK`` when nothing new is relevant.
    """
    shown = set(exclude)
    s = memory.settings
    hits = memory.recall(text, s.recall_k if k is None else k, scope=scope, agent=agent, mode=mode) \
        if text.strip() else []
    if scope is not None:
        hits = [h for h in hits if h.engram.scope in (scope, "global")]
    notice, hide = requested(memory, text, scope)
    hits = [h for h in hits if h.engram.id not in hide]
    why = overview_why(text, hits)
    if why and why != WHY_ASKED and OVERVIEW_MARK in shown:
        why = ""  # the floor's overview: once per session
    best = max((h.score for h in hits), default=0.0)
    # a hit that answers one question of a compound prompt was judged against that question's best (Hit.answers)
    hits = [h for h in hits if h.engram.id not in shown and not h.below_floor
            and (h.score >= HOOK_RELATIVE_FLOOR * best or getattr(h, "answers", ""))]
    pinned = [e for e in memory.pinned(scope) if e.id not in shown and e.id not in hide] if include_pinned else []
    pinned_ids = {e.id for e in pinned}
    # pinned first, then the best hits, never more than max_engrams in all
    room = max(0, max_engrams - len(pinned))
    hits = [h for h in hits if h.engram.id in pinned_ids] + [h for h in hits if h.engram.id not in pinned_ids][:room]
    lines, ids = overview_lines(memory, scope, why, hits, pinned, hide)
    return build_block(hits, budget_tokens, now or datetime.now(timezone.utc), pinned=pinned[:max_engrams],
                       tail=lines, tail_ids=[i for i in ids if i not in shown], notice=notice)


def inject_block(memory: Any, text: str, *, agent: str, **options: Any) -> Block:
    """:func:`new_engrams_block` for a hook that injects it now, recorded in stats.db as an injection for
    ``agent`` when it is not empty (notes or the overview) (what the statistics page counts as "injected into a prompt").

    Args:
        memory: a :class:`plur.memory.Memory`. text: the user's prompt. agent: the host (e.g. ``claude-code``).
        **options: :func:`new_engrams_block`'s keyword arguments.
    """
    block = new_engrams_block(memory, text, agent=agent, **options)
    if block.text:
        record_injected(memory, agent, block, message=text)
    return block
