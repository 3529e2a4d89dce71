"""The store's compact in-memory forms (issue 30) behave as the plain forms they replaced."""

from __future__ import annotations

from pathlib import Path

from plur.store.active_texts import ActiveTexts
from plur.store.engram import Engram
from plur.store.store import EngramStore


def test_active_texts_finds_ids_by_scope_and_hash_and_forgets_them() -> None:
    a = Engram.create("the sky is blue", scope="global")
    b = Engram.create("The  sky is BLUE", scope="global")          # same content hash, same scope
    c = Engram.create("the sky is blue", scope="project:x")        # same hash, other scope
    r = Engram.create("the sky is blue", scope="global", status="retired")
    by_id = {e.id: e for e in (a, b, c, r)}
    t = ActiveTexts()
    for e in by_id.values():
        t.add(e)
    assert sorted(t.ids("global", a.content_hash, by_id)) == sorted([a.id, b.id])
    assert t.ids("project:x", a.content_hash, by_id) == [c.id]
    assert t.ids("global", "sha256:0000000000000000", by_id) == []
    t.discard(r)                                                    # never recorded: nothing happens
    t.discard(a)
    assert t.ids("global", a.content_hash, by_id) == [b.id]
    t.discard(b)
    t.discard(c)
    assert t.ids("project:x", a.content_hash, by_id) == [] and len(t) == 0


def test_active_texts_checks_the_engram_it_is_given_now() -> None:
    a = Engram.create("a fact", scope="global")
    t = ActiveTexts()
    t.add(a)
    retired = a.replace(status="retired")
    assert t.ids("global", a.content_hash, {a.id: retired}) == []   # retired since: not a duplicate


def test_the_store_still_merges_duplicates_and_refuses_duplicate_edits(tmp_path: Path) -> None:
    store = EngramStore(tmp_path, fsync=False)
    first, made = store.add(Engram.create("Tea at five", tags=("a",)))
    again, made_again = store.add(Engram.create("tea at  FIVE", tags=("b",)))
    other, _ = store.add(Engram.create("tea at five", scope="project:p"))
    assert made and not made_again and again.id == first.id and again.tags == ("a", "b")
    assert other.id != first.id
    assert store.find_duplicate("TEA at five").id == first.id
    store.delete(first.id)
    assert store.find_duplicate("tea at five") is None
    assert store.find_duplicate("tea at five", "project:p").id == other.id


def test_engrams_without_unknown_keys_share_one_empty_extra_nobody_can_change() -> None:
    import copy
    import pickle

    import pytest

    from plur.store.frozen import NO_EXTRA

    a, b = Engram.create("one"), Engram.from_dict(Engram.create("two").to_dict())
    c = Engram.from_manifest(Engram.create("three").to_dict(), Engram.create("three").content_hash)
    assert a.extra is b.extra is c.extra is NO_EXTRA and a.extra == {} and not a.extra
    with pytest.raises(TypeError):
        a.extra["leak"] = 1  # type: ignore[index]
    assert dict(b.extra) == {} and len(NO_EXTRA) == 0
    assert pickle.loads(pickle.dumps(a)) == a and pickle.loads(pickle.dumps(a)).extra is NO_EXTRA
    assert copy.deepcopy(a).extra is NO_EXTRA
    kept = Engram.from_dict({**a.to_dict(), "plur": {"x": 1}})
    assert kept.extra == {"plur": {"x": 1}} and a.extra == {}      # unknown keys still kept, apart


def test_engrams_are_slotted_and_still_replace_compare_and_hash() -> None:
    import dataclasses

    e = Engram.create("slots", tags=("t",), source={"kind": "conversation", "turn": 1})
    assert not hasattr(e, "__dict__")
    f = e.replace(statement="other")
    assert f.statement == "other" and f.id == e.id and e.statement == "slots"
    assert dataclasses.replace(e) == e and hash(dataclasses.replace(e)) == hash(e)
    with __import__("pytest").raises(dataclasses.FrozenInstanceError):
        e.statement = "x"  # type: ignore[misc]


def test_file_entries_keep_their_key_and_sha_and_a_damaged_sha_drops_the_row(tmp_path: Path) -> None:
    import json

    from plur.store.manifest import RACY_WINDOW_NS, FileEntry, file_sha, load_manifest, root_text, save_manifest

    e = Engram.create("entry")
    sha = file_sha(b"bytes")
    ent = FileEntry((10**18, 300, 2**40), 10**18 + RACY_WINDOW_NS + 1, sha, e)
    assert ent.key == (10**18, 300, 2**40) and ent.sha == sha and not ent.racy()
    ent.key = (10**18 + 5, 301, 7)
    assert (ent.mtime_ns, ent.size, ent.ino) == (10**18 + 5, 301, 7) and ent.racy()
    path, root = tmp_path / "m.json", tmp_path / "engrams"
    assert save_manifest(path, root, {f"{e.id}.yaml": ent})
    back = load_manifest(path, root)[f"{e.id}.yaml"]
    assert back.key == ent.key and back.sha == sha and back.observed_ns == ent.observed_ns
    assert back.data == e  # built from the row as it was read
    head, line = path.read_text().splitlines()
    assert json.loads(head)["root"] == root_text(root)
    for col, bad in ((4, "not hex"), (4, "abcd"), (2, 2**64), (0, -(2**70))):
        row = [f"{e.id}.yaml", *json.loads(line)[1:]]
        (tmp_path / "bad.json").write_text(head + "\n" + json.dumps(row[:col + 1] + [bad] + row[col + 2:]) + "\n")
        assert load_manifest(tmp_path / "bad.json", root) == {}, (col, bad)


def _turns(n: int) -> list[Engram]:
    return [Engram.create(f"turn {i} of a long conversation about gardening and the weather", scope="project:web",
                          source={"kind": "conversation", "format": "capture", "session": f"s{i // 20}", "turn": i % 20,
                                  "role": "user"}) for i in range(n)]


def test_a_fresh_process_reads_the_manifest_a_row_at_a_time(tmp_path: Path) -> None:
    """Issue 49: the manifest was one JSON document, read whole and parsed whole before any engram was built (57 MB
    of text at 100k engrams, ~0.6 GB at a million, on top of the engrams). Now one row a line, each row built into
    its engram as it is read: the Python heap's peak while loading stays below the file's size."""
    import tracemalloc

    from plur.store.manifest import load_manifest

    with EngramStore(tmp_path, fsync=False) as store:
        store.add_many(_turns(3000))
        store.save_manifest()
    path = tmp_path / "index" / "manifest-store.json"
    size = path.stat().st_size
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        got = load_manifest(path, tmp_path / "engrams")
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(got) == 3000 and all(isinstance(ent.data, Engram) for ent in got.values())
    assert peak - kept < size / 4, (peak - kept, size)   # never the whole text nor a dict per row at once
    fresh = EngramStore(tmp_path)
    assert sorted(e.id for e in fresh.all()) == sorted(got[n].data.id for n in got)  # type: ignore[union-attr]


def test_engrams_read_from_files_or_the_manifest_share_their_repeated_short_texts(tmp_path: Path) -> None:
    """Issue 49: every engram read held its own copies of its scope, type, status and its source's kind, format,
    session and role (~390 bytes an engram of a captured turn); they are now one object each."""
    with EngramStore(tmp_path, fsync=False) as store:
        store.add_many(_turns(40))
        store.save_manifest()
    for fresh in (EngramStore(tmp_path), EngramStore(tmp_path)):
        a, b = [e for e in fresh.all() if e.source["session"] == "s1"][:2]
        for x, y in ((a.scope, b.scope), (a.type, b.type), (a.status, b.status), (a.source["kind"], b.source["kind"]),
                     (a.source["format"], b.source["format"]), (a.source["session"], b.source["session"]),
                     (a.source["role"], b.source["role"])):
            assert x == y and x is y
        (tmp_path / "index" / "manifest-store.json").unlink(missing_ok=True)  # the next one parses the files


def test_a_version_1_manifest_is_no_manifest_and_is_not_read_whole(tmp_path: Path) -> None:
    """A manifest of the version before (one JSON document on one line) reads as none, without its text being
    read and parsed whole first (that peak was the version's whole point)."""
    import json
    import tracemalloc

    from plur.store.manifest import load_manifest, root_text

    root = tmp_path / "engrams"
    doc = {"format": "plur-store-manifest", "version": 1, "root": root_text(root),
           "files": {f"ENG-2025-01-01-{i:06x}.yaml": [1, 2, 3, 4, "0" * 32, "sha256:" + "0" * 16, {"x": "y" * 40}]
                     for i in range(20000)}}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    tracemalloc.start()
    try:
        assert load_manifest(path, root) == {}
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < path.stat().st_size / 4, (peak, path.stat().st_size)


def test_a_fresh_process_holds_one_string_per_engram_id(tmp_path: Path) -> None:
    """Issue 49: the store's engrams, the BM25 leg's ids, the dense leg's ids and the index manifest each parsed a
    copy of every id from their own file (~70 bytes an id per copy); they now share the store's one string."""
    import numpy as np

    from plur.index.dense import DenseIndex
    from plur.memory import Memory

    with Memory(tmp_path, model="none", fsync=False) as mem:
        e = mem.learn("The spare key is under the blue pot.")
        mem.recall("spare key", k=1, mode="bm25")
    with Memory(tmp_path, model="none", fsync=False) as fresh:
        fresh.recall("spare key", k=1, mode="bm25")
        idx = fresh._indexes
        stored = fresh.store.get(e.id).id
        assert stored == e.id
        assert idx.lexical._ids[idx.lexical._slot[e.id]] is stored
        assert next(k for k in idx.lexical_hashes if k == e.id) is stored
    dense = DenseIndex(8, exact_threshold=10**9)
    dense.add([e.id], np.ones((1, 8), dtype=np.float32))
    dense.save(tmp_path / "dense")
    again = DenseIndex.load(tmp_path / "dense", dims=8)
    assert again._slot_ids[0] is stored


def test_an_autosave_a_refresh_finds_due_is_written_by_a_thread_of_its_own(tmp_path: Path, monkeypatch) -> None:
    """Issue 49 (recall p99 under writers): the refresh that read enough files to make a manifest save due
    wrote the whole manifest before it returned, holding up the recall that asked for it (up to 600 ms at 10k
    engrams on a busy machine). It now returns at once; the save completes on its own thread, and close waits."""
    import threading

    from plur.store import manifest, mirror

    with EngramStore(tmp_path, fsync=False) as store:
        store.add_many(_turns(40))
    (tmp_path / "index" / "manifest-store.json").unlink()        # the next store reads all 40 files: a save is due
    gate, entered, done = threading.Event(), threading.Event(), threading.Event()
    real = manifest.save_manifest

    def held(*args):
        entered.set()
        assert gate.wait(300), "the gate never opened"
        return real(*args)

    monkeypatch.setattr(manifest, "save_manifest", held)
    monkeypatch.setattr(mirror, "save_manifest_file", held)
    fresh = EngramStore(tmp_path)
    seen: list[int] = []
    t = threading.Thread(target=lambda: (seen.append(len(fresh.all())), done.set()), daemon=True)
    t.start()
    try:
        assert done.wait(120), "the refresh waited for the manifest save"
        assert seen == [40] and entered.wait(120)                  # the autosave did start, on its own thread
    finally:
        gate.set()
    fresh.close()                                                  # waits for the save in flight
    assert (tmp_path / "index" / "manifest-store.json").exists()
    assert len(manifest.load_manifest(tmp_path / "index" / "manifest-store.json", tmp_path / "engrams")) == 40


def test_a_fresh_process_shares_the_dense_manifest_values_with_the_engrams(plur_home: Path, embedder) -> None:
    """Issue 49: the index manifest's dense map held its own copy of every engram's content hash (~72 bytes an
    engram, read from manifest.json); an unchanged entry now holds the engram's own string."""
    from plur.memory import Memory

    with Memory(plur_home, embedder=embedder, fsync=False) as mem:
        e = mem.learn("The spare key is under the blue pot.")
        mem.recall("spare key", k=1)
    with Memory(plur_home, embedder=embedder, fsync=False) as fresh:
        assert fresh.recall("spare key", k=1)[0].engram.id == e.id
        idx = fresh._indexes
        assert not idx._pending_dense
        assert idx.dense_hashes[e.id] is fresh.store.get(e.id).content_hash
