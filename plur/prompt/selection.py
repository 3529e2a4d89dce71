"""The one selection every host path makes: recall for a message, then render the memory block.

The recall worker, the service's ``/api/v1/block``, ``plur section``, the MCP server and the web
playground all go through :func:`select_block` (the first three via :func:`recall_block`), so a
block is the same whichever way a host asks for it. Hits the relevance floor marks
(:attr:`plur.index.recall.Hit.below_floor`, :mod:`plur.index.floor`) never enter the block: when
nothing clears the floor, or the message asks about the user as a whole, the block carries the
overview of what memory holds (:mod:`plur.prompt.overview`) instead of nothing. Pinned engrams are always-on by the user's choice and are shown whatever
the query (within half the budget), as before the floor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..store.engram import Engram
from .block import Block, build_block


@dataclass(frozen=True)
class Selection:
    """A memory block and the recalled hits the relevance floor kept out of it.

    Attributes:
        block: the rendered :class:`~plur.prompt.block.Block`.
        kept_out: hits below the floor, best first (each hit's ``below_floor`` says why).
    """

    block: Block
    kept_out: tuple[Any, ...] = ()


def select_block(hits: Sequence[Any], budget_tokens: int, now: datetime | None = None, *,
                 pinned: Iterable[Engram] = (), overview: tuple[Sequence[str], Sequence[str]] = ((), ()),
                 notice: Sequence[str] = ()) -> Selection:
    """The block for recalled ``hits``: those above the relevance floor, plus ``pinned``, within the budget.

    Args:
        hits: recalled hits (:class:`plur.index.recall.Hit`, floor already marked by ``Memory.recall``).
        budget_tokens: block budget (tokens, fences included).
        now: validity-window time (default now, UTC).
        pinned: always-on engrams (shown whatever the floor says).
        overview: ``(lines, engram ids)`` placed after the notes (:func:`overview_lines`), or nothing.
        notice: lines before the notes (:func:`requested`: what memory forgot at the user's request).

    Returns:
        A :class:`Selection`.
    """
    kept = [h for h in hits if not getattr(h, "below_floor", "")]
    out = tuple(h for h in hits if getattr(h, "below_floor", "") and not h.engram.pinned)
    # a pinned hit below the floor is still pinned: build_block shows it with the other pinned engrams
    kept += [h for h in hits if getattr(h, "below_floor", "") and h.engram.pinned]
    return Selection(build_block(kept, budget_tokens, now or datetime.now(timezone.utc), pinned=pinned,
                                 tail=overview[0], tail_ids=overview[1], notice=notice), out)


def overview_why(text: str, hits: Sequence[Any]) -> str:
    """Why a block for ``text`` carries the overview ('' = it does not): the message asks about the user
    as a whole (:func:`plur.prompt.overview.about_the_user`), or no recalled hit cleared the floor."""
    from . import overview as ov

    if ov.about_the_user(text):
        return ov.WHY_ASKED
    if not any(not getattr(h, "below_floor", "") for h in hits):
        return ov.WHY_FLOOR
    return ""


def overview_lines(memory: Any, scope: str | None, why: str, hits: Sequence[Any] = (),
                   pinned: Iterable[Engram] = (), hide: Iterable[str] = ()) -> tuple[list[str], tuple[str, ...]]:
    """The overview's ``(lines, engram ids)`` for a block (``([], ())`` when ``why`` is '').

    Notes already among ``hits`` above the floor or ``pinned`` are not listed again, nor those in ``hide``
    (the notes the message asks to forget: :func:`requested`). The ids are always empty: the overview counts no
    note as shown (:mod:`plur.prompt.overview`), so a note it lists is still injected whole when a prompt asks for it.
    """
    if not why:
        return [], ()
    from . import overview as ov

    shown = {h.engram.id for h in hits if not getattr(h, "below_floor", "")} | {e.id for e in pinned} | set(hide)
    return ov.render(ov.overview_for(memory, scope), why, skip=shown)[0], ()


def requested(memory: Any, text: str, scope: str | None) -> tuple[list[str], set[str]]:
    """What a block for ``text`` owes the user's requests to forget (setting ``forget_requests``):
    ``(notice lines, ids to leave out)``. The lines are the notices waiting for this scope (a request captured
    since the last block: :func:`plur.memory.turns.forget_turn.take_notices`); the ids are the notes ``text``
    itself asks to forget, left out of its own block (its capture forgets them after this recall)."""
    if not getattr(memory.settings, "forget_requests", False):
        return [], set()
    from ..memory.turns.forget_turn import take_notices

    lines = take_notices(memory, scope)
    hide: set[str] = set()
    if text.strip():
        from ..memory.turns.forget_request import find

        asked = find(text)
        if asked is not None and not asked.back:
            from ..memory.turns.forget_turn import targets

            hide = {e.id for e in targets(memory, asked, session=None, turn=None, scope=scope)}
    return lines, hide


def recall_selection(memory: Any, text: str, *, scope: str | None = None, agent: str | None = None,
                     k: int | None = None, budget_tokens: int | None = None, pinned: Any = None,
                     now: datetime | None = None, mode: str = "hybrid", overview: bool = True) -> Selection:
    """Recall for ``text`` and select the memory block now; see :func:`recall_block` for the arguments."""
    s = memory.settings
    hits = (memory.recall(text, s.recall_k if k is None else k, scope=scope, agent=agent, mode=mode)
            if text.strip() else [])
    if scope is not None:
        hits = [h for h in hits if h.engram.scope in (scope, "global")]
    notice, hide = requested(memory, text, scope)
    pinned = [e for e in (memory.pinned(scope) if pinned is None else pinned) if e.id not in hide]
    hits = [h for h in hits if h.engram.id not in hide]
    lines = overview_lines(memory, scope, overview_why(text, hits) if overview else "", hits, pinned, hide)
    return select_block(hits, s.budget_tokens if budget_tokens is None else budget_tokens,
                        now or datetime.now(timezone.utc), pinned=pinned, overview=lines, notice=notice)


def recall_block(memory: Any, text: str, *, scope: str | None = None, agent: str | None = None,
                 k: int | None = None, budget_tokens: int | None = None, pinned: Any = None,
                 now: datetime | None = None, mode: str = "hybrid", overview: bool = True) -> Block:
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
        mode: recall mode (``hybrid``; ``bm25`` while a service loads the model, :mod:`plur.service.autostart`).
        overview: when no hit clears the relevance floor, or ``text`` asks about the user as a whole, put
            the overview of what memory holds (:mod:`plur.prompt.overview`, at most 150 tokens) after the
            notes, so a host that injects the block never injects nothing.

    Returns:
        A :class:`~plur.prompt.block.Block` (``EMPTY_BLOCK`` only when the budget cannot hold even the
        overview, or ``overview`` is off and nothing clears the floor and nothing is pinned).
    """
    return recall_selection(memory, text, scope=scope, agent=agent, k=k, budget_tokens=budget_tokens,
                            pinned=pinned, now=now, mode=mode, overview=overview).block
