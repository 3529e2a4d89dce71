"""The write methods of :class:`~plur.memory.Memory` (a mixin it inherits): learn, update, supersede, feedback,
import, forget. Each is documented here and delegates in one line to the module that does it
(:mod:`.writes`, :mod:`.imports`, :mod:`.forget`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..store.engram import Engram
from . import forget as _forget, imports as _imports, labels as _labels, writes as _writes
from .imports import ImportResult


class WriteMethods:
    """Writes through a :class:`~plur.memory.Memory`: each goes to the store at once (atomic YAML files) and,
    when the indexes are open, into them."""

    def learn(self, statement: str, *, scope: str = "global", type: str = "fact", tags: Sequence[str] = (),
              domain: str | None = None, rationale: str | None = None, source: Mapping[str, Any] | None = None,
              pinned: bool = False, created: Any = None, valid_from: Any = None, valid_until: Any = None,
              ttl: Any = None, user_id: str | None = None, metadata: Mapping[str, Any] | None = None) -> Engram:
        """Remember ``statement``; an exact duplicate in the same scope returns the existing engram.

        A duplicate is not written again, but tags it lacks are added to it (never dropped): the
        returned engram then carries the union of its tags and ``tags``.

        Args:
            statement: the text (non-blank, at most ``max_statement_bytes`` UTF-8 bytes).
            scope: ``global`` | ``project:<name>`` | ``agent:<name>``; an authorisation boundary for recall.
            type: one of :data:`plur.store.engram.TYPES`.
            tags: short labels.
            domain: the :class:`Engram` field (optional text).
            rationale: the :class:`Engram` field (optional text).
            source: provenance mapping (kind, session, turn, url...), or ``None``.
            pinned: pinned engrams go first in the memory block.
            created: when it was true/said (ISO-8601 or datetime; default now).
            valid_from: start of the validity window (ISO-8601 or datetime); before it recall and the
                memory block skip the engram (:meth:`Engram.is_current`).
            valid_until: end of the validity window (ISO-8601 or datetime), likewise.
            ttl: time to live from now, e.g. ``'30d'`` (:func:`~plur.store.engram.parse_duration`)
                or a ``timedelta``; sets ``valid_until`` (give one of the two).
            user_id: the note is this user's: the scope ``agent:<user_id>``, instead of ``scope``
                (:mod:`plur.memory.labels`).
            metadata: ``{name: value}`` stored as the tags ``name:value``, which :meth:`recall` and
                :meth:`list` filter on with their own ``metadata``.

        Returns:
            The stored engram (the one already held, for a duplicate).

        Raises:
            ValidationError: empty statement, bad scope/type/tag/time/metadata, ttl with valid_until, both
                ``scope`` and ``user_id``, or over ``max_statement_bytes``.
        """
        scope = _labels.scope_of(scope, user_id, "global") or "global"
        if metadata:   # a bare string stays a bare string, refused by the one tag check (never split into letters)
            tags = [*_writes.tag_tuple(tags), *_labels.tags_of(metadata)]
        return _writes.learn(self, statement, scope=scope, type=type, tags=tags, domain=domain, rationale=rationale,
                             source=source, pinned=pinned, created=created, valid_from=valid_from,
                             valid_until=valid_until, ttl=ttl)

    def learn_outcome(self, statement: str, **fields: Any) -> tuple[Engram, bool]:
        """:meth:`learn`, and whether it wrote a new engram (``False``: an exact duplicate already held it).

        The flag is decided under the store's write lock, so of two processes learning the same text at once
        exactly one is told ``True`` (``plur learn`` prints the new id or ``already known: <id>`` from it).

        Args:
            statement: as :meth:`learn`.
            **fields: :meth:`learn`'s keyword arguments.

        Returns:
            ``(engram, created)``: the stored engram, and ``True`` when this call wrote it.

        Raises:
            ValidationError: as :meth:`learn`.
        """
        return _writes.learn_outcome(self, statement, **fields)

    def learn_many(self, items: Iterable[Mapping[str, Any]]) -> list[Engram]:
        """Learn many engrams under one store lock.

        Args:
            items: each the keyword arguments of :meth:`learn`, ``statement`` included.

        Returns:
            The stored engrams in input order (duplicates map to the engram already stored).
        """
        return _writes.learn_many(self, items)

    def update(self, engram_id: str, *, expected: str | None = None, **changes: Any) -> Engram:
        """Change fields of an engram (statement, scope, type, tags, pinned, status, ...).

        Args:
            engram_id: the engram to change.
            expected: the version the caller started from (:func:`plur.store.engram.engram_version`
                of the engram it showed or edited); when the stored engram differs now, nothing is
                written and :class:`~plur.errors.ConflictError` is raised. Without it, the version
                read here is used, so a change landing between this read and the write is not lost either.
            **changes: field -> new value.

        Returns:
            The engram as stored now.

        Raises:
            NotFoundError: no such engram.
            InvalidIdError: ``engram_id`` is not an engram id.
            ValidationError: a bad field value.
            ConflictError: changed since ``expected`` ("changed since you opened it"; CLI exit 7, web 409).
            DuplicateError: the new text is exactly another active engram's in the scope (``other_id``).
        """
        return _writes.update(self, engram_id, expected=expected, **changes)

    def supersede(self, old_id: str, statement: str, **fields: Any) -> Engram:
        """Replace an engram by a new statement ("I moved to Porto" replaces "I live in Lisbon").

        The new engram takes the old one's scope, type, tags, domain and pinned flag unless ``fields``
        says otherwise, and records ``supersedes=old_id``. The old engram is kept (its history stays
        on disk) but retired: ``status='retired'``, ``valid_until`` = now. Recall, the memory block
        and the worker then skip it; ``recall(..., include_expired=True)`` still finds it.

        Args:
            old_id: the engram being replaced.
            statement: the new text.
            **fields: :meth:`learn` keyword arguments for the new engram (``created``, ``ttl``...).

        Returns:
            The new engram.

        Raises:
            NotFoundError: no such engram.
            InvalidIdError: ``old_id`` is not an engram id.
            ValidationError: a bad field, or ``old_id`` already retired, or the new statement equals the
                old one (use :meth:`update`).
        """
        return _writes.supersede(self, old_id, statement, **fields)

    def feedback(self, engram_id: str, useful: bool, *, agent: str | None = None,
                 query: str | None = None) -> dict[str, int]:
        """Record that an engram was (or was not) useful, in stats.db (the engram file is not touched).

        Args:
            engram_id: the engram the feedback is about (must exist).
            useful: ``True`` useful, ``False`` not useful.
            agent: who says so (an agent id), if known.
            query: the recall query it answered, if known.

        Returns:
            The engram's feedback totals so far, ``{"useful": n, "not_useful": m}``.

        Raises:
            NotFoundError: no such engram.
            InvalidIdError: ``engram_id`` is not an engram id.
            ValidationError: ``useful`` is not a bool.
        """
        return _writes.feedback(self, engram_id, useful, agent=agent, query=query)

    def import_engrams(self, engrams: Iterable[Engram], *, dry_run: bool = False) -> ImportResult:
        """Store imported engrams, skipping what the store already holds; ``dry_run`` writes nothing.

        An entry is known when the store holds its id with the same text and scope (retired or not), or an
        active engram with the same statement in its scope (then its new tags are added to that one).
        Credentials in a statement are removed first (:func:`plur.memory.imports.screen`).

        Args:
            engrams: as read by :func:`plur.formats.transfer.read_engrams`.
            dry_run: only say what would be added and what is known.

        Returns:
            An :class:`~plur.memory.imports.ImportResult`: added, known, renamed, secrets redacted.

        Raises:
            ValidationError: an engram plur cannot store (over ``max_statement_bytes``...).
            StoreError: the write failed.
        """
        return _imports.import_engrams(self, engrams, dry_run=dry_run)

    def forget(self, engram_id: str) -> Engram:
        """Delete an engram and every trace of its statement under the home; returns what was removed.

        Erased at once (not at the next save): the engram file; its entry in the store manifest;
        its terms and postings in the saved BM25 index and its rows in the saved dense index (in
        memory and on disk: rows zeroed, graph nodes scrubbed, :func:`plur.index.purge.erase_dense`); the
        embedding cache rows of its text and chunks; its quarantined copies; in stats.db its feedback, its
        injection links and every recall that returned it (the query and all that recall's hit rows), with
        SQLite's ``secure_delete``, the WAL truncated and the file VACUUMed. See README "What forget erases".

        Args:
            engram_id: the engram to erase.

        Returns:
            The engram as it was stored.

        Raises:
            NotFoundError: no such engram.
            InvalidIdError: ``engram_id`` is not an engram id.
            StoreError: the home cannot be written.
        """
        return _forget.forget(self, engram_id)
