"""The benchmark's capture mode hands every turn to Memory.capture, in order, and maps only what it stored."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from bench.datasets.tasks import DocMeta
from bench.engine.capture_learn import learn_captured


@dataclass
class _Result:
    stored: tuple = ()
    skipped: str = ""


class _Mem:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def capture(self, text, *, session, turn, role, scope, when, mode):
        self.calls.append((text, session, turn, role, scope, when, mode))
        if text == "ok":
            return _Result(skipped="trivial")
        return _Result(stored=(SimpleNamespace(id=f"E{len(self.calls)}"),))


def test_turns_go_through_capture_in_order_and_skips_map_to_nothing() -> None:
    mem = _Mem()
    docs = [("D1:1", "Caroline: I went to a support group."), ("D1:2", "ok"), ("D1:3", "Melanie: Painting!")]
    meta = [DocMeta(session="s1", turn=i, date="2023-05-08T13:56:00Z", role="user") for i in range(3)]
    stored, counts = learn_captured(mem, docs, meta)
    assert [e.id if e else None for e in stored] == ["E1", None, "E3"]
    assert counts == {"stored": 2, "trivial": 1}
    assert [c[1:3] for c in mem.calls] == [("s1", 0), ("s1", 1), ("s1", 2)]
    assert {c[3] for c in mem.calls} == {"user"} and {c[6] for c in mem.calls} == {"user"}


def test_documents_that_are_not_turns_are_refused() -> None:
    with pytest.raises(RuntimeError, match="granularity turn"):
        learn_captured(_Mem(), [("S1", "a whole session")], [DocMeta(session="s1")])
    with pytest.raises(RuntimeError, match="Memory.capture"):
        learn_captured(object(), [("D1:1", "x")], [DocMeta(session="s1", turn=0)])
