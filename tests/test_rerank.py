"""The optional second stage: the Reranker protocol, the pinned cross-encoder, the date boost.

The cross-encoder's own test runs only where its weights are on disk (none can be downloaded
on the machine this was written on); everything around it runs everywhere.
"""

from __future__ import annotations

import dataclasses
from datetime import date

import pytest

from plur.errors import ModelError
from plur.index import stages
from plur.index.dates import DateRange
from plur.embed.rerank import Reranker, load_reranker, reranker_pins
from plur.memory import Memory
from plur.store.engram import Engram
from plur.index.recall import Hit


class OverlapReranker:
    """A real (if simple) Reranker: counts query words in the passage."""

    name = "overlap"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def score(self, query, passages):
        self.calls.append(len(passages))
        words = set(query.lower().split())
        return [float(len(words & set(p.lower().rstrip(".").split()))) for p in passages]


def _hits(*statements, created=None):
    return [Hit(engram=Engram.create(s, created=created[i] if created else None), score=1.0 - i / 10, rank=i + 1)
            for i, s in enumerate(statements)]


def test_rerank_reorders_the_top_n_and_keeps_the_tail():
    hits = _hits("red apples", "green pears", "red green apples pears", "blue sky")
    r = OverlapReranker()
    assert isinstance(r, Reranker)
    out = stages.rerank(hits, "red apples pears", r, top_n=3)
    assert [h.engram.statement for h in out] == ["red green apples pears", "red apples", "green pears", "blue sky"]
    assert [h.rank for h in out] == [1, 2, 3, 4] and r.calls == [3]
    assert out[0].score == 3.0 and out[3].score == hits[3].score


def test_date_boost_lifts_hits_dated_in_the_named_range():
    hits = _hits("a", "b", "c", created=["2023-04-02", "2023-06-10", "2023-05-08"])
    may = [DateRange(date(2023, 5, 1), date(2023, 5, 31), "may 2023")]
    out = stages.boost_dates(hits, may, 0.5)
    assert [h.engram.statement for h in out] == ["c", "a", "b"]
    assert [h.date_match for h in out] == [True, False, False]
    assert out[0].score == 1.0 and out[1].score == 1.0  # ranked by 0.8 + 0.5 * 1.0, reported capped to [0, 1]
    assert stages.boost_dates(hits, may, 0.0) == hits and stages.boost_dates(hits, [], 0.5) == hits


def test_date_boost_matches_the_dates_a_statement_names_against_its_own_date():
    # said on 17 March 2022: "yesterday" = 16 March; the other two are dated and worded elsewhere
    hits = _hits("we played chess", "yesterday I went bowling", "I went bowling last year",
                 created=["2022-03-16", "2022-03-17", "2022-03-17"])
    day = [DateRange(date(2022, 3, 16), date(2022, 3, 16), "march 16, 2022")]
    out = stages.boost_dates(hits, day, 0.5, mentions=True)
    assert [(h.engram.statement, h.date_match) for h in out] == [
        ("we played chess", True), ("yesterday I went bowling", True), ("I went bowling last year", False)]
    # without mentions only the created date counts
    assert [h.date_match for h in stages.boost_dates(hits, day, 0.5)] == [True, False, False]
    # the named day is not the statement's own day, so "yesterday" in a turn of 18 March does not match
    late = _hits("yesterday I went bowling", created=["2022-03-18"])
    assert stages.boost_dates(late, day, 0.5, mentions=True) == late


def test_recall_finds_a_turn_by_the_day_its_words_name(plur_home):
    # the bowling turn was said on 17 March 2022 about 16 March; the question names 16 March
    query = "What did I do with Rob on March 16, 2022?"
    with Memory(plur_home, model="none", fsync=False, date_boost=1.0, index_dates=False) as mem:
        bowl = mem.learn("Yesterday I went bowling with Rob after work, then we had dinner downtown.",
                         created="2022-03-17T15:47:00Z")
        short = mem.learn("Rob and I go bowling.", created="2022-03-20T10:00:00Z")
        hits = mem.recall(query, 2, now="2022-11-07")
        assert [h.engram.id for h in hits] == [bowl.id, short.id] and [h.date_match for h in hits] == [True, False]
    # without date_mentions the shorter BM25 document wins and nothing is date-matched
    with Memory(plur_home, model="none", fsync=False, date_boost=1.0, index_dates=False,
                date_mentions=False) as mem:
        hits = mem.recall(query, 2, now="2022-11-07")
        assert [h.engram.id for h in hits] == [short.id, bowl.id] and not any(h.date_match for h in hits)


def test_recall_with_now_boosts_engrams_of_the_named_month(plur_home):
    with Memory(plur_home, model="none", fsync=False, date_boost=1.0, index_dates=False) as mem:
        old = mem.learn("We went hiking in the hills with the kids.", created="2023-03-12")
        may = mem.learn("We went hiking by the lake.", created="2023-05-20")
        plain = [h.engram.id for h in mem.recall("hiking with the kids", 2, now="2023-06-14")]
        assert plain[0] == old.id
        hits = mem.recall("hiking with the kids last May", 2, now="2023-06-14")
        assert [h.engram.id for h in hits] == [may.id, old.id] and hits[0].date_match
        # "last May" against another now names May 2022: nothing matches, the order is the plain one
        assert [h.engram.id for h in mem.recall("hiking with the kids last May", 2, now="2022-12-01")] == plain
    with Memory(plur_home, model="none", fsync=False, date_boost=0.0, index_dates=False) as mem:
        assert [h.engram.id for h in mem.recall("hiking with the kids last May", 2, now="2023-06-14")] == plain


def test_reranker_setting_is_off_by_default_and_bad_values_are_one_clear_error(plur_home, tmp_path):
    with Memory(plur_home, model="none", fsync=False) as mem:
        assert mem.settings.reranker == "" and mem.reranker() is None
    with pytest.raises(ModelError, match="neither pinned in models.lock"):
        load_reranker(str(tmp_path / "no-such-model"))


def test_pinned_reranker_refuses_files_that_differ_from_the_lock(tmp_path, monkeypatch):
    pin = reranker_pins()["BAAI/bge-reranker-base"]
    assert len(pin.revision) == 40 and dict(pin.files)["config.json"]
    snap = tmp_path / "hub" / "models--BAAI--bge-reranker-base" / "snapshots" / pin.revision
    snap.mkdir(parents=True)
    for rel, _ in pin.files:
        (snap / rel).write_text("{}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ModelError, match="config.json has sha256"):
        load_reranker("BAAI/bge-reranker-base")
    (snap / "config.json").unlink()
    with pytest.raises(ModelError, match="is missing"):
        load_reranker("BAAI/bge-reranker-base")


def _real_reranker_folder():
    from plur.embed.model_files import hf_cache_dir

    pin = reranker_pins()["BAAI/bge-reranker-base"]
    snap = hf_cache_dir() / "models--BAAI--bge-reranker-base" / "snapshots" / pin.revision
    return snap if (snap / "model.safetensors").is_file() else None


@pytest.mark.skipif(_real_reranker_folder() is None,
                    reason="BAAI/bge-reranker-base weights are not in the Hugging Face cache at the pinned "
                           "revision (python -c \"from huggingface_hub import snapshot_download; "
                           "snapshot_download('BAAI/bge-reranker-base', revision='2cfc18c9...')\")")
def test_real_cross_encoder_puts_the_answer_first(plur_home):
    with Memory(plur_home, model="none", fsync=False, reranker="BAAI/bge-reranker-base", rerank_top_n=5) as mem:
        mem.learn("The capital of France is Paris.")
        mem.learn("France is known for its cheese and wine.")
        mem.learn("Paris Hilton is an American media personality.")
        hits = mem.recall("What is the capital city of France?", 3)
        assert hits[0].engram.statement == "The capital of France is Paris."
        assert dataclasses.asdict(hits[0])["score"] > dataclasses.asdict(hits[-1])["score"]


def test_index_dates_makes_the_date_searchable(plur_home):
    with Memory(plur_home, model="none", fsync=False, date_boost=0.0) as mem:
        may = mem.learn("We went hiking by the lake.", created="2023-05-20")
        mem.learn("We went hiking in the hills.", created="2023-03-12")
        assert mem.recall("hiking May 2023", 1, mode="bm25")[0].engram.id == may.id
        assert mem.recall("hiking on a Saturday", 1, mode="bm25")[0].engram.id == may.id   # 2023-05-20
