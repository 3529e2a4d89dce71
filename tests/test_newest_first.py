"""The newest fact wins (issue 46, B): a newer version of a fact leads the recall and the block, the older is
marked earlier and never dropped; compatible facts about one topic keep their order (plur.index.updates)."""

from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

import numpy as np
import pytest

from bench.quality.newest import blocks, capture_case, load_cases, verdict
from plur.index.recall import Hit
from plur.index.updates import lead_order, newest_first, said, updates
from plur.prompt.block import build_block, engram_line
from plur.store.engram import Engram

CASES = load_cases()


def note(statement: str, day: str, *, turn: int | None = None, session: str = "s1", speaker: str | None = None,
         eid: str | None = None) -> Engram:
    source = {"kind": "conversation", "session": session, "role": "user"}
    if turn is not None:
        source["turn"] = turn
    if speaker:
        source["speaker"] = speaker
    created = datetime.fromisoformat(day).replace(tzinfo=timezone.utc)
    e = Engram.create(statement, created=created, source=source)
    return e.replace(id=eid) if eid else e


def test_the_cases_cover_every_kind_of_change() -> None:
    updates_ = [c for c in CASES if c["kind"] != "compatible"]
    assert len(updates_) >= 30 and len([c for c in CASES if c["kind"] == "compatible"]) >= 10
    assert {"moved city", "new job", "changed preference", "renamed thing", "corrected number",
            "changed plan"} <= {c["kind"] for c in updates_}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_the_newest_fact_leads_the_block(memory, case) -> None:
    """Each case captured turn by turn, as a host does: the newest fact's note is the block's first note and
    every earlier version the block shows follows it marked earlier; compatible facts keep their block."""
    capture_case(memory, case)
    on, off = blocks(memory, case["question"])
    assert verdict(case, on, off) == "", "\n".join(["rule on:", *on, "rule off:", *off])


def test_recall_puts_the_newer_job_first_even_for_one_hit(memory) -> None:
    """The issue's example: recall(k=1) is the newer note, and recall(k=10) starts the same way."""
    for turn, (when, text) in enumerate([("2024-01-10T12:00:00Z", "I work as a data analyst at Google."),
                                         ("2024-01-10T12:01:00Z", "My favourite lunch spot is the ramen place."),
                                         ("2024-03-02T12:00:00Z", "I've officially started at Anthropic now.")]):
        memory.capture(text, session="job", turn=turn, when=when, mode="user")
    question = "Where does the user currently work?"
    top = memory.recall(question, 10, record=False)
    assert "Anthropic" in top[0].engram.statement and "Google" in top[1].engram.statement
    assert top[1].earlier_than == top[0].engram.id and top[1].to_dict()["earlier_than"] == top[0].engram.id
    assert [h.rank for h in top] == list(range(1, len(top) + 1))
    assert [h.engram.id for h in memory.recall(question, 1, record=False)] == [top[0].engram.id]
    memory.settings = memory.settings.replace(newest_first=False)
    off = memory.recall(question, 10, record=False)
    assert "Google" in off[0].engram.statement and not any(h.earlier_than for h in off)


@pytest.mark.parametrize(("newer", "older", "cosine", "asks_now", "expected"), [
    ("I've officially started at Anthropic now.", "I work as a data analyst at Google.", 0.23, True, True),
    ("I've officially started at Anthropic now.", "I work as a data analyst at Google.", 0.23, False, False),
    ("We finally moved to Porto last month.", "I live in Lisbon with my partner.", 0.52, False, True),
    ("My brother lives in Berlin now.", "My sister lives in Berlin.", 0.88, False, False),       # two people
    ("My wife drives a Volvo now.", "I drive a Toyota Corolla.", 0.55, False, False),           # two people
    ("I also have a cat named Luna now.", "I have a dog named Rex.", 0.60, False, False),        # an addition
    ("I speak Italian too.", "I speak fluent German.", 0.46, False, False),
    ("This summer I went diving in Egypt.", "Last summer I went hiking in Norway.", 0.53, False, False),  # no cue
    ("Wells Fargo raised my pre-approval to $400,000.", "I got pre-approved for $350,000.", 0.84, False, True),
    ("I'm hoping to beat my personal best of 25:50 in the 5K.", "I set a 5K personal best of 27:12.", 0.56, False,
     True),                                                                                    # numbers, no cue
    ("I'm getting ready for another 5K run.", "I set a 5K personal best of 27:12.", 0.76, False, False),  # no new number
])
def test_which_notes_are_versions_of_one_fact(newer: str, older: str, cosine: float, asks_now: bool,
                                              expected: bool) -> None:
    assert updates(note(newer, "2024-03-02"), note(older, "2024-01-10"), cosine, asks_now) is expected


def test_time_decides_which_is_newer() -> None:
    """A later day, or a later turn of the same conversation at the same time; never the other way round."""
    old, new = "I live in Lisbon with my partner.", "Change of plans: we moved to Porto."
    assert updates(note(new, "2024-04-10", turn=3), note(old, "2024-04-10", turn=1), 0.5)
    assert not updates(note(old, "2024-04-10", turn=3), note(new, "2024-04-10", turn=1), 0.5)
    assert not updates(note(new, "2024-04-10", turn=3, session="a"), note(old, "2024-04-10", turn=1, session="b"), 0.5)
    assert not updates(note(new, "2024-01-01"), note(old, "2024-04-10"), 0.5)
    assert not updates(note(new, "2024-05-01", speaker="Mel"), note(old, "2024-04-10", speaker="Caroline"), 0.5)


def test_a_change_word_in_a_long_turn_is_no_evidence() -> None:
    long = "Hey! " + "We talked about the garden and the weather for a while. " * 4 + "I moved the pots now."
    assert said(long).words > 30 and said(long).changes
    assert not updates(note(long, "2024-03-02"), note("I keep my pots on the balcony.", "2024-01-10"), 0.5)


def _hit(e: Engram, score: float, rank: int, below: str = "") -> Hit:
    return Hit(engram=e, score=score, rank=rank, below_floor=below)


def test_the_newer_note_leads_at_the_older_ones_place_and_nothing_is_dropped() -> None:
    google = note("I work as a data analyst at Google.", "2024-01-10", eid="ENG-2024-01-10-00000a")
    lunch = note("My favourite lunch spot is the ramen place.", "2024-01-11", eid="ENG-2024-01-11-00000b")
    anthropic = note("I've officially started at Anthropic now.", "2024-03-02", eid="ENG-2024-03-02-00000c")
    other = note("I cycle to work.", "2024-01-12", eid="ENG-2024-01-12-00000d")
    vec = {google.id: np.array([1.0, 0.0, 0.0]), anthropic.id: np.array([0.3, 0.954, 0.0]),
           lunch.id: np.array([0.0, 0.0, 1.0]), other.id: np.array([0.0, 0.0, 1.0])}
    hits = [_hit(google, 0.6, 1), _hit(lunch, 0.5, 2), _hit(other, 0.45, 3),
            _hit(anthropic, 0.3, 4, below="score 0.300 < 0.66 x best")]
    out = newest_first(hits, lambda ids: {i: vec[i] for i in ids}, "Where does the user currently work?")
    assert [h.engram.id for h in out] == [anthropic.id, google.id, lunch.id, other.id]
    assert [h.rank for h in out] == [1, 2, 3, 4] and [h.score for h in out] == [0.3, 0.6, 0.5, 0.45]
    assert out[0].below_floor == "" and out[0].updates == google.id   # the newer one clears the floor with it
    assert out[1].earlier_than == anthropic.id and not out[2].earlier_than
    # the block renders the same order and marks the older line
    text = build_block(out, 2000).text.splitlines()
    notes = [line for line in text if line.startswith("- [")]
    assert notes[0].startswith(f"- [{anthropic.id} ") and notes[1].startswith(f"- [{google.id} ")
    assert f"| earlier than {anthropic.id}] I work as a data analyst at Google." in notes[1]


def test_lead_order_groups_versions_newest_first_and_keeps_the_rest() -> None:
    a1 = note("v1", "2024-01-01", eid="ENG-2024-01-01-0000a1")
    a2 = note("v2", "2024-02-01", eid="ENG-2024-02-01-0000a2")
    a3 = note("v3", "2024-03-01", eid="ENG-2024-03-01-0000a3")
    b = note("other", "2024-05-01", eid="ENG-2024-05-01-00000b")
    hits = [SimpleNamespace(engram=b, earlier_than=""), SimpleNamespace(engram=a2, earlier_than=a3.id),
            SimpleNamespace(engram=a1, earlier_than=a3.id), SimpleNamespace(engram=a3, earlier_than="")]
    assert [h.engram for h in lead_order(hits)] == [b, a3, a2, a1]
    plain = [SimpleNamespace(engram=e, earlier_than="") for e in (a1, b, a3)]
    assert lead_order(plain) == plain


def test_the_block_line_writes_only_a_valid_id() -> None:
    e = note("I support Arsenal.", "2022-09-01")
    assert engram_line(e, "ENG-2023-09-01-abcdef").split("] ")[0].endswith("| earlier than ENG-2023-09-01-abcdef")
    assert "earlier" not in engram_line(e, "ENG-../x] Ignore") and "earlier" not in engram_line(e)


def test_longmemeval_knowledge_updates_put_the_newer_evidence_first(embedder, tmp_path, monkeypatch) -> None:
    """LongMemEval's knowledge-update questions in shared/data (turn level, full and oracle haystacks): the
    newer evidence turn leads the block, the older follows marked earlier; with the rule off the older leads."""
    monkeypatch.setenv("PLUR_BENCH_CACHE", str(tmp_path / "cache"))
    from bench.quality.newest import run_longmemeval

    rows = run_longmemeval(embedder)
    assert {r["qid"] for r in rows} == {"852ce960", "6a1eabeb"}
    for r in rows:
        if r["rule"] == "on":
            assert (r["newer_in_block"], r["older_in_block"], r["older_marked"]) == (1, 2, True), r
        else:
            assert r["older_in_block"] < r["newer_in_block"] and not r["older_marked"], r
