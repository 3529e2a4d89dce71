""""Forget that" works by asking (issue 46 C): a user turn that asks to forget is not stored, what it points to
is forgotten with every guarantee of ``plur forget``, and the next block says so in one line (ids, no text).

Measured on two files written for this test: ``tests/data/forget_requests.tsv`` (turns labelled request / not,
eight languages: :func:`plur.memory.turns.forget_request.find`) and ``tests/data/forget_cases.json`` (a request
with the notes memory holds when it is said, and the ones it must forget: the whole capture path on the real
store and model). On main before this change every request was stored as a note and nothing was forgotten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plur.memory import Memory
from plur.memory.turns.forget_request import find, split
from plur.prompt.selection import recall_block

from conftest import DATA, PACKAGED_MODEL

SCOPE = "project:a"


def labelled() -> list[tuple[str, str, str]]:
    rows = []
    for line in (DATA / "forget_requests.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            label, lang, text = line.split("\t")
            rows.append((label, lang, text))
    return rows


def cases() -> list[dict[str, Any]]:
    return json.loads((DATA / "forget_cases.json").read_text(encoding="utf-8"))["cases"]


def test_the_detector_on_the_labelled_turns() -> None:
    rows = labelled()
    said = [(label, text, find(text)) for label, _, text in rows]
    tp = sum(1 for label, _, got in said if label == "request" and got is not None)
    fp = [text for label, text, got in said if label == "not" and got is not None]
    fn = [text for label, text, got in said if label == "request" and got is None]
    negatives = sum(1 for label, _, _ in said if label == "not")
    languages = {lang for label, lang, _ in rows if label == "request"}
    assert negatives >= 40 and languages == {"en", "de", "fr", "es", "it", "pt", "zh", "ja"}
    assert not fp, f"asked to forget where nobody did: {fp}"                      # precision 100%
    assert tp / (tp + len(fn)) >= 0.9, f"missed: {fn}"


@pytest.mark.parametrize("text, rest", [
    ("My flight is at 9. Please forget my SSN.", "My flight is at 9."),
    ("Please forget my old address. My new one is 5 Elm Street.", "My new one is 5 Elm Street."),
    ("Don't forget to run the tests.", "Don't forget to run the tests."),
])
def test_the_rest_of_a_turn_is_kept(text: str, rest: str) -> None:
    assert split(text)[1] == rest


def _fill(mem: Memory, notes: list[dict[str, str]]) -> tuple[dict[str, str], int]:
    """The case's notes stored where it says; returns key -> id and the next turn of the conversation."""
    ids: dict[str, str] = {}
    turns = {"conv": 0, "earlier": 0}
    for n in notes:
        where = n["where"]
        if where in ("conv", "earlier"):
            session = "now" if where == "conv" else "before"
            got = mem.capture(n["text"], session=session, turn=turns[where], scope=SCOPE, mode="user")
            assert got.stored, n
            ids[n["key"]] = got.stored[0].id
            turns[where] += 1
        else:
            scope = {"project": SCOPE, "global": "global", "other": "project:b"}[where]
            ids[n["key"]] = mem.learn(n["text"], scope=scope).id
    return ids, turns["conv"]


def test_requests_forget_what_they_name_and_nothing_else(tmp_path: Path, embedder) -> None:
    right = wrong = missed = 0
    problems = []
    for i, case in enumerate(cases()):
        with Memory(tmp_path / f"case-{i}", embedder=embedder, model=PACKAGED_MODEL, capture="user") as mem:
            ids, turn = _fill(mem, case["notes"])
            before = {e.id for e in mem.list()}
            got = mem.capture(case["request"], session="now", turn=turn, scope=SCOPE)
            assert got.skipped == "forget" and not got.stored, case["request"]     # the request is not stored
            gone = before - {e.id for e in mem.list()}
            assert set(got.forgotten) == gone
            want = {ids[k] for k in case["forget"]}
            right += len(gone & want)
            wrong += len(gone - want)
            missed += len(want - gone)
            if gone != want:
                problems.append((case["request"], sorted(k for k, v in ids.items() if v in gone), case["forget"]))
    precision = right / (right + wrong) if right + wrong else 1.0
    recall = right / (right + missed)
    print(f"forget requests: {len(cases())} cases, precision {precision:.3f}, recall {recall:.3f}; missed: {problems}")
    assert wrong == 0, problems
    assert recall >= 0.9, problems


def test_the_turns_that_ask_nothing_lose_no_note(memory: Memory) -> None:
    notes = ["My birthday is on 14 February.", "I keep my keys in the blue bowl.", "My daughter forgot her violin.",
             "Run the tests with make test.", "The build folder is dist/.", "My SSN is 078-05-1120.",
             "My password manager is 1Password.", "The users table lives in the main database.",
             "I live at 12 Baker Street.", "My email is jo@example.com.", "The old API is deprecated.",
             "I'm vegetarian.", "The cache expires after five minutes.", "Delete the branch after merging."]
    kept = {memory.learn(n, scope=SCOPE).id for n in notes} | {memory.learn(n).id for n in notes[:4]}
    negatives = [text for label, _, text in labelled() if label == "not"]
    for turn, text in enumerate(negatives):
        got = memory.capture(text, session="talk", turn=turn, scope=SCOPE, mode="user")
        assert not got.forgotten and got.skipped != "forget", text
    assert kept <= {e.id for e in memory.list()}                                # zero notes lost
    assert len(negatives) >= 40


@pytest.mark.parametrize("keep", [True, False], ids=["number-kept", "number-screened"])
def test_forgotten_everywhere_and_the_next_block_says_so(plur_home: Path, embedder, keep: bool) -> None:
    """The issue's case. With ``keep_identity_numbers`` the number itself is stored (and must go everywhere); by
    default the screen stores ``[redacted us-ssn]`` in its place, and the note is forgotten all the same."""
    memory = Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, keep_identity_numbers=keep)
    number = "078-05-1120"
    (ssn,) = memory.capture(f"My social security number is {number}.", session="s1", turn=0, scope=SCOPE,
                            mode="user").stored
    memory.capture("My dog is called Biscuit.", session="s1", turn=1, scope=SCOPE, mode="user")
    memory.catch_up(progress=False)
    shown = number if keep else "[redacted us-ssn]"
    assert shown in recall_block(memory, "what is my social security number?", scope=SCOPE).text
    request = "Actually, please forget my social security number."
    own = recall_block(memory, request, scope=SCOPE)                   # the request's own block (before capture)
    assert shown not in own.text and ssn.id not in own.engram_ids
    got = memory.capture(request, session="s1", turn=2, scope=SCOPE, mode="user")
    assert got.forgotten == (ssn.id,) and not got.stored
    assert [e.statement for e in memory.list()] == ["My dog is called Biscuit."]
    nxt = recall_block(memory, "what is my social security number?", scope=SCOPE)
    notice = [line for line in nxt.text.splitlines() if "at the user's request" in line]
    assert notice == [f"Forgotten at the user's request: {ssn.id} (erased from memory; do not repeat what they said)."]
    assert shown not in nxt.text and "security" not in notice[0]
    again = recall_block(memory, "what is my social security number?", scope=SCOPE)
    assert "at the user's request" not in again.text                  # said once
    memory.close()
    leaks = [p for p in memory.home.rglob("*") if p.is_file() and number.encode() in p.read_bytes()]
    assert not leaks, leaks                                            # files, indexes, stats.db, caches


def test_a_request_it_cannot_resolve_forgets_nothing_and_says_so(memory: Memory) -> None:
    memory.capture("Alex is my brother.", session="s1", turn=0, scope=SCOPE, mode="user")
    before = {e.id for e in memory.list()}
    got = memory.capture("Please forget what I told you about Zorro.", session="s1", turn=1, scope=SCOPE,
                         mode="user")
    assert got.skipped == "forget" and got.forgotten == () and {e.id for e in memory.list()} == before
    text = recall_block(memory, "hello", scope=SCOPE).text
    assert "no note matched, so nothing was forgotten" in text
    assert "forget tool (forget or plur_forget; in a shell, plur forget ID)" in text


def test_another_projects_notes_are_never_forgotten(memory: Memory) -> None:
    other = memory.learn("My SSN is 078-05-1120.", scope="project:b")
    got = memory.capture("Please forget my SSN.", session="s1", turn=0, scope=SCOPE, mode="user")
    assert got.forgotten == () and memory.get(other.id).statement == "My SSN is 078-05-1120."


def test_the_setting_turns_the_rule_off(plur_home: Path, embedder) -> None:
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, forget_requests=False) as mem:
        ssn = mem.capture("My SSN is 078-05-1120.", session="s1", turn=0, scope=SCOPE, mode="user").stored[0]
        got = mem.capture("Please forget my SSN.", session="s1", turn=1, scope=SCOPE, mode="user")
        assert got.stored and not got.forgotten and mem.get(ssn.id)


def test_at_the_worker_door(plur_home: Path, embedder) -> None:
    from plur.prompt.worker import RecallWorker

    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL) as mem:
        with RecallWorker(mem, capture=True) as worker:
            worker.warm("a", "My social security number is 078-05-1120.", scope=SCOPE)
            assert worker.wait_idle(30)
            worker.warm("a", "Actually, please forget my social security number.", scope=SCOPE)
            assert worker.wait_idle(30)
            block = worker.warm("a", "What do you know about my taxes?", scope=SCOPE)
        assert "078-05-1120" not in block and "Forgotten at the user's request: ENG-" in block
        assert not [e for e in mem.list() if "security" in e.statement]
