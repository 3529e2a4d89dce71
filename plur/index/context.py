"""Conversation context for the BM25 leg: a turn's document is the turn plus its neighbouring turns.

An engram learned from a conversation turn carries provenance (contract B)::

    source = {"kind": "conversation", "session": "<id>", "turn": <0-based int>, ...}

Two engrams are *neighbours* when they share ``source.session`` and scope and their
``turn`` values differ by at most ``window``. The BM25 document of such an engram is its
own statement followed by its neighbours' statements in turn order, so a question that
echoes one turn also finds the answer in the next one (LoCoMo failure analysis in issue 12:
44% of turn-level misses had a gold turn next to a top-10 hit). A hit is still the one
engram; :meth:`ConversationContext.matches` tells which query terms only matched in a
neighbour. The dense leg keeps the bare statement.

Engrams without that provenance (or with ``window == 0``) are indexed as their bare
statement. This module is pure bookkeeping: it never touches an index. The caller
re-indexes the ids :meth:`put` / :meth:`drop` return, so a change to one turn re-indexes
only the turns whose document contains it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from .tokenize import Tokenizer

__all__ = ["ConversationContext", "conversation_key"]

Key = tuple[str, str]  # (scope, session)
#: (key, turn, statement, content_hash, own_suffix, key_suffix) of one recorded engram
_Record = tuple[Key, int, str, str, str, str]


def _any_id(group: Mapping[int, str | tuple[str, ...]]) -> str:
    """One id recorded in a (non-empty) group."""
    held = next(iter(group.values()))
    return held if isinstance(held, str) else held[0]


def conversation_key(engram: Any) -> tuple[Key, int] | None:
    """``((scope, session), turn)`` of an engram with conversation provenance, else ``None``.

    Provenance counts when ``source.kind == "conversation"``, ``source.session`` is a
    non-empty string (or int) and ``source.turn`` is an int >= 0 (not a bool).
    """
    source = getattr(engram, "source", None)
    if not isinstance(source, Mapping) or source.get("kind") != "conversation":
        return None
    session, turn = source.get("session"), source.get("turn")
    if isinstance(session, bool) or not isinstance(session, (str, int)) or session == "":
        return None
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
        return None
    return (str(engram.scope), str(session)), int(turn)


class ConversationContext:
    """Who neighbours whom, and the BM25 document text that follows from it.

    Args:
        window: neighbouring turns on each side (0 = no context; turns).
        own_weight: times the turn's own text is repeated in its document, so its own words
            outweigh its neighbours' (the term-frequency form of a BM25F field weight; Robertson,
            Zaragoza & Taylor, CIKM 2004). 1 = plain concatenation.

    Not thread-safe on its own: the owning :class:`~plur.index.indexes.IndexSet` is used under
    the facade's lock.
    """

    def __init__(self, window: int, own_weight: int = 1) -> None:
        self.window = max(0, int(window))
        self.own_weight = max(1, int(own_weight))
        # (scope, session) -> turn -> the id, or a tuple of ids when several engrams share the turn
        self._groups: dict[Key, dict[int, str | tuple[str, ...]]] = {}
        # id -> (key, turn, statement, content_hash, own_suffix, key_suffix); one flat tuple per engram whose
        # strings are the engram's own objects or shared suffixes, so 100k turns hold no copied text (issue 30)
        self._rec: dict[str, _Record] = {}

    def __contains__(self, engram_id: object) -> bool:
        return engram_id in self._rec

    def _near(self, key: Key, turn: int, exclude: str | None = None) -> list[str]:
        group = self._groups.get(key)
        if group is None:
            return []
        out: list[str] = []
        for t in range(turn - self.window, turn + self.window + 1):
            ids = group.get(t)
            if ids is None:
                continue
            if isinstance(ids, str):
                if ids != exclude:
                    out.append(ids)
            else:
                out += [i for i in ids if i != exclude]
        return out

    def put(self, engram: Any, own_suffix: str = "", key_suffix: str = "") -> set[str]:
        """Record (or move) ``engram``; returns the *other* ids whose document changed.

        Args:
            engram: an :class:`~plur.store.engram.Engram` (active).
            own_suffix: appended to the statement to make the engram's own part of its document
                (the index passes ``"\n"`` + the date words; pass a shared string, it is kept per engram).
            key_suffix: appended to the content hash to make what the own part depends on, for
                :meth:`signature` (the index passes ``"@"`` + the date words).

        An engram without conversation provenance is dropped from the bookkeeping (it may
        have lost it in an edit), so its former neighbours are returned.
        """
        where = conversation_key(engram) if self.window else None
        rec = self._rec.get(engram.id)
        if rec is not None and where is not None and rec[1] == where[1] and rec[0] == where[0] and rec[2:] == (
                engram.statement, engram.content_hash, own_suffix, key_suffix):
            return set()  # recorded as is (a sync's add after its rebuild): no document changed
        affected = self.drop(engram.id)
        if where is None:
            return affected
        key, turn = self._record(engram, where, own_suffix, key_suffix)
        affected.update(self._near(key, turn, exclude=engram.id))
        affected.discard(engram.id)
        return affected

    def _record(self, engram: Any, where: tuple[Key, int], own_suffix: str, key_suffix: str) -> tuple[Key, int]:
        """Enter an engram not recorded yet at ``where`` (its :func:`conversation_key`); returns ``(key, turn)``."""
        (scope, session), turn = where
        group = self._groups.get((scope, session))
        if group is None:
            key: Key = (scope, session)
            group = self._groups[key] = {}
        else:
            key = self._rec[_any_id(group)][0]  # share the group's key tuple
        held = group.get(turn)
        group[turn] = engram.id if held is None else (*((held,) if isinstance(held, str) else held), engram.id)
        self._rec[engram.id] = (key, turn, engram.statement, engram.content_hash, own_suffix, key_suffix)
        return key, turn

    def drop(self, engram_id: str) -> set[str]:
        """Forget ``engram_id``; returns its former neighbours (their documents changed)."""
        rec = self._rec.pop(engram_id, None)
        if rec is None:
            return set()
        key, turn = rec[0], rec[1]
        group = self._groups[key]
        held = group[turn]
        rest = () if isinstance(held, str) else tuple(i for i in held if i != engram_id)
        if not rest:
            del group[turn]
        else:
            group[turn] = rest[0] if len(rest) == 1 else rest
        if not group:
            del self._groups[key]
        return set(self._near(key, turn))

    def rebuild(self, engrams: Iterable[Any], own: Any = None) -> None:
        """Reset the bookkeeping to exactly ``engrams`` (active ones; order does not matter).

        Args:
            engrams: the active engrams.
            own: engram -> ``(own_suffix, key_suffix)`` as :meth:`put` takes them (default: none).
        """
        self._groups.clear()
        self._rec.clear()
        if not self.window:
            return
        for e in engrams:
            where = conversation_key(e)
            if where is None:  # not recorded (put would drop it)
                continue
            if e.id in self._rec:  # a repeated id: put moves it
                self.put(e, *(own(e) if own is not None else ()))
            else:  # no neighbours to report: the whole map is new
                self._record(e, where, *(own(e) if own is not None else ("", "")))

    def neighbours(self, engram_id: str) -> list[str]:
        """Ids of ``engram_id``'s neighbours in turn order (``[]`` without provenance)."""
        rec = self._rec.get(engram_id)
        if rec is None:
            return []
        return self._near(rec[0], rec[1], exclude=engram_id)

    def document(self, engram_id: str) -> str:
        """The BM25 text of a recorded engram: its own text, then its neighbours' statements, one per line."""
        rec = self._rec[engram_id]
        own = rec[2] + rec[4]
        parts = [own] * self.own_weight + [self._rec[i][2] for i in self.neighbours(engram_id)]
        return "\n".join(parts)

    def document_parts(self, engram_id: str) -> list[str]:
        """The pieces whose ``"\n"``-join is :meth:`document` (its own statement and suffix, then each neighbour's
        statement): a caller tokenizing many documents tokenizes each shared piece once."""
        rec = self._rec[engram_id]
        own = [rec[2], rec[4]] if rec[4] else [rec[2]]
        return own * self.own_weight + [self._rec[i][2] for i in self.neighbours(engram_id)]

    def signature(self, engram_id: str) -> str:
        """What a recorded engram's document depends on, for the index manifest.

        Its own key (the content hash, unless the index put more in its own text) without
        neighbours; otherwise a sha256 over the window, the own key and each neighbour's
        content hash, in turn order.
        """
        rec = self._rec[engram_id]
        own_key = rec[3] + rec[5]
        near = self.neighbours(engram_id)
        if not near:
            return own_key
        h = hashlib.sha256(f"ctx{self.window}x{self.own_weight}:{own_key}".encode())
        for i in near:
            h.update(b"|" + self._rec[i][3].encode())
        return "ctx:" + h.hexdigest()[:32]

    def matches(self, tokenizer: Tokenizer, query: str, engram_id: str, statement: str
                ) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Query terms that matched in a neighbour but not in the engram's own statement.

        Returns:
            ``((neighbour id, (term, ...)), ...)`` in turn order; empty when every matched
            term is in the statement itself or the engram has no neighbours.
        """
        near = self.neighbours(engram_id)
        if not near:
            return ()
        wanted = set(tokenizer(query)) - set(tokenizer(statement))
        out = []
        for i in near:
            terms = tuple(sorted(wanted.intersection(tokenizer(self._rec[i][2]))))
            if terms:
                out.append((i, terms))
        return tuple(out)
