"""Active engram ids by (scope, content hash): the map duplicate detection looks up, kept small.

A ``{(scope, content_hash): {id}}`` map cost ~300 bytes an engram (a 2-tuple key and a one-id set
each: 29 MiB at 100k engrams, ``bench/speed/memory.py``). :class:`ActiveTexts` keys by the engram's
own ``content_hash`` string and holds its own id string, so an engram costs one dict slot (~40-80
bytes with the table's slack); a set appears only where several active engrams share a text (in
any scope), and the scope is checked on the engrams themselves at lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .engram import Engram


class ActiveTexts:
    """Ids of active engrams by content hash; :meth:`ids` narrows to a scope.

    The caller keeps it in step with its ``{id: Engram}`` map: :meth:`add` after storing an engram,
    :meth:`discard` with the engram it replaces or removes.
    """

    __slots__ = ("_by_hash",)

    def __init__(self) -> None:
        self._by_hash: dict[str, str | set[str]] = {}

    def add(self, e: Engram) -> None:
        """Record ``e`` when it is active (a retired engram is never a duplicate)."""
        if e.status != "active":
            return
        h = e.content_hash
        held = self._by_hash.get(h)
        if held is None:
            self._by_hash[h] = e.id
        elif type(held) is str:
            if held != e.id:
                self._by_hash[h] = {held, e.id}
        else:
            held.add(e.id)

    def discard(self, e: Engram) -> None:
        """Forget ``e`` (the engram as it was recorded; absent: nothing happens)."""
        h = e.content_hash
        held = self._by_hash.get(h)
        if held is None:
            return
        if type(held) is str:
            if held == e.id:
                del self._by_hash[h]
            return
        held.discard(e.id)
        if len(held) == 1:
            self._by_hash[h] = next(iter(held))
        elif not held:
            del self._by_hash[h]

    def ids(self, scope: str, chash: str, by_id: Mapping[str, Engram]) -> list[str]:
        """Ids of the active engrams in ``by_id`` with this scope and content hash (unordered).

        Args:
            scope: the scope the duplicate must be in. chash: :func:`plur.store.engram.content_hash`.
            by_id: the caller's engrams by id (each id held here is in it).
        """
        held = self._by_hash.get(chash)
        if held is None:
            return []
        out = []
        for i in ((held,) if type(held) is str else held):
            e = by_id.get(i)
            if e is not None and e.scope == scope and e.status == "active" and e.content_hash == chash:
                out.append(i)
        return out

    def clear(self) -> None:
        """Forget every id."""
        self._by_hash.clear()

    def __len__(self) -> int:
        """Number of distinct content hashes held."""
        return len(self._by_hash)
