"""The bulk BM25 build (IndexSet.add -> TermCoder -> BM25Index.add_coded) against an index built engram by engram.

A reindex codes each document's pieces as term ids and counts a batch's postings with numpy (issue 49); these tests
check that it holds the same postings and lengths, and ranks and scores the same, as documents added one at a time
from their whole text (the per-document path), on LoCoMo's real turns with conversation context and dates.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np
import pytest

from plur import Memory
from plur.index import indexes
from plur.index.lexical import BM25Index
from plur.index.tokenize import TermCoder, Tokenizer

from conftest import SHARED


def _postings(index: BM25Index) -> dict[str, dict[str, int]]:
    """id -> {term: tf} from the index's CSR export (slot numbering left out)."""
    ids, _, vocab, offsets, slots, tfs = index._export()
    out: dict[str, dict[str, int]] = {i: {} for i in ids}
    for j, term in enumerate(vocab):
        for s, tf in zip(slots[offsets[j]:offsets[j + 1]].tolist(), tfs[offsets[j]:offsets[j + 1]].tolist()):
            out[ids[s]][term] = tf
    return out


def _lengths(index: BM25Index) -> dict[str, float]:
    return {i: float(index._dl[s]) for i, s in index._slot.items()}


@pytest.fixture(scope="module")
def locomo() -> tuple[list[tuple[str, int, str, str]], list[str]]:
    """([(session, turn, "Speaker: text", ISO date)], questions) of LoCoMo's first conversation, sessions 1-4."""
    sample = json.loads((SHARED / "locomo" / "locomo10.json").read_text(encoding="utf-8"))[0]
    conv = sample["conversation"]
    turns = []
    for n in range(1, 5):
        when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
        for t, turn in enumerate(conv[f"session_{n}"]):
            turns.append((f"session_{n}", t, f"{turn['speaker']}: {turn['text']}", when.isoformat()))
    return turns, [q["question"] for q in sample["qa"][:40]]


@pytest.mark.parametrize("batches", [(1000, 4000), (5, 7)])  # (ADD_BATCH, POSTINGS_BATCH): one batch; many
def test_a_reindex_equals_an_index_built_engram_by_engram(plur_home, monkeypatch, locomo, batches) -> None:
    monkeypatch.setattr(indexes, "ADD_BATCH", batches[0])
    monkeypatch.setattr(indexes, "POSTINGS_BATCH", batches[1])
    turns, questions = locomo
    with Memory(plur_home, model="none", fsync=False) as mem:
        for session, t, text, when in turns:
            mem.learn(text, source={"kind": "conversation", "session": session, "turn": t}, created=when)
        mem.learn(turns[3][2] + " (the same turn told twice)",
                  source={"kind": "conversation", "session": "session_1", "turn": 3}, created=turns[3][3])
        mem.learn("a plain note " + " ".join(["again"] * 300))  # a term frequency past one byte
        mem.reindex(progress=False)
        idx = mem._index()
        engrams = list(mem._by_id().values())
        ref = BM25Index(tokenizer=idx.tokenizer)
        for e in engrams:  # one at a time, each from its whole document text
            ref.add([e.id], [idx._document(e)])
        assert len(idx.lexical) == len(ref) == len(turns) + 2
        assert _postings(idx.lexical) == _postings(ref)
        assert _lengths(idx.lexical) == _lengths(ref)
        for q in questions + ["again", "Caroline Melanie"]:
            assert idx.lexical.search(q, 10) == ref.search(q, 10), q


def test_add_coded_keeps_the_last_text_of_a_repeated_id_and_replaces_a_present_one() -> None:
    tok = Tokenizer(stemming=True)
    coder = TermCoder(tok)
    texts = {"a": "running dogs bark", "b": "cats run", "c": "the dog runs home"}
    bulk, ref = BM25Index(tokenizer=tok), BM25Index(tokenizer=tok)
    bulk.add_coded(["a", "b"], [coder(texts["a"]), coder(texts["b"])], coder.vocab)
    ref.add(["a", "b"], [texts["a"], texts["b"]])
    bulk.add_coded(["b", "c", "b"], [coder("x y"), coder(texts["c"]), coder("dog dog")], coder.vocab)
    ref.add(["b", "c", "b"], ["x y", texts["c"], "dog dog"])
    assert _postings(bulk) == _postings(ref) and _lengths(bulk) == _lengths(ref)
    assert bulk.search("dog run", 5) == ref.search("dog run", 5)
    bulk.add_coded(["e"], [np.zeros(0, dtype=np.int32)], coder.vocab)  # a document without terms
    assert len(bulk) == 4 and _lengths(bulk)["e"] == 0.0


def test_term_coder_codes_what_the_tokenizer_gives() -> None:
    for stemming in (False, True):
        tok = Tokenizer(stemming=stemming)
        coder = TermCoder(tok)
        for text in ("The user's cats aren't running, 成语接龙!", "running runs ran", "", "🙂!!", "cats"):
            assert [coder.vocab[c] for c in coder(text).tolist()] == tok(text)
