"""The read methods of :class:`~plur.memory.Memory` (a mixin it inherits): one engram, its history, lists, the
pinned engrams, and recall. Each is documented here and delegates in one line to the module that does it
(:mod:`.reads`, :mod:`.recall`, :mod:`.legs`, :mod:`.filters`, :mod:`.freshness`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..store.engram import Engram
from . import filters as _filters, freshness as _freshness, labels as _labels, legs as _two_legs, reads as _reads
from . import recall as _recall

if TYPE_CHECKING:  # pragma: no cover - plur.index.recall loads on the first recall
    from ..index.recall import Fills, Hit


class ReadMethods:
    """Reads through a :class:`~plur.memory.Memory`; none writes an engram file (usage goes to stats.db)."""

    def get(self, engram_id: str) -> Engram:
        """The engram with this id.

        Args:
            engram_id: ``ENG-YYYY-MM-DD-<6 hex>``.

        Raises:
            NotFoundError: no such engram.
            InvalidIdError: ``engram_id`` is not an engram id.
        """
        return _reads.get(self, engram_id)

    def pinned(self, scope: str | None = None) -> list[Engram]:
        """Current pinned engrams visible in ``scope``, newest first.

        Current = :meth:`Engram.is_current` (active, inside its validity window now).
        Cached until the store changes, so the recall worker can ask every turn at O(1) cost.

        Args:
            scope: that scope plus ``global``; ``None`` = all.
        """
        return _reads.pinned(self, scope)

    def recall(self, query: str, k: int = 10, *, scope: str | None = None, types: Sequence[str] | None = None,
               tags: Sequence[str] | None = None, mode: str = "hybrid", agent: str | None = None,
               record: bool = True, min_score: float | None = None, include_expired: bool = False,
               now: Any = None, explain: bool = False, scopes: frozenset[str] | None = None,
               user_id: str | None = None, metadata: Mapping[str, Any] | None = None) -> list[Hit]:
        """Engrams relevant to ``query``, best first.

        Args:
            query: free text (any language); empty or stop-word-only queries give ``[]``; only the first
                :data:`~plur.memory.recall.MAX_QUERY_CHARS` characters are read.
            k: maximum number of hits (top-k); 0 gives ``[]``.
            scope: ``None`` = every scope; ``'project:a'`` = that scope plus ``global`` only
                (an authorisation boundary, never a ranking hint).
            types: keep only these engram types.
            tags: keep engrams with any of these tags.
            mode: ``hybrid`` (BM25 + dense fused by ``settings.fusion``), ``bm25`` or ``dense``.
                Without an embedding model, ``hybrid`` and ``dense`` use BM25 alone.
            agent: who asked (recorded in stats.db).
            record: write the recall to stats.db (and ``settings.record_stats``).
            min_score: drop hits scoring below this, in [0, 1] (see :class:`~plur.index.recall.Hit`
                for what a score means; with the default ``weighted`` fusion it is absolute, so one
                threshold means the same for every query).
            include_expired: also return engrams that are not current (retired, e.g. superseded, or
                outside their ``valid_from``/``valid_until`` window). Default: skipped.
            now: when the question is asked (datetime or ISO-8601 text; default the current time):
                dates the query names ("last May", "two weeks ago") are resolved against it and
                engrams dated in them are boosted (setting ``date_boost``; README "Dates in recall").
            explain: fill each hit's ``context_matches`` (query terms matched via neighbouring turns).
            scopes: recall only among engrams in these scopes (a team member's readable scopes, set by the
                service's door, :mod:`plur.service.access`), on top of ``scope``; ``None`` = no such limit.
            user_id: one user's notes: the scope ``agent:<user_id>`` (plus ``global``), instead of ``scope``
                (:mod:`plur.memory.labels`).
            metadata: ``{name: value}`` every hit must carry, each as the tag ``name:value`` (what
                :meth:`learn`'s ``metadata`` adds).

        Returns:
            At most ``k`` :class:`~plur.index.recall.Hit` objects, ``rank`` 1..n, scores in [0, 1]
            non-increasing; each hit's ``below_floor`` says why the relevance floor keeps it out of the
            memory block ('' when it clears it; :meth:`relevance_floor`, setting ``relevance_floor``).

        Raises:
            ValidationError: bad query type, k, scope, mode, min_score, ``now``, ``metadata``, or both
                ``scope`` and ``user_id``.
        """
        scope = _labels.scope_of(scope, user_id, None)
        return _recall.recall(self, query, k, scope=scope, types=types, tags=tags, mode=mode, agent=agent,
                              record=record, min_score=min_score, include_expired=include_expired, now=now,
                              explain=explain, scopes=scopes, required=_labels.tags_of(metadata) or None)

    def recall_legs(self, query: str, k: int = 10, *, scope: str | None = None, agent: str | None = None,
                    record: bool = True) -> dict[str, list[Hit]]:
        """The hybrid ranking beside the BM25 and dense rankings (each leg run once), for the playground.

        Args:
            query: as :meth:`recall`.
            k: as :meth:`recall`.
            scope: as :meth:`recall`.
            agent: who asked (recorded in stats.db).
            record: write the hybrid recall to stats.db (and ``settings.record_stats``).

        Returns:
            ``{"hybrid": [...], "bm25": [...], "dense": [...]}``; ``dense`` is empty without a model.

        Raises:
            ValidationError: bad query type, k or scope.
        """
        return _recall.recall_legs(self, query, k, scope=scope, agent=agent, record=record)

    def relevance_floor(self, mode: str = "hybrid") -> Any:
        """The :class:`~plur.index.floor.Floor` recalls in ``mode`` apply (setting ``relevance_floor``, per model).

        Args:
            mode: ``hybrid``, ``bm25`` or ``dense``, as :meth:`recall`.
        """
        return _recall.relevance_floor(self, mode)

    # -- recall's internals, called through the instance ---------------------------------------
    def _legs(self, query: str, k: int, scope: str | None, types: Sequence[str] | None,
              tags: Sequence[str] | None, need_bm25: bool, need_dense: bool, include_expired: bool = False,
              scopes: frozenset[str] | None = None, required: Sequence[str] | None = None
              ) -> tuple[list[tuple[str, float]], list[tuple[str, float]], float, Fills]:
        """The two legs' rankings, the BM25 full-match score and the fills (:func:`plur.memory.legs.legs`)."""
        return _two_legs.legs(self, query, k, scope, types, tags, need_bm25, need_dense, include_expired, scopes,
                              required)

    def _get_or_none(self, engram_id: str) -> Engram | None:
        """The stored engram, or ``None`` when it vanished (:func:`plur.memory.freshness.get_or_none`)."""
        return _freshness.get_or_none(self, engram_id)

    def _not_current(self) -> set[str]:
        """Ids of engrams not current now (:func:`plur.memory.filters.not_current`)."""
        return _filters.not_current(self)

    def _blocked(self, include_expired: bool = False) -> set[str]:
        """Ids recall never returns (:func:`plur.memory.filters.blocked`)."""
        return _filters.blocked(self, include_expired)

    def _allowed(self, scope: str | None, types: Sequence[str] | None, tags: Sequence[str] | None,
                 scopes: frozenset[str] | None = None, required: Sequence[str] | None = None) -> set[str] | None:
        """Ids a scope/type/tag filter admits, ``None`` for no filter (:func:`plur.memory.filters.allowed`)."""
        return _filters.allowed(self, scope, types, tags, scopes, required)

    def history(self, engram_id: str) -> list[Engram]:
        """The versions of a note, oldest first: the chain :meth:`supersede` links (each new engram names the
        one it replaced in ``supersedes``; the old one stays, retired), from any id in it.

        :meth:`update` edits a note in place (same id, ``updated`` set) and keeps no earlier text: supersede
        when the history should stay. A forgotten version is gone from the chain.

        Args:
            engram_id: any version's id.

        Returns:
            Every stored version, the first statement first and the current one last (``[engram]`` for a
            note never superseded).

        Raises:
            NotFoundError: no such engram.
            InvalidIdError: ``engram_id`` is not an engram id.
        """
        return _reads.history(self, engram_id)

    def count(self) -> int:
        """Number of engrams in the store (every status), after picking up other writers' changes.

        Unlike ``len(list())`` it sorts nothing and copies nothing (a service's start counted a 100k store that
        way: 0.7 s and a list of every engram).
        """
        self._scan()
        return self.store.count()

    # last: a method named ``list`` shadows the builtin in the annotations of the methods after it (mypy)
    def list(self, *, scope: str | None = None, type: str | None = None, tag: str | None = None,
             status: str | None = None, text: str | None = None, user_id: str | None = None,
             metadata: Mapping[str, Any] | None = None) -> list[Engram]:
        """Engrams matching every given filter, newest first.

        Args:
            scope: exactly this scope.
            type: exactly this engram type.
            tag: engrams carrying this tag.
            status: ``active`` or ``retired``.
            text: a case-insensitive substring of the statement.
            user_id: exactly the scope ``agent:<user_id>`` (one user's notes), instead of ``scope``.
            metadata: ``{name: value}``: engrams carrying every tag ``name:value``.

        Raises:
            ValidationError: ``scope`` is not a valid scope (``projct:atlas`` would match nothing, silently),
                bad ``metadata``, or both ``scope`` and ``user_id``.
        """
        scope = _labels.scope_of(scope, user_id, None)
        return _reads.list_(self, scope=scope, type=type, tag=tag, status=status, text=text,
                            required=_labels.tags_of(metadata))
