"""What a mem0 user reaches for, in plur's model (issue 48): a user id (a scope of its own), metadata (tags) as
filters, and the history of an edited note (the supersede chain). Each was a TypeError before."""

from __future__ import annotations

from pathlib import Path

import pytest

from plur.errors import NotFoundError, ValidationError
from plur.memory import Memory


@pytest.fixture
def mem(plur_home: Path):
    with Memory(plur_home, model="none") as m:
        yield m


def test_a_user_id_is_a_scope_of_its_own(mem: Memory) -> None:
    alice = mem.learn("Alice is allergic to peanuts.", user_id="alice", type="user")
    mem.learn("Bob is allergic to shellfish.", user_id="bob", type="user")
    shared = mem.learn("The canteen closes at 3 pm.")
    assert alice.scope == "agent:alice"
    got = [h.engram.id for h in mem.recall("allergic canteen", user_id="alice", mode="bm25")]
    assert alice.id in got and shared.id in got and len(got) == 2   # alice's notes plus global, never bob's
    assert [e.id for e in mem.list(user_id="alice")] == [alice.id]
    with pytest.raises(ValidationError, match="not both"):
        mem.recall("x", scope="project:a", user_id="alice")
    with pytest.raises(ValidationError, match="not both"):
        mem.learn("x y", scope="project:a", user_id="alice")
    with pytest.raises(ValidationError, match="user_id"):
        mem.learn("x y", user_id=" ")


def test_metadata_is_kept_as_tags_and_filters_recall_and_list(mem: Memory) -> None:
    tea = mem.learn("Drinks green tea every morning.", metadata={"category": "food", "confidence": 3})
    coffee = mem.learn("Drinks black coffee after lunch.", metadata={"category": "food", "source": "chat"})
    mem.learn("Drinks a lot of water while running.", metadata={"category": "sport"})
    assert set(tea.tags) == {"category:food", "confidence:3"}
    hits = mem.recall("drinks", metadata={"category": "food"}, mode="bm25")
    assert {h.engram.id for h in hits} == {tea.id, coffee.id}
    hits = mem.recall("drinks", metadata={"category": "food", "source": "chat"}, mode="bm25")
    assert [h.engram.id for h in hits] == [coffee.id]                 # every key must match
    assert mem.recall("drinks", metadata={"category": "travel"}, mode="bm25") == []
    assert [e.id for e in mem.list(metadata={"confidence": 3})] == [tea.id]
    with pytest.raises(ValidationError, match="metadata key"):
        mem.learn("x y", metadata={"a:b": 1})
    with pytest.raises(ValidationError, match="metadata"):
        mem.learn("x y", metadata={"a": [1, 2]})


def test_history_follows_the_supersede_chain_from_any_version(mem: Memory) -> None:
    first = mem.learn("I live in Lisbon.", type="user")
    second = mem.supersede(first.id, "I moved to Porto.")
    third = mem.supersede(second.id, "I moved to Berlin.")
    lone = mem.learn("The dog is called Rex.")
    for eid in (first.id, second.id, third.id):
        assert [e.id for e in mem.history(eid)] == [first.id, second.id, third.id]
    assert [e.status for e in mem.history(third.id)] == ["retired", "retired", "active"]
    assert [e.id for e in mem.history(lone.id)] == [lone.id]
    mem.update(lone.id, statement="The dog is called Rex, a beagle.")  # in place: same id, no earlier text kept
    assert [e.statement for e in mem.history(lone.id)] == ["The dog is called Rex, a beagle."]
    with pytest.raises(NotFoundError):
        mem.history("ENG-2026-01-01-abcdef")
