"""Tests for plur.index.lexical.BM25Index.

The truth for scores is rank-bm25 0.2.2's ``BM25Okapi`` with its idf replaced by the
Lucene / BM25+ idf ``log(1 + (N - n + 0.5) / (n + 0.5))`` (the one documented in
plur.index.lexical), fed the same tokens. The corpus is the user turns of the LongMemEval-S
sample in ../shared/data (606 turns).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from plur.errors import ValidationError
from plur.index.lexical import BM25Index
from plur.index.tokenize import Tokenizer

from conftest import SHARED as SHARED_DATA  # noqa: E402

DATA = SHARED_DATA / "longmemeval" / "MuhammadNoor7__longmemeval_s__grouped_3items.json"


class LuceneIdfOkapi(BM25Okapi):
    """rank-bm25's Okapi BM25 with the always-positive idf plur documents."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


class Reference:
    """rank-bm25 over the live docs, rebuilt from scratch (no incremental state)."""

    def __init__(self, docs: dict[str, str], tokenizer: Tokenizer, k1: float = 1.5, b: float = 0.75) -> None:
        self.ids = list(docs)
        self.tokenizer = tokenizer
        self.bm25 = LuceneIdfOkapi([tokenizer(docs[i]) for i in self.ids], k1=k1, b=b)

    def scores(self, query: str) -> dict[str, float]:
        """Positive reference scores of every doc for ``query``."""
        scores = self.bm25.get_scores(self.tokenizer(query))
        return {i: float(s) for i, s in zip(self.ids, scores) if s > 0}


def assert_matches_reference(index: BM25Index, docs: dict[str, str], queries: list[str],
                             k1: float = 1.5, b: float = 0.75) -> int:
    """Compare full result lists with the reference; returns how many (query, doc) scores were checked."""
    ref = Reference(docs, index.tokenizer, k1, b)
    checked = 0
    for q in queries:
        expected = ref.scores(q)
        got = index.search(q, k=len(docs) + 1)
        assert {i for i, _ in got} == set(expected), q
        for doc_id, score in got:
            assert abs(score - expected[doc_id]) < 1e-6, (q, doc_id)
        assert all(x[1] >= y[1] for x, y in zip(got, got[1:]))
        checked += len(got)
    return checked


@pytest.fixture(scope="module")
def corpus() -> tuple[dict[str, str], list[str]]:
    """({turn id: user turn}, queries): 606 LongMemEval user turns; 26 questions + 60 turn snippets."""
    items = json.loads(DATA.read_text())
    docs: dict[str, str] = {}
    questions: list[str] = []
    for item in items:
        questions.extend(item["questions"])
        for s, session in enumerate(item["haystack_sessions"]):
            for t, turn in enumerate(session):
                if turn["role"] == "user":
                    docs[f"{item['question_id']}-{s}-{t}"] = turn["content"]
    rng = random.Random(7)
    snippets = []
    for text in rng.sample(sorted(docs.values()), 60):
        words = text.split()
        start = rng.randrange(max(1, len(words) - 8))
        snippets.append(" ".join(words[start : start + rng.randint(2, 8)]))
    return docs, questions + snippets


# ------------------------------------------------------------------ parity
@pytest.mark.parametrize(("k1", "b", "stemming"), [(1.5, 0.75, False), (1.2, 0.3, True), (2.0, 1.0, False)])
def test_scores_match_rank_bm25_on_longmemeval(corpus, k1: float, b: float, stemming: bool) -> None:
    docs, queries = corpus
    index = BM25Index(k1=k1, b=b, tokenizer=Tokenizer(stemming=stemming))
    index.add(list(docs), list(docs.values()))
    assert len(index) == len(docs) == 606
    assert assert_matches_reference(index, docs, queries, k1, b) > 1000


def test_parity_after_incremental_add_remove_readd(corpus) -> None:
    docs, queries = corpus
    ids = list(docs)
    rng = random.Random(11)
    index = BM25Index()
    index.add(ids[:300], [docs[i] for i in ids[:300]])
    for i in ids[300:]:  # one at a time, as Memory.learn does
        index.add([i], [docs[i]])
    live = dict(docs)
    removed = rng.sample(ids, 100)  # ~16%: stays below the compaction threshold
    assert index.remove(removed + ["never-added"]) == 100
    for i in removed:
        del live[i]
    assert index._n_dead > 0  # this scenario must exercise tombstones, not compaction
    changed = rng.sample(sorted(live), 20)  # replace the text of live docs
    readded = removed[:10]  # re-add removed ids with another doc's text
    new_texts = {i: docs[ids[(ids.index(i) + 1) % len(ids)]] for i in changed + readded}
    index.add(list(new_texts), list(new_texts.values()))
    live.update(new_texts)
    assert len(index) == len(live)
    assert set(index.ids()) == set(live)
    assert_matches_reference(index, live, queries)
    for i in removed[10:]:
        assert i not in index
    hits = {doc_id for q in queries for doc_id, _ in index.search(q, k=1000)}
    assert hits.isdisjoint(removed[10:])


def test_parity_after_compaction(corpus) -> None:
    docs, queries = corpus
    ids = list(docs)
    index = BM25Index()
    index.add(ids, list(docs.values()))
    gone = ids[::2]  # 50% removed: compaction runs
    index.remove(gone)
    assert index._n_dead == 0
    live = {i: docs[i] for i in ids[1::2]}
    assert_matches_reference(index, live, queries[:40])
    index.add(gone[:5], [docs[i] for i in gone[:5]])
    live.update({i: docs[i] for i in gone[:5]})
    assert_matches_reference(index, live, queries[:40])


words = st.sampled_from(["apple", "banana", "cherry", "date", "elder", "fig", "the", "!!"])
texts = st.lists(words, max_size=6).map(" ".join)
ops = st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 7), texts), min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_random_edit_sequences_match_a_rebuilt_reference(sequence) -> None:
    index, live = _replay(sequence)
    assert len(index) == len(live)
    _assert_scores(index, live, ["apple", "banana cherry", "fig fig date", "elder apple banana cherry date fig"])


def _replay(sequence, folder: Path | None = None) -> tuple[BM25Index, dict[str, str]]:
    """Apply ``(op, n, text)`` steps (add / remove / save, the last a save and load from ``folder``) to a new
    index; returns it and the live documents a rebuilt reference should hold."""
    index = BM25Index()
    live: dict[str, str] = {}
    for op, n, text in sequence:
        doc_id = f"d{n}"
        if op == "add":
            index.add([doc_id], [text])
            live[doc_id] = text
        elif op == "remove":
            index.remove([doc_id])
            live.pop(doc_id, None)
        else:
            index.save(folder)
            index = BM25Index.load(folder)
    return index, live


def _assert_scores(index: BM25Index, live: dict[str, str], queries: list[str]) -> None:
    if not live or not any(index.tokenizer(t) for t in live.values()):
        assert all(index.search(q, 10) == [] for q in queries)  # avgdl 0: nothing matches, no error
    else:
        assert_matches_reference(index, live, queries)



heavy = st.tuples(st.sampled_from(["apple", "banana", "cherry"]), st.sampled_from([1, 2, 255, 256, 300]))
heavy_texts = st.lists(heavy, max_size=3).map(lambda parts: " ".join(" ".join([w] * n) for w, n in parts))
heavy_ops = st.lists(st.tuples(st.sampled_from(["add", "remove", "save"]), st.integers(0, 5), heavy_texts),
                     min_size=1, max_size=20)


@settings(max_examples=60, deadline=None)
@given(heavy_ops)
def test_one_byte_term_frequencies_widen_past_255_and_score_as_the_reference(tmp_path_factory, sequence) -> None:
    """Issue 30 keeps a term's frequencies in one byte each until one exceeds 255: adds, removes, re-adds,
    compaction and a save/load (lazy CSR postings) in any order must still score exactly as rank-bm25."""
    from plur.index.postings import SMALL_TF_MAX

    index, live = _replay(sequence, tmp_path_factory.mktemp("heavy"))
    for term in list(index._postings):
        slots, tfs = index._postings.peek(term)
        assert len(slots) == len(tfs) and tfs.dtype in (np.uint8, np.int32)
    for _, tfs in index._postings._delta.values():
        assert tfs.typecode in "Bi" and (tfs.typecode == "i" or max(tfs, default=0) <= SMALL_TF_MAX)
    _assert_scores(index, live, ["apple", "banana cherry", "apple apple cherry"])


# -------------------------------------------------------------- edge cases
def small_index(docs: dict[str, str], **kw) -> BM25Index:
    index = BM25Index(**kw)
    index.add(list(docs), list(docs.values()))
    return index


def test_empty_index() -> None:
    index = BM25Index()
    assert len(index) == 0
    assert index.search("anything", 10) == []
    assert "x" not in index


@pytest.mark.parametrize("query", ["", "   ", "the of and to", "!!! ... ???", "🙂"])
def test_queries_without_terms_return_nothing(query: str) -> None:
    assert small_index({"a": "the cat sat on the mat"}).search(query, 10) == []


def test_k_zero_and_k_larger_than_n() -> None:
    index = small_index({"a": "red apple", "b": "green apple", "c": "blue sky"})
    assert index.search("apple", 0) == []
    got = index.search("apple", 100)
    assert sorted(i for i, _ in got) == ["a", "b"]


@pytest.mark.parametrize("k", [-1, 1.5, True])
def test_bad_k_raises(k) -> None:
    with pytest.raises(ValidationError):
        small_index({"a": "x"}).search("x", k)


def test_docs_without_tokens_do_not_divide_by_zero() -> None:
    index = small_index({"emoji": "🙂!!", "blank": " \t\u3000\n"})
    assert index.search("smile", 5) == []
    index.add(["real"], ["a smile"])
    got = index.search("smile", 5)
    assert [i for i, _ in got] == ["real"]
    # avgdl = 1/3, |d| = 1 -> reference value computed by hand
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    assert got[0][1] == pytest.approx(idf * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 3)), abs=1e-12)


def test_word_in_one_of_two_docs_ranks_it_first() -> None:
    index = small_index({"a": "my dog likes walks", "b": "my cat likes naps"})
    got = index.search("dog", 5)
    assert [i for i, _ in got] == ["a"] and got[0][1] > 0
    assert [i for i, _ in index.search("cat naps", 5)] == ["b"]


def test_cjk_phrase_found_by_sub_phrase() -> None:
    index = small_index({"zh": "今天玩成语接龙游戏", "en": "we played a word game today", "ja": "今日は晴れ"})
    assert [i for i, _ in index.search("成语接龙", 5)] == ["zh"]


def test_removed_docs_are_never_returned_and_can_be_readded() -> None:
    index = small_index({f"d{i}": f"shared word{i}" for i in range(10)})
    index.remove(["d3"])
    assert "d3" not in index and len(index) == 9
    assert "d3" not in {i for i, _ in index.search("shared word3", 20)}
    assert index.search("word3", 5) == []
    index.add(["d3"], ["shared word3 again"])
    assert index.search("word3", 5)[0][0] == "d3"
    assert len(index) == 10


def test_readding_an_id_replaces_its_text() -> None:
    index = small_index({"a": "coffee every morning", "b": "tea in the evening"})
    index.add(["a"], ["green tea now"])
    assert len(index) == 2
    assert index.search("coffee", 5) == []
    assert sorted(i for i, _ in index.search("tea", 5)) == ["a", "b"]


def test_repeated_id_within_one_add_keeps_the_last_text() -> None:
    index = BM25Index()
    index.add(["a", "a"], ["first text", "second text"])
    assert len(index) == 1
    assert index.search("first", 5) == [] and index.search("second", 5)[0][0] == "a"


def test_equal_scores_ordered_by_id() -> None:
    index = small_index({"c": "same words", "a": "same words", "b": "same words", "z": "other"})
    got = index.search("same", 2)
    assert [i for i, _ in got] == ["a", "b"]
    assert got[0][1] == got[1][1]


def test_allowed_filter_applies_before_top_k() -> None:
    docs = {f"strong{i}": "mortgage mortgage mortgage rate" for i in range(30)}
    docs["weak"] = "my mortgage application took months and a lot of paperwork to finish"
    index = small_index(docs)
    assert index.search("mortgage", 1)[0][0].startswith("strong")
    assert index.search("mortgage", 1, allowed={"weak"}) == index.search("mortgage", 1, allowed=["weak"])
    assert [i for i, _ in index.search("mortgage", 1, allowed={"weak"})] == ["weak"]
    # a large allowed set (more ids than candidates) takes the other code path
    big = {f"strong{i}" for i in range(0, 30, 2)} | {f"x{i}" for i in range(100)} | {"weak"}
    got = index.search("mortgage", 100, allowed=big)
    assert {i for i, _ in got} == big & set(docs)
    assert index.search("mortgage", 5, allowed=set()) == []
    assert index.search("mortgage", 5, allowed={"unknown"}) == []


def test_add_validates_its_arguments() -> None:
    index = BM25Index()
    with pytest.raises(ValidationError, match="2 ids but 1 texts"):
        index.add(["a", "b"], ["only one"])
    with pytest.raises(ValidationError):
        index.add([1], ["text"])  # type: ignore[list-item]
    assert len(index) == 0


@pytest.mark.parametrize("kw", [{"k1": -0.1}, {"k1": float("nan")}, {"b": 1.5}, {"b": -0.1}])
def test_bad_parameters_raise(kw) -> None:
    with pytest.raises(ValidationError):
        BM25Index(**kw)


def test_changing_k1_b_rescores_without_rebuild(corpus) -> None:
    docs, queries = corpus
    index = small_index(docs)
    index.search(queries[0], 5)  # warm the cached length normalisation
    index.k1, index.b = 0.9, 0.4
    assert_matches_reference(index, docs, queries[:20], k1=0.9, b=0.4)


def test_stemming_index_matches_inflections() -> None:
    docs = {"a": "she was running a marathon", "b": "he reads books"}
    assert small_index(docs).search("runs", 5) == []
    assert [i for i, _ in small_index(docs, tokenizer=Tokenizer(stemming=True)).search("runs", 5)] == ["a"]


# ------------------------------------------------------------ persistence
def test_save_load_round_trip_gives_identical_scores(corpus, tmp_path: Path) -> None:
    docs, queries = corpus
    ids = list(docs)
    index = BM25Index(k1=1.3, b=0.6)
    index.add(ids, list(docs.values()))
    index.remove(ids[:50])  # tombstones below 25%: save must still drop them
    folder = tmp_path / "index" / "bm25"
    index.save(folder)
    assert sorted(p.name for p in folder.iterdir()) == [
        "doc_len.npy", "ids.json", "meta.json", "offsets.npy", "postings_doc.npy", "postings_tf.npy", "vocab.json"
    ]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["n_docs"] == len(docs) - 50 and meta["tokenizer"] == "plur-tok-1"
    loaded = BM25Index.load(folder)
    assert loaded is not None
    assert (loaded.k1, loaded.b, len(loaded)) == (1.3, 0.6, len(index))
    assert loaded.ids() == index.ids()
    for q in queries:
        assert loaded.search(q, 50) == index.search(q, 50)
    loaded.add(["new"], ["a mortgage from Wells Fargo"])  # a loaded index stays incremental
    assert loaded.search("wells fargo mortgage", 1)[0][0] == "new"
    index.save(folder)  # overwriting an existing index works
    assert BM25Index.load(folder, k1=2.0).k1 == 2.0  # type: ignore[union-attr]
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temp folders left


def test_save_load_empty_index(tmp_path: Path) -> None:
    BM25Index().save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert loaded is not None and len(loaded) == 0 and loaded.search("x", 3) == []


def test_load_returns_none_when_missing_or_stale(tmp_path: Path, caplog) -> None:
    assert BM25Index.load(tmp_path / "nothing") is None
    assert "no index" in BM25Index.stale_reason(tmp_path / "nothing")  # type: ignore[operator]
    folder = tmp_path / "bm25"
    small_index({"a": "running shoes"}, tokenizer=Tokenizer(stemming=True)).save(folder)
    assert BM25Index.stale_reason(folder) is None
    assert BM25Index.load(folder).tokenizer == Tokenizer(stemming=True)  # type: ignore[union-attr]
    assert BM25Index.load(folder, tokenizer=Tokenizer()) is None
    assert "plur-tok-1+snowball-en" in BM25Index.stale_reason(folder, Tokenizer())  # type: ignore[operator]
    assert "plur-tok-1+snowball-en" in caplog.text
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "tokenizer": "plur-tok-0+snowball-en"}))
    assert BM25Index.load(folder) is None  # built by an older tokenizer version
    (folder / "meta.json").write_text(json.dumps({**meta, "format_version": 99}))
    assert "v99" in BM25Index.stale_reason(folder)  # type: ignore[operator]
    assert BM25Index.load(folder) is None


def test_load_returns_none_for_damaged_files(tmp_path: Path) -> None:
    folder = tmp_path / "bm25"
    small_index({"a": "one two three", "b": "two three four"}).save(folder)
    (folder / "meta.json").write_text("{not json")
    assert BM25Index.load(folder) is None
    small_index({"a": "one two three", "b": "two three four"}).save(folder)
    np.save(folder / "postings_doc.npy", np.array([0, 1, 7], dtype=np.int32))
    assert BM25Index.load(folder) is None
    small_index({"a": "one two three", "b": "two three four"}).save(folder)
    (folder / "ids.json").write_text('["a"]')
    assert BM25Index.load(folder) is None
    small_index({"a": "one two three", "b": "two three four"}).save(folder)
    (folder / "offsets.npy").write_bytes(b"garbage")
    assert BM25Index.load(folder) is None


def test_concurrent_search_and_add_stay_consistent(corpus) -> None:
    import threading

    docs, queries = corpus
    ids = list(docs)
    index = BM25Index()
    index.add(ids[:100], [docs[i] for i in ids[:100]])
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in ids[100:400]:
                index.add([i], [docs[i]])
                if len(index) % 7 == 0:
                    index.remove([ids[len(index) % 100]])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for j in range(600):
                for doc_id, score in index.search(queries[j % len(queries)], 20):
                    assert score > 0 and isinstance(doc_id, str)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer), threading.Thread(target=reader), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    live = {i: docs[i] for i in index.ids()}
    assert_matches_reference(index, live, queries[:20])


def test_cached_term_impacts_follow_every_change_of_lengths_and_parameters() -> None:
    docs = {f"d{i}": " ".join(["kite"] * (1 + i % 3) + ["hill", f"w{i}"] * (1 + i % 4)) for i in range(40)}
    idx = BM25Index()
    idx.add(list(docs), list(docs.values()))

    def fresh() -> BM25Index:
        f = BM25Index(k1=idx.k1, b=idx.b)
        live = [i for i in docs if i in idx]
        f.add(live, [docs[i] for i in live])
        return f

    for change in (lambda: None, lambda: idx.add(["d40"], [docs.setdefault("d40", "kite kite kite")]),
                   lambda: idx.remove(["d3", "d7"]), lambda: setattr(idx, "k1", 0.9),
                   lambda: setattr(idx, "b", 0.3), lambda: idx.compact()):
        change()
        idx.search("kite hill", 10)  # fills the cache for these terms
        assert idx.search("kite hill", 50) == fresh().search("kite hill", 50)
    assert idx._impacts  # the cache was used
