"""The store's oldest-first order is kept across writes, not sorted again after each (issue 49, nothing timed)."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from plur.store import order
from plur.store.engram import Engram
from plur.store.order import Order
from plur.store.store import EngramStore

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _engram(i: int, minutes: int) -> Engram:
    return Engram(id=f"ENG-2026-01-01-{i:06x}", statement=f"Note number {i} about the garden.",
                  created=T0 + timedelta(minutes=minutes))


def test_a_write_keeps_the_order_instead_of_sorting_the_store_again(tmp_path: Path, monkeypatch) -> None:
    """A store's ``all()`` after a new note, an older note, an edit and a delete gives the oldest-first order
    without sorting every engram again (a ``plur list`` after each captured turn sorted a million, ~1-2 s)."""
    store = EngramStore(tmp_path, fsync=False)
    for i in range(20):
        store.add(_engram(i, 10 * i))
    assert [e.id for e in store.all()] == [_engram(i, 0).id for i in range(20)]
    sorts: list[int] = []
    real = sorted
    monkeypatch.setattr(order, "sorted", lambda *a, **k: (sorts.append(1), real(*a, **k))[1], raising=False)
    store.add(_engram(100, 1000))                                   # the newest: appended
    store.add(_engram(101, 55))                                     # an older one: put in place
    first = store.get(_engram(3, 0).id)
    store.put(dataclasses.replace(first, statement="Note number 3, now about the roses."))
    store.delete(_engram(7, 0).id)
    got = store.all()
    assert sorts == []
    assert [e.id for e in got] == [e.id for e in real(store.by_id().values(), key=lambda e: (e.created, e.id))]
    assert got[3].statement == "Note number 3, now about the roses." and len(got) == 21


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 30), st.integers(0, 5)), max_size=60))
def test_the_kept_order_is_always_the_sorted_order(ops) -> None:
    """Any mix of adds (new, older, replacing) and removes leaves the same list a fresh sort gives, also when the
    edits pass ``MAX_EDITS`` and the order is dropped."""
    kept, live, limit = Order(), {}, order.MAX_EDITS
    kept.sorted([])
    order.MAX_EDITS = 4
    try:
        for op, i, minute in ops:
            e = _engram(i, minute)
            if op == "add":
                kept.add(e, live.get(e.id))
                live[e.id] = e
            elif e.id in live:
                kept.remove(live.pop(e.id))
            if kept.items is not None:
                assert kept.items == sorted(live.values(), key=order.key)
    finally:
        order.MAX_EDITS = limit
    assert kept.sorted(live.values()) == sorted(live.values(), key=order.key)
