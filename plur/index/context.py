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
        self._groups: dict[Key, dict[int, list[str]]] = {}
        self._where: dict[str, tuple[Key, int]] = {}
        self._text: dict[str, str] = {}
        self._hash: dict[str, str] = {}
        self._own: dict[str, str] = {}
        self._key: dict[str, str] = {}

    def __contains__(self, engram_id: object) -> bool:
        return engram_id in self._where

    def _near(self, key: Key, turn: int, exclude: str | None = None) -> list[str]:
        group = self._groups.get(key, {})
        out: list[str] = []
        for t in range(turn - self.window, turn + self.window + 1):
            out += [i for i in group.get(t, ()) if i != exclude]
        return out

    def put(self, engram: Any, own_text: str | None = None, own_key: str | None = None) -> set[str]:
        """Record (or move) ``engram``; returns the *other* ids whose document changed.

        Args:
            engram: an :class:`~plur.store.engram.Engram` (active).
            own_text: the engram's own part of its document (default its statement; the
                index may append the date words).
            own_key: what ``own_text`` depends on, for :meth:`signature` (default the content hash).

        An engram without conversation provenance is dropped from the bookkeeping (it may
        have lost it in an edit), so its former neighbours are returned.
        """
        affected = self.drop(engram.id)
        where = conversation_key(engram) if self.window else None
        if where is None:
            return affected
        key, turn = where
        self._groups.setdefault(key, {}).setdefault(turn, []).append(engram.id)
        self._where[engram.id] = where
        self._text[engram.id] = engram.statement
        self._hash[engram.id] = engram.content_hash
        self._own[engram.id] = engram.statement if own_text is None else own_text
        self._key[engram.id] = engram.content_hash if own_key is None else own_key
        affected.update(self._near(key, turn, exclude=engram.id))
        affected.discard(engram.id)
        return affected

    def drop(self, engram_id: str) -> set[str]:
        """Forget ``engram_id``; returns its former neighbours (their documents changed)."""
        where = self._where.pop(engram_id, None)
        self._text.pop(engram_id, None)
        self._hash.pop(engram_id, None)
        self._own.pop(engram_id, None)
        self._key.pop(engram_id, None)
        if where is None:
            return set()
        key, turn = where
        group = self._groups[key]
        group[turn].remove(engram_id)
        if not group[turn]:
            del group[turn]
        if not group:
            del self._groups[key]
        return set(self._near(key, turn))

    def rebuild(self, engrams: Iterable[Any], own: Any = None) -> None:
        """Reset the bookkeeping to exactly ``engrams`` (active ones; order does not matter).

        Args:
            engrams: the active engrams.
            own: engram -> ``(own_text, own_key)`` (default: the statement and its content hash).
        """
        self._groups.clear()
        self._where.clear()
        self._text.clear()
        self._hash.clear()
        self._own.clear()
        self._key.clear()
        if not self.window:
            return
        for e in engrams:
            if conversation_key(e) is not None:  # the others are not recorded (put would drop them)
                self.put(e, *(own(e) if own is not None else (None, None)))

    def neighbours(self, engram_id: str) -> list[str]:
        """Ids of ``engram_id``'s neighbours in turn order (``[]`` without provenance)."""
        where = self._where.get(engram_id)
        if where is None:
            return []
        return self._near(where[0], where[1], exclude=engram_id)

    def document(self, engram_id: str) -> str:
        """The BM25 text of a recorded engram: its own text, then its neighbours' statements, one per line."""
        parts = [self._own[engram_id]] * self.own_weight + [self._text[i] for i in self.neighbours(engram_id)]
        return "\n".join(parts)

    def signature(self, engram_id: str) -> str:
        """What a recorded engram's document depends on, for the index manifest.

        Its own key (the content hash, unless the index put more in its own text) without
        neighbours; otherwise a sha256 over the window, the own key and each neighbour's
        content hash, in turn order.
        """
        own_key = self._key[engram_id]
        near = self.neighbours(engram_id)
        if not near:
            return own_key
        h = hashlib.sha256(f"ctx{self.window}x{self.own_weight}:{own_key}".encode())
        for i in near:
            h.update(b"|" + self._hash[i].encode())
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
            terms = tuple(sorted(wanted.intersection(tokenizer(self._text[i]))))
            if terms:
                out.append((i, terms))
        return tuple(out)
