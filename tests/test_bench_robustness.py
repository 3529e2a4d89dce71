"""What the official benchmark files may hold that the loaders must survive, each with a small fixture.

Every case must load (never abort a 500-question run on one question), be scored by the official
rule where one exists, and leave a note for the run's manifest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import cli
from bench.datasets import longmemeval
from bench.datasets.locomo import session_date


def _turn(content, role="user", **kw):
    return {"role": role, "content": content, **kw}


def _entry(**over):
    entry = {
        "question_id": "q1", "question_type": "single-session-user", "question": "Where did I park the car?",
        "answer": "Level 3", "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ["s_a", "answer_x_1", "s_b"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 09:00", "2023/05/22 (Mon) 18:30"],
        "haystack_sessions": [
            [_turn("I love hiking.", has_answer=False), _turn("Nice!", role="assistant")],
            [_turn("I parked the car on level 3.", has_answer=True), _turn("Noted.", role="assistant"),
             _turn("Also bought milk.", has_answer=False)],
            [_turn("What should I cook tonight?", has_answer=False)],
        ],
        "answer_session_ids": ["answer_x_1"],
    }
    entry.update(over)
    return entry


def test_a_session_listed_twice_is_kept_once_with_a_note():
    e = _entry()
    e["haystack_session_ids"].append("answer_x_1")
    e["haystack_sessions"].append(e["haystack_sessions"][1])
    e["haystack_dates"].append("2023/05/25 (Thu) 09:00")
    for gran, want in (("session", ["s_a", "answer_x_1", "s_b"]),
                       ("turn", ["s_a_1", "answer_x_1_1", "noans_x_1_3", "s_b_1"])):
        notes: list[str] = []
        task = longmemeval.build_task(e, gran, notes=notes)
        assert list(task.doc_ids) == want
        assert any("listed twice" in n and "same content" in n for n in notes), notes
    assert task.queries[0].gold == frozenset({"answer_x_1_1"})


def test_the_old_abort_is_gone_for_a_whole_file(tmp_path, capsys):
    e = _entry()
    e["haystack_session_ids"].append("s_a")
    e["haystack_sessions"].append([_turn("I love hiking, again.", has_answer=False)])   # different content
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([e, _entry(question_id="q2")]))
    out = tmp_path / "run"
    assert cli.main(["longmemeval", "--data", str(path), "--mode", "bm25", "--granularity", "turn",
                     "--no-full-depth", "--out", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_questions"] == 2
    assert any("'s_a' listed twice" in n and "different content" in n for n in manifest["notes"])


def test_missing_has_answer_reads_as_false_with_a_note():
    e = _entry()
    del e["haystack_sessions"][1][2]["has_answer"]       # the official turn-level code asserts here
    notes: list[str] = []
    task = longmemeval.build_task(e, "turn", notes=notes)
    assert "noans_x_1_3" in task.doc_ids and task.queries[0].gold == frozenset({"answer_x_1_1"})
    assert any("lack has_answer" in n for n in notes)
    for turn in e["haystack_sessions"][1]:
        turn.pop("has_answer", None)
    notes = []
    task = longmemeval.build_task(e, "session", notes=notes)
    assert "noans_x_1" in task.doc_ids and task.queries[0].gold == frozenset()   # no evidence left
    assert task.queries[0].extra["has_target"] is False


def test_empty_and_malformed_sessions_load():
    e = _entry()
    e["haystack_sessions"][0] = []
    e["haystack_sessions"][2] = None
    notes: list[str] = []
    task = longmemeval.build_task(e, "session", notes=notes)
    assert list(task.doc_ids) == ["s_a", "answer_x_1", "s_b"] and task.texts[0] == "" and task.texts[2] == ""
    assert any("'s_b' is NoneType" in n for n in notes)
    e["haystack_sessions"][1].insert(1, "not a turn")
    notes = []
    task = longmemeval.build_task(e, "turn", notes=notes)
    assert list(task.doc_ids) == ["answer_x_1_1", "noans_x_1_4"]      # official numbering kept
    assert any("turn 1 is not an object" in n for n in notes)
    e["haystack_sessions"] = e["haystack_sessions"][:2]
    notes = []
    longmemeval.build_task(e, "session", notes=notes)
    assert any("3 haystack_session_ids but 2 haystack_sessions" in n for n in notes)


@pytest.mark.parametrize("content, text", [
    (None, ""), (42, "42"), ([{"type": "text", "text": "I parked"}, "on level 3"], "I parked on level 3"),
])
def test_non_string_content_becomes_text(content, text):
    e = _entry()
    e["haystack_sessions"][1][0]["content"] = content
    notes: list[str] = []
    task = longmemeval.build_task(e, "turn", notes=notes)
    assert task.texts[task.doc_ids.index("answer_x_1_1")] == text
    assert any("non-string content" in n for n in notes)


def test_provenance_dates_and_question_date():
    task = longmemeval.build_task(_entry(), "turn")
    meta = dict(zip(task.doc_ids, task.meta))
    assert meta["noans_x_1_3"].session == "answer_x_1" and meta["noans_x_1_3"].turn == 2
    assert meta["noans_x_1_3"].date == "2023-05-21T09:00:00" and meta["noans_x_1_3"].role == "user"
    assert task.queries[0].now == "2023-05-30T10:00:00"
    assert longmemeval.haystack_date("2023/13/01 (Mon) 10:00") is None
    assert longmemeval.haystack_date(None) is None
    assert longmemeval.haystack_date("2023/05/20") == "2023-05-20T00:00:00"


def test_locomo_session_dates():
    assert session_date("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00"
    assert session_date("12:04 am on 1 January, 2024") == "2024-01-01T00:04:00"
    assert session_date("sometime in May") is None and session_date(None) is None


def test_the_committed_sample_still_loads_without_notes():
    tasks, notes = longmemeval.load_tasks(Path(__file__).parent / "data" / "longmemeval_sample.json", "turn")
    assert tasks and not [n for n in notes if "listed twice" in n or "non-string" in n]
    assert all(m.date for m in tasks[0].meta)
