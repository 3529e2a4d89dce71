"""bench.scale: the distractor notes are reproducible, distinct and shaped as captured turns (nothing timed)."""

from __future__ import annotations

from collections import Counter

from bench.datasets.paths import SHARED_DATA
from bench.scale.distractors import OPENERS, TURNS_PER_SESSION, distractors
from bench.scale.homes import locomo_items
from plur.store.engram import normalize_statement


def test_distractors_are_reproducible_distinct_turns_of_three_kinds() -> None:
    first = list(distractors(600, SHARED_DATA))
    assert first == list(distractors(600, SHARED_DATA))                          # seeded: the same store every run
    texts = [d["statement"] for d in first]
    assert len({normalize_statement(t) for t in texts}) == 600                   # the store would merge equal ones
    locomo = {normalize_statement(i["statement"]) for i in locomo_items()}
    assert not locomo & {normalize_statement(t) for t in texts}                  # no LoCoMo turn among them
    assert sum(t.startswith(OPENERS) for t in texts[8::10]) >= 50                # paraphrases (2 in 10)
    assert all(d["source"]["kind"] == "conversation" and d["source"]["role"] == "user" for d in first)
    sessions = Counter(d["source"]["session"] for d in first)
    assert set(sessions.values()) == {TURNS_PER_SESSION}
    assert [d["source"]["turn"] for d in first[:TURNS_PER_SESSION]] == list(range(TURNS_PER_SESSION))
    assert first[0]["created"] < first[-1]["created"]
