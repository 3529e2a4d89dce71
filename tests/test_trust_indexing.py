"""No single engram, and no stream of writers, makes a recall wait: bounded embedding per engram and
per recall (the rest found by BM25 meanwhile)."""

from __future__ import annotations

from pathlib import Path

from conftest import PACKAGED_MODEL

from plur.index.catchup import queued
from plur.memory import Memory


def test_a_huge_statement_embeds_at_most_max_embed_chunks(plur_home: Path, embedder) -> None:
    words = " ".join(f"filler{i % 97} text" for i in range(12000))  # ~150 KB: hundreds of model windows
    statement = words + " the zebra password is quokka."
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, max_embed_chunks=4) as mem:
        e = mem.learn(statement)
        mem.learn("The dog is Rex.")
        mem.recall("dog", k=1, mode="dense")
        emb = mem.model_resolution().embedder
        rows = emb.cache.count(emb.identity)
        assert rows <= 4 + 1 + 1, rows                    # 4 chunks of the huge one + the dog (+ nothing else)
        hits = mem.recall("quokka zebra password", k=1, mode="hybrid")
        assert hits[0].engram.id == e.id                  # the text past the embedded chunks: found by BM25


def test_a_recall_embeds_at_most_recall_embed_batch_and_bm25_finds_the_rest(plur_home: Path, embedder) -> None:
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL) as mem:
        mem.learn("The dog is Rex.")
        mem.recall("dog")                                 # indexes open and caught up
    with Memory(plur_home, model="none") as writer:       # another process's stream of writes
        writer.learn_many({"statement": f"note number {i} about topic{i}"} for i in range(150))
        marker = writer.learn("The quokka lives on Rottnest island.")
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, recall_embed_batch=20) as mem:
        hits = mem.recall("quokka Rottnest", k=3)
        assert marker.id in [h.engram.id for h in hits]   # found (BM25) though not embedded yet
        assert mem.recall("quokka Rottnest", k=1, mode="bm25")[0].engram.id == marker.id
        assert mem.catchup.running or queued(mem._indexes) < 151   # a background thread took the backlog
        assert mem.catchup.wait(timeout_s=300)
        assert queued(mem._indexes) == 0                  # caught up while recalls kept answering
        assert mem.recall("island animal quokka", k=1, mode="dense")[0].engram.id == marker.id


def test_catch_up_now_embeds_the_whole_queue_even_while_the_background_mode_runs(plur_home: Path, embedder) -> None:
    """One catch-up mechanism, two modes: a recall hands a long queue to the background thread (bounded),
    ``Memory.catch_up`` (the CLI's "now" mode) embeds all of it before it returns, thread or no thread."""
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL) as mem:
        mem.learn("The dog is Rex.")
        mem.recall("dog")
    with Memory(plur_home, model="none") as writer:
        writer.learn_many({"statement": f"note number {i} about topic{i}"} for i in range(120))
        marker = writer.learn("The quokka lives on Rottnest island.")
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, recall_embed_batch=10) as mem:
        mem.recall("quokka Rottnest", k=1)                # bounded mode: the backlog goes to the thread
        out = mem.catch_up(progress=False)                # now mode: everything, before returning
        assert queued(mem._indexes) == 0
        assert out["embedded"] <= 122
        assert mem.catchup.wait(timeout_s=300)
        assert queued(mem._indexes) == 0
        assert mem._indexes.dense_hashes.keys() >= {marker.id}
        assert mem.recall("island animal quokka", k=1, mode="dense")[0].engram.id == marker.id


def test_changing_embed_chunk_tokens_rechunks_the_saved_dense_index(plur_home: Path, embedder) -> None:
    long_text = " ".join(f"Entry {i}: the allotment gate code changed again this week." for i in range(70))
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, embed_chunk_tokens=0) as mem:
        e = mem.learn(long_text)
        mem.recall("gate code", k=1, mode="dense")
        at_limit = mem._index().dense.vector_count
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, embed_chunk_tokens=64) as mem:
        assert e.id not in mem._index().dense_hashes               # other chunking: the saved vectors are dropped
        hits = mem.recall("gate code", k=1, mode="dense")
        assert hits[0].engram.id == e.id
        small = mem._index().dense.vector_count
        assert small > at_limit >= 2
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, embed_chunk_tokens=64) as mem:
        assert e.id in mem._index().dense_hashes                   # same chunking: the saved index is kept
        assert mem._index().dense.vector_count == small


class _GatedLock:
    """The catch-up's model lock, held shut until ``gate`` opens: whoever takes it waits (issue 49)."""

    def __init__(self, inner, gate, reached) -> None:
        self.inner, self.gate, self.reached = inner, gate, reached

    def __enter__(self):
        self.reached.set()
        assert self.gate.wait(300), "the gate never opened"
        return self.inner.__enter__()

    def __exit__(self, *exc):
        return self.inner.__exit__(*exc)


def test_a_recall_among_a_stream_of_writes_does_not_wait_for_their_embedding(plur_home: Path, embedder) -> None:
    """Issue 49 (recall p99 under 4 writers): a recall that meets new engrams again and again (another process
    learning all the time) hands even a short queue to the background thread and takes no model lock for its
    query, so it answers while a catch-up is pending (BM25 finds the new engram); after a quiet spell the first
    short queue is still embedded by the recall itself (issue 27)."""
    import threading

    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL) as mem:
        mem.learn("The dog is Rex.")
        mem.recall("dog")                                     # indexes open and caught up
        mem.catchup.stream_s = 3600.0                         # every later queue counts as the same stream
        with Memory(plur_home, model="none") as writer:
            first = writer.learn("The cat is called Miso.")
        mem.recall("cat")                                     # the first queue after a quiet spell: embedded now
        assert queued(mem._indexes) == 0 and first.id in mem._indexes.dense_hashes
        gate, reached, answered = threading.Event(), threading.Event(), threading.Event()
        mem.catchup.embed_lock = _GatedLock(mem.catchup.embed_lock, gate, reached)
        with Memory(plur_home, model="none") as writer:
            marker = writer.learn("The quokka lives on Rottnest island.")
        got: list = []

        def recall() -> None:
            got.extend(mem.recall("quokka Rottnest", k=3))
            answered.set()

        t = threading.Thread(target=recall, daemon=True)
        t.start()
        try:
            assert answered.wait(120), "the recall waited for the pending catch-up (or for the model lock)"
            assert marker.id in [h.engram.id for h in got]   # found by BM25 meanwhile
            assert reached.wait(120)                          # the background thread has the queue
            assert queued(mem._indexes) == 1
        finally:
            gate.set()
        t.join(120)
        assert mem.catchup.wait(timeout_s=300) and queued(mem._indexes) == 0
        assert mem.recall("island animal quokka", k=1, mode="dense")[0].engram.id == marker.id


def test_a_query_asked_before_does_not_queue_on_the_model_thread(plur_home: Path, embedder) -> None:
    """Issue 49 (recall p99 under 4 writers): a query whose vector the embedder already holds is taken on the
    recall's own thread, not queued on the model thread behind a catch-up batch in flight there."""
    import threading

    from plur.embed import model_thread

    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL) as mem:
        dog = mem.learn("The dog is Rex.")
        assert mem.recall("dog called Rex", k=1, mode="dense")[0].engram.id == dog.id   # the query is embedded
        gate, busy, answered = threading.Event(), threading.Event(), threading.Event()
        model_thread.submit(lambda: (busy.set(), gate.wait(300)))   # a long batch holds the model thread
        got: list = []

        def recall() -> None:
            got.extend(mem.recall("dog called Rex", k=1, mode="dense"))
            answered.set()

        t = threading.Thread(target=recall, daemon=True)
        try:
            assert busy.wait(120)
            t.start()
            assert answered.wait(120), "the recall queued its known query behind the model thread's work"
            assert got[0].engram.id == dog.id
        finally:
            gate.set()
        t.join(120)
