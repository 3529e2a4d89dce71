"""The store's engrams oldest first, kept in order across single adds and removes instead of sorted again.

``Store.all()`` sorts every engram by ``(created, id)`` once and keeps the list; a write used to drop it, so
the next ``all()`` (a ``plur list`` page, the web page's first page) sorted the whole store again: ~1-2 s at a
million engrams after every captured turn (issue 49). A new note is almost always the newest (an append); a
remove or an older note is put in place by bisection (a ``memmove`` of the list, ~1 ms at a million). After
:data:`MAX_EDITS` in-place edits since the last sort the list is dropped and sorted again when next read: a
bulk load of many files costs one sort, not one ``memmove`` each.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

#: In-place inserts and removes (not appends) kept before the order is rebuilt by one sort.
MAX_EDITS = 256


def key(e: Any) -> tuple[Any, str]:
    """The order of :meth:`plur.store.store.Store.all`."""
    return (e.created, e.id)


class Order:
    """A sorted list of engrams (or none yet), kept across adds and removes while that is cheap."""

    __slots__ = ("items", "edits")

    def __init__(self) -> None:
        self.items: list[Any] | None = None
        self.edits = 0

    def sorted(self, engrams: Any) -> list[Any]:
        """The kept list, sorted from ``engrams`` (every engram) when there is none."""
        if self.items is None:
            self.items, self.edits = sorted(engrams, key=key), 0
        return self.items

    def clear(self) -> None:
        """Forget the order (the next read sorts)."""
        self.items = None

    def add(self, e: Any, old: Any = None) -> None:
        """``e`` joins (replacing ``old``, the engram it updates, when given)."""
        if old is not None:
            self.remove(old)
        items = self.items
        if items is None:
            return
        if not items or key(items[-1]) < key(e):
            items.append(e)
            return
        self._edit()
        if self.items is not None:
            items.insert(bisect_left(items, key(e), key=key), e)

    def remove(self, e: Any) -> None:
        """``e`` leaves (nothing when it is not there)."""
        items = self.items
        if items is None:
            return
        if items and items[-1] is e:
            items.pop()
            return
        i = bisect_left(items, key(e), key=key)
        if i < len(items) and items[i].id == e.id:
            self._edit()
            if self.items is not None:
                del items[i]
        else:
            self.items = None  # not where its key says: sort again rather than guess

    def _edit(self) -> None:
        self.edits += 1
        if self.edits > MAX_EDITS:
            self.items = None
