"""A reindex fills the dense leg while the lexical leg is built on another thread (plur.index.rebuild, issue 49).

Real store and the real model (the session's all-MiniLM-L6-v2), 700 conversation turns; the lexical leg's bulk add
is held until the dense leg's first batch is embedded, so the overlap is observed, not timed.
"""

from __future__ import annotations

import threading

from plur.embed.models_lock import PACKAGED_MODEL
from plur.index import dense_fill, indexes as indexes_module
from plur.index.indexes import IndexSet
from plur.memory import Memory, indexing

N = 700


def _learn(mem: Memory) -> None:
    mem.learn_many({"statement": f"note {i}: the {['red', 'green', 'blue'][i % 3]} kite flew over hill {i}",
                    "source": {"kind": "conversation", "format": "messages", "session": f"s{i // 20}",
                               "turn": i % 20, "speaker": ["Ann", "Bo"][i % 2]}} for i in range(N))


def _state(mem: Memory) -> tuple:
    idx = mem._indexes
    hits = [[(h.engram.id, round(h.score, 6)) for h in mem.recall(q, k=5, mode="bm25", record=False)]
            for q in ("red kite hill 42", "Bo green", "which kite flew over hill 650")]
    return dict(idx.lexical_hashes), dict(idx.dense_hashes), idx.dense.ids(), idx.dense.vector_count, hits


def test_a_reindex_embeds_while_the_lexical_leg_is_built_and_builds_the_same_indexes(plur_home, embedder,
                                                                                    monkeypatch) -> None:
    monkeypatch.setattr(dense_fill, "PIPELINE_MIN", 1)
    monkeypatch.setattr(indexing, "REINDEX_CHECKPOINT_S", 0.0)  # a save after every batch: each waits for the lexical leg
    mem = Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, embed_batch_size=8)
    _learn(mem)
    first_batch = threading.Event()
    lexical_at_first_batch: list[int] = []
    manifests: list[int] = []
    real_embed, real_add, real_write = indexes_module.embed_engrams, IndexSet.add, indexes_module._atomic_write_json

    def embed(emb, engrams, settings):
        if not first_batch.is_set():
            lexical_at_first_batch.append(len(mem._indexes.lexical_hashes))
            first_batch.set()
        return real_embed(emb, engrams, settings)

    def add(self, *args, **kwargs):  # the lexical leg's bulk add waits for the dense leg's first batch (10 s at most)
        first_batch.wait(10)
        return real_add(self, *args, **kwargs)

    def write(path, data):
        if path.name == "manifest.json":
            manifests.append(len(data["lexical"]))
        return real_write(path, data)

    monkeypatch.setattr(indexes_module, "embed_engrams", embed)
    monkeypatch.setattr(IndexSet, "add", add)
    monkeypatch.setattr(indexes_module, "_atomic_write_json", write)
    assert mem.reindex(progress=False) == {"engrams": N, "embedded": N}
    assert lexical_at_first_batch == [0]  # the dense leg began before any BM25 document was indexed
    assert len(manifests) >= 3 and set(manifests) == {N}  # every save, checkpoints too, holds the whole lexical leg
    overlapped = _state(mem)
    assert len(overlapped[0]) == N and len(overlapped[1]) == N and mem._indexes.pending_dense == 0

    monkeypatch.setattr(dense_fill, "PIPELINE_MIN", 10**9)  # one leg after the other, as before
    monkeypatch.setattr(IndexSet, "add", real_add)
    mem.reindex(progress=False)
    assert _state(mem) == overlapped
    mem.close()
