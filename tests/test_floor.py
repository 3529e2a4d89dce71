"""The relevance floor: what the memory block holds, what statistics count as recalled (issue 29).

Real store, real model (the packaged all-MiniLM-L6-v2), real stats.db.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from plur.config import load_settings
from plur.errors import ConfigError
from plur.index import floor as floor_mod
from plur.index.floor import Floor, mark, resolve_floor
from plur.index.recall import Hit
from plur.prompt.selection import recall_block, recall_selection, select_block
from plur.store.engram import Engram

SIX = ("The user's dog is called Rex.", "The user's sister Mia lives in Lisbon.",
       "The user prefers dark mode in every editor.", "Project atlas uses PostgreSQL 16.",
       "Atlas CI runs on GitHub Actions.", "Deploys go through staging first, then production on Thursdays.")
MINILM = "sentence-transformers/all-MiniLM-L6-v2@1110a24:384:mean:norm:256"


def _hit(statement: str, score: float, rank: int = 1, pinned: bool = False) -> Hit:
    return Hit(engram=Engram.create(statement, pinned=pinned), score=score, rank=rank)


# -- pure ------------------------------------------------------------------------------------------------

def test_floor_reason_names_the_score_and_the_floor() -> None:
    f = Floor(0.3, 0.5, "test floor")
    assert f.reason(0.31, 0.5) == ""
    assert f.reason(0.2, 0.9) == "score 0.200 < floor 0.300 (test floor)"
    assert f.reason(0.35, 0.9) == "score 0.350 < 0.50 x best 0.900 = 0.450 (test floor)"
    assert not floor_mod.OFF.active and f.active


def test_mark_sets_below_floor_and_keeps_ranks_and_scores() -> None:
    hits = [_hit("a", 0.7, 1), _hit("b", 0.29, 2), _hit("c", 0.0, 3)]
    out = mark(hits, Floor(0.3, 0.0, "x"))
    assert [h.below_floor == "" for h in out] == [True, False, False]
    assert [(h.rank, h.score) for h in out] == [(1, 0.7), (2, 0.29), (3, 0.0)]
    assert all(h.below_floor == "" for h in mark(out, floor_mod.OFF))
    assert mark([], Floor(0.3)) == []


def test_resolve_floor_is_per_model_with_a_safe_default() -> None:
    assert resolve_floor("auto", MINILM) == floor_mod.CALIBRATED["sentence-transformers/all-MiniLM-L6-v2@1110a24"]
    assert resolve_floor("auto", "BAAI/bge-small-en-v1.5@5c38ec7:384:cls:norm:512") == floor_mod.UNCALIBRATED
    assert resolve_floor("auto", None) == floor_mod.BM25_ONLY
    assert resolve_floor("auto", MINILM, mode="bm25") == floor_mod.BM25_ONLY
    assert resolve_floor("auto", MINILM, mode="dense") == floor_mod.OFF
    assert resolve_floor("off", MINILM) == floor_mod.OFF
    assert resolve_floor("0.42", MINILM).min_score == 0.42
    # the uncalibrated floor never keeps out more than the calibrated one would (it errs towards showing notes)
    cal = floor_mod.CALIBRATED["sentence-transformers/all-MiniLM-L6-v2@1110a24"]
    assert floor_mod.UNCALIBRATED.min_score <= cal.min_score and floor_mod.UNCALIBRATED.top_ratio <= cal.top_ratio


@pytest.mark.parametrize("bad", ["high", "1.5", "-0.1", "nan"])
def test_a_bad_relevance_floor_setting_is_one_clear_error(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigError, match=r"relevance_floor=.*auto, off or a number from 0 to 1"):
        load_settings(tmp_path, relevance_floor=bad)


def test_select_block_leaves_out_hits_below_the_floor_but_shows_pinned_ones() -> None:
    marked = mark([_hit("kept", 0.8, 1), _hit("weak", 0.1, 2), _hit("weak but pinned", 0.1, 3, pinned=True)],
                  Floor(0.3, 0.0, "x"))
    sel = select_block(marked, 2000)
    lines = sel.block.text.splitlines()
    assert any(line.endswith("] kept") for line in lines)
    assert any(line.endswith("weak but pinned") for line in lines)
    assert not any(line.endswith("] weak") for line in lines)
    assert [h.engram.statement for h in sel.kept_out] == ["weak"]


def test_nothing_above_the_floor_gives_the_empty_block() -> None:
    sel = select_block(mark([_hit("weak", 0.1, 1)], Floor(0.3)), 2000)
    assert sel.block.text == "" and sel.block.engram_ids == () and len(sel.kept_out) == 1


# -- real model -------------------------------------------------------------------------------------

@pytest.fixture
def six(memory):
    for s in SIX:
        memory.learn(s)
    memory.catch_up(progress=False)
    return memory


def test_six_engram_store_block_holds_only_the_dog(six) -> None:
    """Issue 29's floor: before the floor every prompt carried all six notes of this store."""
    dog = next(e for e in six.list() if "dog" in e.statement)
    sel = recall_selection(six, "what is my dog called", agent="a")
    assert sel.block.engram_ids == (dog.id,)
    assert "The user's dog is called Rex." in sel.block.text
    assert len(sel.kept_out) == 5 and all("< floor" in h.below_floor for h in sel.kept_out)


def test_a_question_no_note_answers_gives_no_note_only_the_overview(six) -> None:
    """Issue 42 C: no note clears the floor -> no note in the block, the overview of what memory holds instead."""
    from plur.prompt.overview import WHY_FLOOR

    block = recall_block(six, "which telescope did the astronomer buy", agent="a")
    assert not [line for line in block.text.splitlines() if line.startswith("- [")]     # no recalled note
    assert f"Memory overview ({WHY_FLOOR}): 6 notes" in block.text
    assert [e for e in six.list() if f"- {e.statement}" in block.text]          # the overview's lines, no ids
    assert block.engram_ids == ()                                             # none counted as shown


def test_pinned_engrams_are_still_shown_when_nothing_clears_the_floor(six) -> None:
    pin = six.learn("Always answer in British English.", pinned=True)
    block = recall_block(six, "which telescope did the astronomer buy", agent="a")
    assert block.engram_ids == (pin.id,)


def test_hybrid_scores_do_not_depend_on_the_other_engrams(memory) -> None:
    """The floor's premise: a hit's score depends on the query and that engram only (comparable across
    queries and stores), so one threshold means the same everywhere."""
    dog = memory.learn(SIX[0])
    memory.catch_up(progress=False)
    alone = memory.recall("what is my dog called", 5, record=False)[0]
    for s in SIX[1:] + ("Dogs are loyal animals.", "A cat called Tom lives next door.", "Rex is a common name."):
        memory.learn(s)
    memory.catch_up(progress=False)
    crowd = {h.engram.id: h for h in memory.recall("what is my dog called", 20, record=False)}
    assert crowd[dog.id].dense_score == pytest.approx(alone.dense_score, abs=1e-5)
    assert crowd[dog.id].score == pytest.approx(alone.score, abs=0.05)


def test_recall_explain_and_json_say_what_the_floor_kept_out(six, plur_home: Path) -> None:
    from click.testing import CliRunner

    from plur.cli import cli

    six.close()
    env = {"PLUR_HOME": str(plur_home), "PLUR_MODEL": "sentence-transformers/all-MiniLM-L6-v2"}
    runner = CliRunner()
    out = runner.invoke(cli, ["recall", "--explain", "what is my dog called"], env=env)
    assert out.exit_code == 0, out.output
    assert out.output.count("kept out of the memory block: score") == 5
    got = runner.invoke(cli, ["recall", "--json", "what is my dog called"], env=env)
    hits = json.loads(got.stdout)
    assert [bool(h["below_floor"]) for h in hits] == [False] + [True] * 5
    assert "< floor 0.210" in hits[1]["below_floor"]
    plain = runner.invoke(cli, ["recall", "what is my dog called"], env=env)
    lines = plain.stdout.splitlines()
    assert ["[below floor]  " in line for line in lines] == [False] + [True] * 5, lines
    assert "Rex" in lines[0] and "hits marked [below floor] stay out of the memory block" in plain.stderr


# -- statistics -------------------------------------------------------------------------------------

def test_statistics_count_recalled_only_above_the_floor(six) -> None:
    dog = next(e for e in six.list() if "dog" in e.statement)
    recall_block(six, "what is my dog called", agent="a")
    six.feedback(dog.id, True, agent="a")
    counts = six.stats.engram_counts()
    assert counts[dog.id]["recalls"] == 1 and counts[dog.id]["below_floor"] == 0 and counts[dog.id]["useful"] == 1
    others = [e for e in six.list() if e.id != dog.id]
    assert all(counts[e.id]["recalls"] == 0 and counts[e.id]["below_floor"] == 1 for e in others)
    summary = six.stats.summary()
    assert summary["distinct_recalled"] == 1
    assert (summary["hits_above_floor"], summary["hits_below_floor"], summary["feedback_useful"]) == (1, 5, 1)
    assert [r["engram_id"] for r in summary["most_recalled"]] == [dog.id]

    from plur.web.queries import UsageCounts
    from plur.web.views import stats_page

    usage = UsageCounts(six.stats.path)
    try:
        assert usage.all()[dog.id] == counts[dog.id] and usage.one(others[0].id) == counts[others[0].id]
    finally:
        usage.close()
    page = stats_page(six)
    assert page.data["recalled_active"] == 1 and page.data["never_recalled_active"] == 5
    assert page.data["below_floor_only_active"] == 5 and page.data["useful_active"] == 1
    assert page.data["totals"]["hits_below_floor"] == 5


def test_a_schema_1_stats_db_is_migrated_and_old_hits_count_below(plur_home: Path) -> None:
    from plur.stats.db import StatsDB

    plur_home.mkdir(parents=True, exist_ok=True)
    path = plur_home / "stats.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
        INSERT INTO meta VALUES('schema_version', '1');
        CREATE TABLE recalls(id INTEGER PRIMARY KEY, ts REAL NOT NULL, agent TEXT, scope TEXT, query TEXT NOT NULL,
            mode TEXT NOT NULL, latency_ms REAL NOT NULL, n_hits INTEGER NOT NULL);
        CREATE TABLE recall_hits(recall_id INTEGER NOT NULL, engram_id TEXT NOT NULL, rank INTEGER NOT NULL,
            score REAL, bm25_rank INTEGER, dense_rank INTEGER);
        INSERT INTO recalls VALUES(1, 1.0, 'a', NULL, 'q', 'hybrid', 1.0, 1);
        INSERT INTO recall_hits VALUES(1, 'ENG-2025-01-01-000001', 1, 0.9, 1, 1);
    """)
    db.commit()
    db.close()
    stats = StatsDB(path)
    try:
        assert stats.engram_counts()["ENG-2025-01-01-000001"]["below_floor"] == 1
        assert stats.engram_counts()["ENG-2025-01-01-000001"]["recalls"] == 0
        stats.record_recall(agent="a", scope=None, query="q2", mode="hybrid", latency_ms=1.0,
                            hits=[_hit("x", 0.9)])
        assert stats.summary()["hits_above_floor"] == 1
    finally:
        stats.close()


def test_the_worker_replaces_a_block_with_the_overview_when_no_note_clears_the_floor(six) -> None:
    """The block of a message no note answers is replaced by the overview (issue 42 C), not kept or appended."""
    from plur.prompt.overview import WHY_FLOOR

    from plur.prompt.section import MemorySection
    from plur.prompt.worker import RecallWorker

    with RecallWorker(six, timeout_s=0) as worker:  # no deadline: a loaded machine must not change the verdict
        section = MemorySection(worker)
        first = worker.warm("a", "what is my dog called")
        assert "Rex" in first and "Lisbon" not in first
        worker.submit("a", "which telescope did the astronomer buy")
        assert worker.wait_idle(300.0)
        text = section.text("a")
        assert f"Memory overview ({WHY_FLOOR})" in text and text.count("<plur-memory>") == 1
        assert not [line for line in text.splitlines() if line.startswith("- [")]   # Rex's note is gone
