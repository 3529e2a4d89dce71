"""A question is never a fact (issue 46 A): capture stores no turn that only asks, so a question changes no
other note's score, rank or context, and no output shows it.

Before (issue 42 B) a captured question was stored and only kept out of the hits; it still took part in
scoring: BM25's statistics (N, df, avgdl), the fusion's scaling, the relative floor and its neighbours'
context. In a fresh repository the note "We deploy the billing service from the branch release-candidate."
scored 0.517 for a compound question, and 0.168 (under the floor) once the hook had captured that question;
"I use uv, never pip, in this repo." ranked first for "What is my dog called?" because the question was its
neighbouring turn. The proof on real data: every LoCoMo question captured next to its evidence turn leaves
every other note's score and rank exactly as they were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plur.memory import Memory
from plur.memory.capture import only_asks
from plur.prompt.selection import recall_block

from conftest import PACKAGED_MODEL, SHARED
#: (what the user said in session 1, what they ask in sessions 2 and 3)
CASES = (
    ("I am allergic to peanuts, so keep them out of any recipe.", "What food allergy do I have?"),
    ("Lin's dog is called Biscuit.", "What is my dog called?"),
    ("My passport expires in March 2027.", "When does my passport expire?"),
    ("We deploy the shop to Fly.io with GitHub Actions every Friday.", "Where do we deploy the shop?"),
    ("My daughter Mia starts school in Porto in September.", "Hi! When does Mia start school?"),
    ("The staging database password rotates on the first Monday of each month.",
     "By the way, when does the staging database password rotate?"),
    ("Soy alérgica a la penicilina.", "¿A qué medicamento soy alérgica?"),
    ("Mein Auto ist ein blauer Volvo von 2015.", "Welches Auto fahre ich?"),
)
OTHER = ("My sister Lena moved to Vienna last spring.", "I prefer window seats on trains.",
         "Our team meets on Thursdays at ten.", "I switched from vim to helix last year.")


@pytest.mark.parametrize("text", [q for _, q in CASES] + [
    "What is my dog called, and what breed is it?", "Remind me, where do I work?", "私の誕生日はいつですか？",
    "ما هي حساسيتي الغذائية؟", "Quel est le nom de mon chien ?", "Do you remember where I parked?"])
def test_turns_that_only_ask(text: str) -> None:
    assert only_asks(text)


@pytest.mark.parametrize("text", [f for f, _ in CASES] + [
    "Can you book a table, my wife is vegan?", "My wife is vegan, can you book a table?",
    "My flight got cancelled. What are my options?", "ls shows nothing in the deploy folder, why?",
    "Kannst du einen Tisch buchen, meine Frau ist Veganerin?", "what is my dog called", "",
    "I'm planning a trip to Japan and was wondering if you could recommend restaurants in Osaka?"])
def test_turns_that_say_something(text: str) -> None:
    assert not only_asks(text)


def test_a_question_is_never_stored_at_capture(plur_home: Path) -> None:
    with Memory(plur_home, model="none", fsync=False, capture="all") as m:
        for i, (_, question) in enumerate(CASES):
            assert m.capture(question, session="s", turn=i, role="user").skipped == "question", question
        assert m.capture("Shall I run the tests now?", session="s", turn=9, role="assistant").skipped == "question"
        assert m.list() == []
        assert m.capture(CASES[0][0], session="s", turn=10).stored


def test_a_question_asked_again_recalls_its_answer(memory: Memory) -> None:
    turn = 0
    for text in [f for f, _ in CASES] + list(OTHER):
        assert memory.capture(text, session="s1", turn=turn, mode="user").stored, text
        turn += 1
    answers = {q: memory.store.find_duplicate(f, "global").id for f, q in CASES}
    for i, (_, question) in enumerate(CASES):        # session 2: asked, recalled, then captured
        recall_block(memory, question)
        assert memory.capture(question, session="s2", turn=i, mode="user").skipped == "question"
    missing = []
    for i, (_, question) in enumerate(CASES):        # session 3: asked again
        block = recall_block(memory, question)
        if answers[question] not in block.engram_ids:
            missing.append((question, block.text))
    assert not missing, missing
    assert len(memory.list()) == len(CASES) + len(OTHER)


def _scores(memory: Memory, query: str, scope: str | None = None, k: int = 20) -> list[tuple[str, float, str]]:
    """``(id, score, below_floor)`` of every hit, best first (ranks are the list's order)."""
    return [(h.engram.id, h.score, h.below_floor) for h in memory.recall(query, k, scope=scope, record=False)]


def test_the_deploy_note_keeps_its_score_after_the_compound_question_is_captured(memory: Memory) -> None:
    """The issue's reproduction: a fresh repository, one note, the compound question recalled then captured (as
    the hook does after the prompt's own recall), then recalled again (a later prompt, an MCP recall)."""
    scope = "project:shop"
    (note,) = memory.capture("We deploy the billing service from the branch release-candidate.", session="s1",
                             turn=0, scope=scope, mode="user").stored
    prompt = "Which port does the web dev server listen on, and which branch do we deploy from?"
    before = _scores(memory, prompt, scope)
    assert before[0][0] == note.id and not before[0][2]           # above the floor
    got = memory.capture(prompt, session="s2", turn=0, scope=scope, mode="user")
    assert _scores(memory, prompt, scope) == before                # the same score, rank and floor mark
    assert got.skipped == "question" and not got.stored
    for mode in ("hybrid", "bm25", "dense"):                       # the prompt is no hit at any door
        assert [h.engram.id for h in memory.recall(prompt, 10, scope=scope, mode=mode)] == [note.id], mode
    assert recall_block(memory, prompt, scope=scope).engram_ids == (note.id,)


def test_a_question_is_no_neighbour(memory: Memory, plur_home: Path, embedder) -> None:
    """ "what is my dog called?" then "I use uv, never pip, in this repo." in one session: the uv note gets no
    context from the question, so it scores for "What is my dog called?" exactly as in a home where the question
    was never asked, under the relevance floor."""
    memory.capture("what is my dog called?", session="s1", turn=0, mode="user")
    (uv,) = memory.capture("I use uv, never pip, in this repo.", session="s1", turn=1, mode="user").stored
    memory.capture("ok", session="s1", turn=2, mode="user")          # trivial: no note, no neighbour either
    assert [e.id for e in memory.list()] == [uv.id]
    got = memory.recall("What is my dog called?", 10, explain=True, record=False)
    assert got and all(not h.context_matches and h.below_floor for h in got)   # no block note, no context
    with Memory(plur_home / "twin", embedder=embedder, model=PACKAGED_MODEL) as twin:
        twin.capture("I use uv, never pip, in this repo.", session="s1", turn=1, mode="user")
        assert [(h.score, h.below_floor) for h in twin.recall("What is my dog called?", 10, record=False)] == \
            [(h.score, h.below_floor) for h in got]


def _locomo_sample(sample_id: str) -> dict:
    data = json.loads((SHARED / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    return next(s for s in data if s["sample_id"] == sample_id)


def test_questions_change_no_other_notes_score_or_rank_on_locomo(memory: Memory) -> None:
    """LoCoMo conv-30 (369 turns, 105 questions): the turns captured (turn n of a session as turn 2n), each
    question then captured as the turn right after its first evidence turn (2n + 1: its neighbour, in its
    session), as a user who asks about what they said would. Every question's top 20 before and after: the
    same ids, scores, ranks and floor marks, in hybrid (min-max-free absolute fusion, BM25 statistics, the
    dense leg) and BM25 alone."""
    from plur.formats.chats import locomo

    sample = _locomo_sample("conv-30")
    turns = locomo.parse([sample], where="locomo")
    where = {t.extra["dia_id"]: t for t in turns if t.extra.get("dia_id")}
    for t in turns:
        memory.capture(t.text, session=t.session, turn=2 * t.turn, when=t.created, mode="user")
    memory.catch_up(progress=False)                 # every vector in: recall answers from a complete dense index
    questions = [q["question"] for q in sample["qa"]]
    assert len(questions) == 105
    before = {(q, mode): _scores(memory, q) if mode == "hybrid" else
              [(h.engram.id, h.score) for h in memory.recall(q, 20, mode=mode, record=False)]
              for q in questions for mode in ("hybrid", "bm25")}
    n_notes = len(memory.list())
    skipped = []
    for i, qa in enumerate(sample["qa"]):
        evidence = [where[d] for d in qa.get("evidence", []) if d in where]
        at = evidence[0] if evidence else turns[i]
        got = memory.capture(qa["question"], session=at.session, turn=2 * at.turn + 1, when=at.created, mode="user")
        skipped.append(got.skipped)
    changed = [(q, mode) for (q, mode), hits in before.items()
               if (_scores(memory, q) if mode == "hybrid" else
                   [(h.engram.id, h.score) for h in memory.recall(q, 20, mode=mode, record=False)]) != hits]
    assert not changed, (len(changed), changed[:3])
    assert len(memory.list()) == n_notes and set(skipped) == {"question"}


def test_questions_an_earlier_version_captured_are_never_indexed(memory: Memory, plur_home: Path, embedder) -> None:
    """A home that holds captured questions (stored before this rule): never a hit, never in the overview, no
    other note's score moves; with the setting capture_rules off they are ordinary notes again."""
    fact = "Ferris the cat sleeps on the piano."
    memory.capture(fact, session="s1", turn=0, mode="user")
    old = memory.learn("Where does Ferris sleep?", type="user",
                       source={"kind": "conversation", "format": "capture", "session": "s2", "turn": 0,
                               "role": "user", "capture": True})
    with Memory(plur_home / "twin", embedder=embedder, model=PACKAGED_MODEL) as twin:
        twin.capture(fact, session="s1", turn=0, mode="user")
        want = [h.score for h in twin.recall("Where does Ferris sleep?", 10, record=False)]
    for mode in ("hybrid", "bm25", "dense"):
        hits = memory.recall("Where does Ferris sleep?", 10, mode=mode, include_expired=True, record=False)
        assert hits and old.id not in [h.engram.id for h in hits], mode
    assert [h.score for h in memory.recall("Where does Ferris sleep?", 10, record=False)] == want
    assert "Where does Ferris sleep" not in recall_block(memory, "What do you know about me?").text
    memory.close()
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, capture_rules=False) as m:
        assert old.id in [h.engram.id for h in m.recall("Where does Ferris sleep?", 10, record=False)]
    learned = Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL)
    try:                                                              # not captured: an ordinary note
        note = learned.learn("Where does Ferris sleep at night?")
        assert note.id in [h.engram.id for h in learned.recall("Where does Ferris sleep?")]
    finally:
        learned.close()


def test_a_fact_beside_a_question_is_kept(memory: Memory) -> None:
    got = memory.capture("Can you book a table for Friday, my wife is vegan?", session="s", turn=0, mode="user")
    assert got.stored
    block = recall_block(memory, "Is anyone in my family vegan?")
    assert got.stored[0].id in block.engram_ids


def test_with_capture_rules_off_a_question_is_a_note(plur_home: Path) -> None:
    with Memory(plur_home, model="none", fsync=False, capture="user", capture_rules=False) as m:
        (q,) = m.capture("Where does Ferris sleep?", session="s", turn=0).stored
        assert m.capture("ok", session="s", turn=1).stored                 # every turn is kept
        assert q.id in [h.engram.id for h in m.recall("Where does Ferris sleep?", 5)]


def test_worker_door_a_question_asked_again_recalls_its_answer(memory: Memory) -> None:
    """RecallWorker (Python hosts): each message recalled, then captured; the question asked in a later
    session's first request gets the allergy note, not the question captured in the session before."""
    from plur.prompt.worker import RecallWorker

    with RecallWorker(memory, capture=True) as worker:
        for session, text in (("s1", "I am allergic to peanuts, so keep them out of any recipe."),
                              ("s1", "I prefer window seats on trains."), ("s2", "What food allergy do I have?")):
            worker.submit("a", text, "project:home", session=session)
            assert worker.wait_idle(120)
        # the fact is about the user: said in project:home, kept in global (route_personal, test_personal_notes.py)
        fact = memory.store.find_duplicate("I am allergic to peanuts, so keep them out of any recipe.", "global")
        assert fact is not None and not any(e.statement == "What food allergy do I have?" for e in memory.list())
        gen = worker.submit("a", "What food allergy do I have?", "project:home", session="s3")
        assert worker.wait_for("a", gen, 120)
        assert fact.id in worker.read_block("a").engram_ids


def test_service_door_a_question_asked_again_recalls_its_answer(plur_home, embedder) -> None:
    """POST /api/v1/capture then POST /api/v1/block (the DSH plugin's and the hooks' path), capture = user."""
    from starlette.testclient import TestClient

    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api

    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, capture="user") as memory, \
            RecallWorker(memory, capture=False) as worker:
        client = TestClient(create_api(memory, worker, token="t"))
        auth = {"Authorization": "Bearer t"}

        def capture(text: str, session: str) -> dict:
            r = client.post("/api/v1/capture", json={"text": text, "session": session, "turn": 0, "scope": "global",
                                                     "wait": True}, headers=auth)
            assert r.status_code == 200, r.text
            return r.json()

        def block(text: str) -> list[str]:
            r = client.post("/api/v1/block", json={"agent_id": "dsh", "query": text, "scope": "global"}, headers=auth)
            assert r.status_code == 200, r.text
            return r.json()["engram_ids"]

        (fact,) = capture("Lin's dog is called Biscuit.", "d1")["stored"]
        block("What is my dog called?")
        assert capture("What is my dog called?", "d2") == {"stored": [], "skipped": "question", "redacted": [],
                                                           "scope": "global", "forgotten": []}
        assert fact in block("What is my dog called?")
