"""A compound question keeps both answers (issue 46): each question of "Which port does the web dev server listen
on, and which branch do we deploy from?" is answered by another note, and the relevance floor's relative part kept
the weaker one out (0.267 against 0.703 x 0.66 with all-MiniLM-L6-v2, two notes in a fresh repository). A hit the
floor keeps out is now judged again against each question alone (plur.index.parts, floor.clear_by_parts)."""

from __future__ import annotations

import json

import pytest

from conftest import SHARED

from plur.index.floor import Floor, clear_by_parts, mark
from plur.index.parts import question_parts
from plur.index.recall import Hit
from plur.store.engram import Engram

DEPLOY = "We deploy the billing service from the branch release-candidate."
PORT = "The web package's dev server listens on port 5173."
ASKED = "Which port does the web dev server listen on, and which branch do we deploy from?"


@pytest.mark.parametrize("query, parts", [
    (ASKED, ("Which port does the web dev server listen on", "which branch do we deploy from")),
    ("What is my dog called and where does my sister live?", ("What is my dog called", "where does my sister live")),
    ("Which port does the dev server use? Which branch do we deploy from?",
     ("Which port does the dev server use", "Which branch do we deploy from")),
    ("What is the port, and is it open to the world?", ("What is the port", "is it open to the world")),
    ("where does my sister live and what is my dog called", ("where does my sister live", "what is my dog called")),
    ("Who did Evan meet on his trip to Canada, and who did he come back from Canada with?",
     ("Who did Evan meet on his trip to Canada", "who did he come back from Canada with")),
])
def test_a_compound_question_is_split_into_its_questions(query: str, parts: tuple[str, ...]) -> None:
    assert question_parts(query) == parts


@pytest.mark.parametrize("query", [
    "What did James and Samantha do?",                                    # no question word after "and"
    "What did she paint, and when?",                                      # a part under three words
    "What does Nate do that he loves and can make money from?",           # a verb after a bare "and"
    "According to Gina, what makes Jon a perfect mentor and guide?",      # a bare comma places the question
    "What did Deb share a photo of, which brought a smile to Jolene's face?",
    "When Dave was a child, what did he and his father do in the garage?",
    "I use uv and do not use pip",                                        # a statement
    "Which port does the web dev server listen on?",
    "a? b? c? d? e?",
    "What is A and what is B and what is C and what is D and what is E?",   # more than four: a list, not a question
    "",
    "x" * 500 + ", and which branch do we deploy from?",
])
def test_one_question_is_not_split(query: str) -> None:
    assert question_parts(query) == ()


def test_locomo_questions_split_rarely_and_only_where_two_things_are_asked() -> None:
    """3 of LoCoMo's 1,986 questions ask two things ("..., and how does he address them?"); the others are one
    question each, so their recall is unchanged."""
    qs = [q["question"] for s in json.loads((SHARED / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
          for q in s["qa"]]
    split = [q for q in qs if question_parts(q)]
    assert len(qs) == 1986 and len(split) == 3, split


def _hit(statement: str, score: float, rank: int) -> Hit:
    return Hit(engram=Engram.create(statement), score=score, rank=rank)


def test_a_hit_the_floor_kept_out_clears_it_for_the_question_it_answers() -> None:
    floor = Floor(0.21, 0.66, "test")
    port, deploy, noise = _hit(PORT, 0.703, 1), _hit(DEPLOY, 0.267, 2), _hit("The office plants are watered.", 0.25, 3)
    hits = mark([port, deploy, noise], floor)
    assert [bool(h.below_floor) for h in hits] == [False, True, True]
    parts = [("Which port does the web dev server listen on", {port.engram.id: 0.873, deploy.engram.id: 0.010}),
             ("which branch do we deploy from", {deploy.engram.id: 0.692, port.engram.id: 0.206,
                                                  noise.engram.id: 0.30})]
    out = clear_by_parts(hits, parts, floor)
    assert [(h.engram.id, h.below_floor, h.answers) for h in out] == [
        (port.engram.id, "", ""), (deploy.engram.id, "", "which branch do we deploy from"),
        (noise.engram.id, hits[2].below_floor, "")]                # 0.30 < 0.66 x 0.692 for its question too
    assert [(h.rank, h.score) for h in out] == [(1, 0.703), (2, 0.267), (3, 0.25)]   # ranks and scores unchanged
    assert clear_by_parts(hits, [], floor) == hits and clear_by_parts(hits, parts, Floor()) == hits


# -- real model --------------------------------------------------------------------------------------------------

@pytest.fixture
def shop(memory):
    for s in (DEPLOY, PORT):
        memory.learn(s, scope="project:shop", type="user")
    for s in ("The user's dog is called Rex.", "The user prefers dark mode in every editor.",
              "The office plants are watered on Fridays."):
        memory.learn(s)
    memory.catch_up(progress=False)
    return memory


def test_the_block_for_a_compound_question_holds_both_answers(shop) -> None:
    """The section's block and the hook's (Claude Code: at most 4, each at least half the best score) both hold
    the two notes; each question alone still gets only its own note. Before, the deploy note was kept out."""
    from plur.prompt.increment import new_engrams_block
    from plur.prompt.selection import recall_block

    ids = {e.statement: e.id for e in shop.list()}
    hits = shop.recall(ASKED, 10, scope="project:shop")
    deploy = next(h for h in hits if h.engram.id == ids[DEPLOY])
    assert deploy.below_floor == "" and deploy.answers == "which branch do we deploy from"
    assert set(recall_block(shop, ASKED, scope="project:shop").engram_ids) == {ids[DEPLOY], ids[PORT]}
    assert set(new_engrams_block(shop, ASKED, scope="project:shop").engram_ids) == {ids[DEPLOY], ids[PORT]}
    assert recall_block(shop, "Which port does the web dev server listen on?", scope="project:shop").engram_ids \
        == (ids[PORT],)
    assert recall_block(shop, "which branch do we deploy from?", scope="project:shop").engram_ids == (ids[DEPLOY],)
    assert all(not h.answers for h in shop.recall("Which port does the web dev server listen on?", 10))
