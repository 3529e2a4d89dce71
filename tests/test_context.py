"""Conversation context in the BM25 leg: a turn's document includes its neighbouring turns.

Real stores on disk, the real BM25 index; the dense leg is off (model "none") except where noted.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from plur.index.context import ConversationContext, conversation_key
from plur.memory import Memory


def _src(session: str, turn: int) -> dict:
    return {"kind": "conversation", "format": "messages", "session": session, "turn": turn, "role": "user"}


def _e(eid: str, statement: str, session="s1", turn=0, scope="global", kind="conversation"):
    source = {"kind": kind, "session": session, "turn": turn}
    return SimpleNamespace(id=eid, statement=statement, scope=scope, source=source, content_hash="h-" + statement)


def test_conversation_key_needs_kind_session_and_a_real_turn():
    assert conversation_key(_e("a", "x", turn=3)) == (("global", "s1"), 3)
    assert conversation_key(_e("a", "x", kind="file")) is None
    assert conversation_key(_e("a", "x", turn=True)) is None
    assert conversation_key(_e("a", "x", turn=-1)) is None
    assert conversation_key(_e("a", "x", session="")) is None
    assert conversation_key(SimpleNamespace(id="a", statement="x", scope="global", source=None)) is None


def test_neighbours_share_session_and_scope_within_the_window():
    ctx = ConversationContext(window=1, own_weight=2)
    assert ctx.put(_e("a", "alpha", turn=0)) == set()
    assert ctx.put(_e("b", "beta", turn=1)) == {"a"}
    assert ctx.put(_e("c", "gamma", turn=2)) == {"b"}                   # a is two turns away
    assert ctx.put(_e("x", "other session", session="s2", turn=1)) == set()
    assert ctx.put(_e("y", "other scope", scope="project:p", turn=1)) == set()
    assert ctx.neighbours("b") == ["a", "c"]
    assert ctx.document("b") == "beta\nbeta\nalpha\ngamma"            # own text twice, then turn order
    sig = ctx.signature("b")
    ctx.put(_e("c", "gamma changed", turn=2))
    assert ctx.signature("b") != sig                                     # a neighbour's edit changes it
    assert ctx.drop("a") == {"b"}
    assert ctx.neighbours("b") == ["c"]
    assert ctx.put(_e("c", "moved", session="s2", turn=2)) == {"b", "x"}  # old and new neighbours
    assert ConversationContext(window=0).put(_e("a", "alpha")) == set()


def test_a_question_echoed_by_one_turn_finds_the_answer_in_the_next(plur_home):
    with Memory(plur_home, model="none", fsync=False) as mem:
        q = mem.learn("Melanie: What did you name your new puppy?", source=_src("s1", 0))
        a = mem.learn("Caroline: We called her Biscuit, she is a golden retriever.", source=_src("s1", 1))
        far = mem.learn("Caroline: The weather was lovely at the lake.", source=_src("s1", 5))
        mem.learn("Jon: I named my shop after my grandmother.", source=_src("s2", 0))
        hits = mem.recall("what is the name of the new puppy", 5, explain=True)
        by_id = {h.engram.id: h for h in hits}
        # the answer shares no word with the question, yet is found through the turn before it
        assert hits[0].engram.id == q.id and a.id in by_id and far.id not in by_id
        assert by_id[a.id].context_matches == ((q.id, ("name", "new", "puppi", "what")),)  # stemmed words of turn 0
        assert by_id[q.id].context_matches == ()                                   # matched on its own words
        assert by_id[a.id].to_dict()["context_matches"] == {q.id: ["name", "new", "puppi", "what"]}
        legs = mem.recall_legs("what is the name of the new puppy", 5)
        assert {h.engram.id: h.context_matches for h in legs["bm25"]}[a.id]      # the playground shows it too
        # the answer's own words weigh double: it outranks the echo for a query about the answer
        assert mem.recall("golden retriever puppy name", 2, mode="bm25")[0].engram.id == a.id
    with Memory(plur_home, model="none", fsync=False, context_window=0) as mem:
        hits = mem.recall("what is the name of the new puppy", 5, explain=True)
        assert a.id not in {h.engram.id for h in hits}                           # bare turns: not found
        assert all(h.context_matches == () for h in hits)


def test_explain_gives_the_neighbouring_turn_reason_through_the_service_too(plur_home):
    """``plur recall --explain`` prints "via neighbouring turn ..." in-process; through the service it printed
    nothing of the kind (the request carried no explain, and the answer's context_matches were not read back)."""
    with Memory(plur_home, model="none", fsync=False) as mem:
        q = mem.learn("Caroline: I got a new puppy last week, guess the name!", source=_src("s1", 0))
        mem.learn("Caroline: We called her Biscuit, she is a golden retriever.", source=_src("s1", 1))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))    # the service runs this checkout's plur
    env = {**os.environ, "PLUR_MODEL": "none", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)}

    def plur(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "plur", "--home", str(plur_home), *args], capture_output=True,
                              text=True, env=env, timeout=240)

    ask = ("-v", "recall", "what is the name of the new puppy", "--mode", "bm25", "--explain")
    alone = plur(*ask)
    assert alone.returncode == 0 and "in-process" in alone.stderr, alone.stderr
    assert f"via neighbouring turn {q.id}: name, new, puppi" in alone.stdout
    assert plur("service", "start", "--port", "0").returncode == 0
    try:
        served = plur(*ask)
        assert served.returncode == 0 and "in-process" not in served.stderr, served.stderr
        assert served.stdout == alone.stdout
    finally:
        plur("service", "stop")


def test_index_updates_touch_only_the_affected_neighbours(plur_home):
    with Memory(plur_home, model="none", fsync=False) as mem:
        turns = [mem.learn(f"turn {i} word{i}", source=_src("s1", i)) for i in range(8)]
        other = mem.learn("unrelated note about word3")
        idx = mem._index()
        before = dict(idx.lexical_hashes)
        new = mem.learn("turn 3b lighthouse", source=_src("s1", 3))   # lands at turn 3 (two engrams there)
        touched = {i for i, h in idx.lexical_hashes.items() if before.get(i) != h}
        assert touched == {new.id} | {turns[i].id for i in (1, 2, 3, 4, 5)}
        assert other.id not in touched
        assert {h.engram.id for h in mem.recall("lighthouse", 10, mode="bm25")} == \
            {new.id} | {turns[i].id for i in (1, 2, 3, 4, 5)}
        # change a turn: only its window is re-indexed
        before = dict(idx.lexical_hashes)
        mem.update(turns[6].id, statement="turn 6 changed harbour")
        touched = {i for i, h in idx.lexical_hashes.items() if before.get(i) != h}
        assert touched == {turns[i].id for i in (4, 5, 6, 7)}
        assert turns[4].id in {h.engram.id for h in mem.recall("harbour", 10, mode="bm25")}
        # remove a turn: its words leave the neighbours' documents
        mem.forget(new.id)
        assert mem.recall("lighthouse", 10, mode="bm25") == []
        saved = dict(idx.lexical_hashes)
    # a reopen finds the saved index in step: nothing to re-index
    with Memory(plur_home, model="none", fsync=False) as mem:
        idx = mem._index()
        assert idx.lexical_hashes == saved
        assert mem.recall("harbour", 10, mode="bm25")
    # a changed window re-indexes conversation turns, leaves plain engrams alone
    with Memory(plur_home, model="none", fsync=False, context_window=1) as mem:
        idx = mem._index()
        changed = {i for i, h in idx.lexical_hashes.items() if saved.get(i) != h}
        assert changed == {t.id for t in turns}
        assert turns[4].id not in {h.engram.id for h in mem.recall("harbour", 10, mode="bm25")}


def test_a_hand_edit_of_a_neighbour_is_picked_up_on_reopen(plur_home):
    with Memory(plur_home, model="none", fsync=False) as mem:
        a = mem.learn("first turn", source=_src("s1", 0))
        b = mem.learn("second turn", source=_src("s1", 1))
        mem.recall("turn", 5)
    path = next(p for p in (plur_home / "engrams").rglob("*.yaml") if b.id in p.read_text())
    path.write_text(path.read_text().replace("second turn", "second turn about volcanoes"))
    with Memory(plur_home, model="none", fsync=False) as mem:
        hits = mem.recall("volcanoes", 5, mode="bm25", explain=True)
        assert {h.engram.id for h in hits} == {a.id, b.id}
        assert dict((h.engram.id, h.context_matches) for h in hits)[a.id] == ((b.id, ("volcano",)),)


def test_dense_leg_embeds_the_bare_turn(plur_home, embedder):
    with Memory(plur_home, embedder=embedder, fsync=False) as mem:
        a = mem.learn("What did you name your puppy?", source=_src("s1", 0))
        mem.learn("We called her Biscuit.", source=_src("s1", 1))
        mem.recall("puppy", 5)
        idx = mem._index()
        vec = embedder.embed_documents(["What did you name your puppy?"])[0]
        (top_id, cosine), *_ = idx.dense.search(vec, 1)
        assert top_id == a.id and cosine == pytest.approx(1.0, abs=1e-4)


def _reference(live: dict, window: int, own_weight: int, eid: str) -> tuple[list[str], str, str]:
    """(neighbours, document, own key) of ``eid`` recomputed from scratch: ``live`` is id -> (engram, own
    suffix, key suffix) in the order the engrams were put, which orders engrams sharing a turn."""
    e, own_suffix, key_suffix = live[eid]
    (key, turn) = conversation_key(e)
    near = [i for t in range(turn - window, turn + window + 1)
            for i, (o, _, _) in live.items() if i != eid and conversation_key(o) == (key, t)]
    doc = "\n".join([e.statement + own_suffix] * own_weight + [live[i][0].statement for i in near])
    return near, doc, e.content_hash + key_suffix


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.booleans(), st.sampled_from(["s1", "s2"]),
                          st.integers(0, 4), st.sampled_from(["", "\nmay"]), st.integers(0, 3)), max_size=40),
       st.integers(1, 2), st.integers(1, 2))
@example([("a", False, "s1", 0, "", 0), ("a", True, "s1", 0, "", 1), ("b", True, "s1", 0, "", 0),
          ("c", True, "s1", 0, "", 0), ("a", True, "s1", 0, "", 1)], 1, 1)
def test_puts_and_drops_leave_the_documents_a_fresh_computation_gives(ops, window, own_weight):
    """Issue 30 stores one compact record per engram; every answer must equal the naive recomputation,
    turns shared by several engrams and moves between sessions included."""
    ctx = ConversationContext(window=window, own_weight=own_weight)
    live: dict = {}
    for eid, put, session, turn, suffix, text in ops:
        if put:
            e = _e(eid, f"text {eid} {text}", session=session, turn=turn)
            ctx.put(e, suffix, suffix.replace("\n", "@"))
            record = (e, suffix, suffix.replace("\n", "@"))
            was = live.get(eid)
            if was is not None and (was[0].statement, was[0].source, was[1]) == (e.statement, e.source, suffix):
                continue  # put again as recorded: a no-op, it keeps its place among its turn's engrams
            live.pop(eid, None)
            live[eid] = record
        else:
            ctx.drop(eid)
            live.pop(eid, None)
    for eid in "abcdef":
        assert (eid in ctx) == (eid in live)
        if eid not in live:
            continue
        near, doc, own_key = _reference(live, window, own_weight, eid)
        assert ctx.neighbours(eid) == near
        assert ctx.document(eid) == doc
        if not near:
            assert ctx.signature(eid) == own_key
        else:
            h = hashlib.sha256(f"ctx{window}x{own_weight}:{own_key}".encode())
            for i in near:
                h.update(b"|" + live[i][0].content_hash.encode())
            assert ctx.signature(eid) == "ctx:" + h.hexdigest()[:32]


def test_putting_an_engram_again_as_recorded_keeps_its_place_among_its_turns_engrams():
    """Hypothesis found it (a, b, c put at one turn, then a put again unchanged): the put is a no-op, so b's
    neighbours stay [a, c], the order a fresh computation over the engrams as recorded gives."""
    ctx = ConversationContext(window=1, own_weight=1)
    engrams = {i: _e(i, f"text {i}", session="s1", turn=0) for i in "abc"}
    for i in "abc":
        ctx.put(engrams[i])
    assert ctx.put(engrams["a"]) == set()
    assert ctx.neighbours("b") == ["a", "c"] and ctx.neighbours("c") == ["a", "b"]
    moved = _e("a", "text a changed", session="s1", turn=0)
    assert ctx.put(moved) == {"b", "c"}
    assert ctx.neighbours("b") == ["c", "a"]


def test_a_bulk_build_indexes_each_document_as_its_text_would(plur_home):
    """The BM25 leg built from pieces tokenized once per batch (IndexSet._batch_codes) holds the same postings
    and lengths as one built from each engram's whole document text, plain engrams and shared turns included."""
    from plur.index.lexical import BM25Index

    with Memory(plur_home, model="none", fsync=False) as mem:
        for s in range(3):
            for t in range(7):
                mem.learn(f"Speaker{t % 2}: turn {t} of session {s}, café 東京 word{t * s} and more",
                          source=_src(f"s{s}", t))
        mem.learn("a shared turn index", source=_src("s1", 3))
        mem.learn("plain note without provenance, 2024-05-01")
        mem.reindex(progress=False)
        idx = mem._index()
        engrams = list(mem._by_id().values())
        ref = BM25Index(tokenizer=idx.tokenizer)
        ref.add([e.id for e in engrams], [idx._document(e) for e in engrams])
        assert len(ref) == len(idx.lexical) == len(engrams)
        for e in engrams:
            assert ref._dl[ref._slot[e.id]] == idx.lexical._dl[idx.lexical._slot[e.id]], e.statement
        for q in ("turn 3 session 1", "café", "東京 word4", "speaker1 more", "plain 2024", "shared index"):
            assert idx.lexical.search(q, 30) == ref.search(q, 30), q
