"""An interrupted index build saves what it embedded and a later reindex resumes from there (issue 30).

Real store and the real model (the session's all-MiniLM-L6-v2); the interrupt is a KeyboardInterrupt
raised by the embedding step of the third batch, as Ctrl-C would be.
"""

from __future__ import annotations

import os

import pytest

from plur.index import indexes as indexes_module
from plur.memory import Memory

N = 700  # three batches of 256 (embed_batch_size 8 -> max(256, 64))


def _learn(mem: Memory) -> None:
    mem.learn_many({"statement": f"note {i}: the {['red', 'green', 'blue'][i % 3]} kite flew over hill {i}",
                    "source": {"kind": "conversation", "format": "messages", "session": f"s{i // 20}",
                               "turn": i % 20}} for i in range(N))


@pytest.mark.parametrize("pipelined", [False, True])
def test_an_interrupted_reindex_resumes_without_redoing_saved_work(plur_home, embedder, monkeypatch,
                                                                    pipelined) -> None:
    """``pipelined``: each batch's insert runs on the worker thread while the next batch is embedded (a queue
    of 1,000 or more, :mod:`plur.index.dense_fill`); the batch in flight when Ctrl-C comes is saved too."""
    from plur.embed.models_lock import PACKAGED_MODEL
    from plur.index import dense_fill

    monkeypatch.setattr(dense_fill, "PIPELINE_MIN", 1 if pipelined else 10**9)

    mem = Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, embed_batch_size=8)
    _learn(mem)
    seen: list[int] = []
    real = indexes_module.embed_engrams

    def interrupting(emb, engrams, settings):
        seen.append(len(engrams))
        if len(seen) == 3:
            raise KeyboardInterrupt
        return real(emb, engrams, settings)

    monkeypatch.setattr(indexes_module, "embed_engrams", interrupting)
    with pytest.raises(KeyboardInterrupt):
        mem.reindex(progress=False)
    assert seen == [256, 256, 188]
    marker = plur_home / "index" / "reindexing.json"
    assert marker.is_file()
    mem.close()

    counted: list[int] = []
    monkeypatch.setattr(indexes_module, "embed_engrams",
                        lambda emb, engrams, settings: (counted.append(len(engrams)), real(emb, engrams, settings))[1])
    again = Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, embed_batch_size=8)
    out = again.reindex(progress=False)
    assert counted == [N - 512] and out["embedded"] == N - 512  # only the batch that was cut off
    assert not marker.exists()
    idx = again._indexes
    assert len(idx.dense) == N and idx.pending_dense == 0
    hit = again.recall("which kite flew over hill 650", k=3, mode="dense", record=False)
    assert hit and any("hill 650" in h.engram.statement for h in hit)
    counted.clear()
    again.reindex(progress=False)  # no interrupted build left: a full rebuild
    assert sum(counted) == N
    again.close()


def test_a_reindex_keeps_the_stores_manifest_so_the_next_open_reads_no_engram_file(plur_home, embedder,
                                                                                    monkeypatch) -> None:
    """A reindex removed all of ``<home>/index``, the store's manifest and writer journal with it: the next process
    (the service started after ``plur reindex``) read and parsed every engram file again (issue 49)."""
    from plur.embed.models_lock import PACKAGED_MODEL
    from plur.store.mirror import FolderMirror

    mem = Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL)
    mem.learn_many({"statement": f"note {i}: the kite flew over hill {i}"} for i in range(40))
    mem.close()
    for f in (plur_home / "engrams").rglob("*.yaml"):  # not written in the last 2 s: the manifest vouches for them
        os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns - 3_600 * 10**9))
    (plur_home / "index" / "manifest-store.json").unlink(missing_ok=True)
    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL) as reader:  # writes the manifest, on a thread
        assert reader.store.count() == 40                                         # of its own: close waits for it
    store_files = {p.name for p in (plur_home / "index").iterdir()} & {"manifest-store.json", "store-journal"}
    assert "manifest-store.json" in store_files
    mem = Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL)
    mem.reindex(progress=False)
    mem.close()
    assert store_files <= {p.name for p in (plur_home / "index").iterdir()}
    reads: list[str] = []
    real = FolderMirror._read_file
    monkeypatch.setattr(FolderMirror, "_read_file", lambda self, name: (reads.append(name), real(self, name))[1])
    again = Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL)
    assert again.store.count() == 40 and reads == []
    assert again.recall("which kite flew over hill 7", k=3, record=False)
    again.close()
