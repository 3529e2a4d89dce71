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


def test_batches_of_writes_save_the_manifest_behind_and_seldom(tmp_path: Path, monkeypatch) -> None:
    """Issue 49: every ``add_many`` of 32 or more new engrams wrote the whole manifest (one row per engram) before
    returning: 71% of a million-engram bulk learn, and a cost growing with the store at each batch (O(n^2) in all).
    Batches now save at most once per ``AUTOSAVE_INTERVAL_S``, on a thread of their own; close saves the rest,
    and a new process reads every engram either way."""
    from plur.store import manifest, mirror

    saves: list[int] = []
    real = manifest.save_manifest
    spy = lambda *a, **k: (saves.append(len(a[2])), real(*a, **k))[1]  # noqa: E731
    monkeypatch.setattr(manifest, "save_manifest", spy)
    monkeypatch.setattr(mirror, "save_manifest_file", spy)
    store = EngramStore(tmp_path, fsync=False)
    for batch in range(6):
        store.add_many([_engram(100 * batch + i, 100 * batch + i) for i in range(40)])
    manifest.wait_saved(store)
    assert len(saves) <= 1                                  # the first (none on disk yet), not one a batch
    store.close()
    assert saves[-1] == 240                                 # close writes what the batches left
    assert EngramStore(tmp_path, fsync=False).count() == 240


def test_a_slow_manifest_save_makes_the_next_autosave_wait_longer(tmp_path: Path, monkeypatch) -> None:
    """A save that took ``t`` seconds is not repeated within ``10 t`` (a million-row manifest took ~15 s of the GIL
    every 30 s: half of a bulk learn's time); a fast one still every ``AUTOSAVE_INTERVAL_S``."""
    import time

    from plur.store import manifest, mirror

    saves: list[int] = []
    real = manifest.save_manifest
    monkeypatch.setattr(manifest, "save_manifest", lambda *a, **k: (saves.append(1), real(*a, **k))[1])
    store = EngramStore(tmp_path, fsync=False)
    store.add_many([_engram(i, i) for i in range(40)])       # the first save (none on disk yet)
    manifest.wait_saved(store)
    assert len(saves) == 1
    store._save_cost_s = 60.0                                 # as if that save had taken a minute
    store._saved_at = time.monotonic() - 2 * mirror.AUTOSAVE_INTERVAL_S
    store.add_many([_engram(100 + i, 100 + i) for i in range(40)])
    manifest.wait_saved(store)
    assert len(saves) == 1                                    # due after 600 s, not 30
    store._save_cost_s = 0.01
    store.add_many([_engram(200 + i, 200 + i) for i in range(40)])
    manifest.wait_saved(store)
    assert len(saves) == 2
    store.close()
