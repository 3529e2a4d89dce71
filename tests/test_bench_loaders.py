"""LongMemEval and LoCoMo loaders: corpus construction, relabelling, evidence repair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.datasets import locomo, longmemeval
from plur.errors import ValidationError

DATA = Path(__file__).parent / "data"
from conftest import SHARED  # noqa: E402


def _entry(qid="q1", sessions=None, ids=None):
    sessions = sessions or [
        [{"role": "user", "content": "hello there", "has_answer": False},
         {"role": "assistant", "content": "hi", "has_answer": False},
         {"role": "user", "content": "my bike is red", "has_answer": True}],
        [{"role": "user", "content": "nothing here", "has_answer": False},
         {"role": "assistant", "content": "the bike is red, you said", "has_answer": True}],
        [{"role": "user", "content": "filler question"}, {"role": "assistant", "content": "filler answer"}],
    ]
    ids = ids or ["answer_x_1", "answer_x_2", "sharegpt_abc_0"]
    return {"question_id": qid, "question_type": "single-session-user", "question": "what colour is my bike?",
            "answer": "red", "question_date": "2023/05/01 (Mon) 10:00", "haystack_session_ids": ids,
            "haystack_dates": ["d"] * len(ids), "haystack_sessions": sessions, "answer_session_ids": ids[:2]}


def test_session_granularity_joins_user_turns_and_relabels_sessions_without_user_evidence():
    task = longmemeval.build_task(_entry(), "session")
    assert task.doc_ids == ("answer_x_1", "noans_x_2", "sharegpt_abc_0")
    assert task.texts == ("hello there my bike is red", "nothing here", "filler question")
    assert task.queries[0].gold == {"answer_x_1"}
    assert task.session_of is None


def test_turn_granularity_numbers_turns_over_all_roles_and_relabels_turns():
    task = longmemeval.build_task(_entry(), "turn")
    assert task.doc_ids == ("noans_x_1_1", "answer_x_1_3", "noans_x_2_1", "sharegpt_abc_0_1")
    assert task.queries[0].gold == {"answer_x_1_3"}
    assert task.session_of == "underscore"


def test_include_assistant_indexes_assistant_turns_and_their_evidence():
    task = longmemeval.build_task(_entry(), "turn", include_assistant=True)
    assert "answer_x_2_2" in task.doc_ids and "noans_x_1_2" in task.doc_ids
    assert task.queries[0].gold == {"answer_x_1_3", "answer_x_2_2"}
    sess = longmemeval.build_task(_entry(), "session", include_assistant=True)
    assert sess.doc_ids[1] == "answer_x_2"
    assert sess.texts[1] == "nothing here the bike is red, you said"


def test_abstention_questions_are_scored_but_not_primary():
    q = longmemeval.build_task(_entry(qid="q1_abs"), "session").queries[0]
    assert not q.primary and q.scored and q.group == "abstention"
    assert q.extra["question_type"] == "single-session-user"


def test_question_without_user_evidence_has_empty_gold_and_no_target():
    sessions = [[{"role": "user", "content": "x", "has_answer": False},
                 {"role": "assistant", "content": "y", "has_answer": True}]]
    q = longmemeval.build_task(_entry(sessions=sessions, ids=["answer_y_1"]), "session").queries[0]
    assert q.gold == frozenset() and q.extra["has_target"] is False and q.primary


def test_grouped_variant_uses_only_original_first_questions(tmp_path):
    orig = _entry()
    grouped = {k: v for k, v in orig.items() if k not in ("question", "answer", "answer_session_ids")}
    good = dict(grouped, questions=[orig["question"], "extra?"], answers=["red", "x"],
                answer_session_ids=[["answer_x_1"], ["sharegpt_abc_0"]])
    bad = dict(grouped, question_id="q2", questions=["filler?"], answers=["x"], answer_session_ids=[["sharegpt_abc_0"]])
    path = tmp_path / "grouped.json"
    path.write_text(json.dumps([good, bad]))
    entries, notes = longmemeval.load_entries(path)
    assert [e["question"] for e in entries] == [orig["question"]]
    assert entries[0]["answer_session_ids"] == ["answer_x_1"]
    assert len(notes) == 1 and "q2" in notes[0]


def test_bad_inputs_raise_validation_errors(tmp_path):
    with pytest.raises(ValidationError, match="does not exist"):
        longmemeval.load_entries(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValidationError, match="list of question objects"):
        longmemeval.load_entries(tmp_path / "x.json")
    with pytest.raises(ValidationError, match="granularity"):
        longmemeval.load_tasks(DATA / "longmemeval_sample.json", "round")


def test_committed_sample_is_a_real_longmemeval_s_haystack():
    path = DATA / "longmemeval_sample.json"
    assert path.stat().st_size <= 2 * 1024 * 1024
    raw = json.loads(path.read_text())
    assert set(raw[0]) >= {"question_id", "question_type", "question", "answer", "question_date",
                           "haystack_session_ids", "haystack_dates", "haystack_sessions", "answer_session_ids"}
    tasks, _ = longmemeval.load_tasks(path, "session")
    (task,) = tasks
    assert len(task.doc_ids) == len(raw[0]["haystack_session_ids"]) > 30
    assert task.queries[0].gold == set(raw[0]["answer_session_ids"])
    turn_tasks, _ = longmemeval.load_tasks(path, "turn")
    assert all(g.rsplit("_", 1)[0] in raw[0]["answer_session_ids"] for g in turn_tasks[0].queries[0].gold)


# -- LoCoMo -----------------------------------------------------------------------------------
def _sample():
    conv = {"speaker_a": "Ann", "speaker_b": "Bob",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                          {"speaker": "Bob", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo of a dog"}],
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "The cat is called Tom."}],
            "session_3_date_time": "orphan key"}
    qa = [{"question": "What pet did Ann adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 4},
          {"question": "Pet names?", "answer": "Tom", "evidence": ["D1:1; D2:1"], "category": 1},
          {"question": "Bob's dog?", "evidence": ["D:1:2", "D9:9", "D"], "category": 5,
           "adversarial_answer": "yes"},
          {"question": "No evidence?", "answer": "x", "evidence": [], "category": 3}]
    return {"sample_id": "conv-x", "conversation": conv, "qa": qa}


def test_locomo_turn_corpus_with_captions_and_repaired_evidence():
    task, notes = locomo.build_task(_sample(), "turn")
    assert task.doc_ids == ("D1:1", "D1:2", "D2:1")
    assert task.texts[1] == "Bob: Look! [image: a photo of a dog]"
    q = task.queries
    assert q[0].gold == {"D1:1"} and q[0].primary and q[0].group == "cat4"
    assert q[1].gold == {"D1:1", "D2:1"}
    assert q[2].gold == {"D1:2"} and not q[2].primary and q[2].scored and q[2].group == "cat5"
    assert q[2].extra["answer"] == "yes"
    assert q[3].gold == frozenset() and not q[3].scored and not q[3].primary
    assert any("D9:9" in n for n in notes)


def test_locomo_session_corpus_maps_gold_to_sessions():
    task, _ = locomo.build_task(_sample(), "session")
    assert task.doc_ids == ("D1", "D2")
    assert task.texts[0] == "Ann: I adopted a cat.\nBob: Look! [image: a photo of a dog]"
    assert task.queries[1].gold == {"D1", "D2"}


def test_normalize_evidence():
    valid = {"D11:26", "D30:5", "D8:6", "D9:17"}
    kept, dropped = locomo.normalize_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D10:19", "D8:6"], valid)
    assert kept == ["D8:6", "D9:17", "D11:26", "D30:5"]
    assert dropped == ["D", "D10:19"]


def test_real_locomo_counts_match_its_readme():
    tasks, notes = locomo.load_tasks(SHARED / "locomo" / "locomo10.json", "turn")
    assert len(tasks) == 10
    assert sum(len(t.doc_ids) for t in tasks) == 5882
    queries = [q for t in tasks for q in t.queries]
    assert len(queries) == 1986
    assert sum(1 for q in queries if q.extra["category"] == 5) == 446
    assert sum(1 for q in queries if not q.scored) == 4
    sessions, _ = locomo.load_tasks(SHARED / "locomo" / "locomo10.json", "session")
    assert sum(len(t.doc_ids) for t in sessions) == 272
    limited, _ = locomo.load_tasks(SHARED / "locomo" / "locomo10.json", "turn", limit=250)
    assert sum(len(t.queries) for t in limited) == 250 and len(limited) == 2
