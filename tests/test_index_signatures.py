"""The BM25 leg's signature table (plur.index.signatures) and the manifest a deferred dense leg leaves on disk."""

from __future__ import annotations

import dataclasses
import json

from plur.index.indexes import IndexSet
from plur.index.signatures import DIGEST, SignatureTable, digest
from plur.memory import Memory


def test_the_table_records_replaces_forgets_and_compacts():
    table = SignatureTable([("a", "s1"), ("b", "s2")])
    assert dict(table) == {"a": digest("s1"), "b": digest("s2")}
    assert table.changed({"a": "s1", "b": "s3", "c": "s4"}) == ["b", "c"]
    table.put("b", "s3")
    table.put("c", "s4")
    assert table.changed({"a": "s1", "b": "s3", "c": "s4"}) == []
    assert table.pop("a") == digest("s1") and table.pop("a", None) is None and "a" not in table
    for n in range(6000):  # past the compaction thresholds of both the dict of new ids and the removed slots
        table.put(f"x{n}", str(n))
        if n % 2:
            table.pop(f"x{n}")
    assert len(table) == 2 + 3000 and table.get("x10") == digest("10") and table.get("x11") is None
    again = SignatureTable(table.to_json().items(), digested=True)
    assert dict(again) == dict(table)


def _home(tmp_path):
    with Memory(tmp_path, model="none", fsync=False) as mem:
        kept = mem.learn("The spare key is under the blue pot.")
        other = mem.learn("The boiler is serviced every May.")
        mem.recall("spare key", k=1, mode="bm25")
        engrams = {e.id: mem.store.get(e.id) for e in (kept, other)}
        return mem.settings, engrams


def test_the_manifest_holds_digests_and_an_older_one_with_signatures_reindexes_nothing(tmp_path):
    settings, engrams = _home(tmp_path)
    path = tmp_path / "index" / "manifest.json"
    saved = json.loads(path.read_text())
    assert saved["lexical_digest"] == DIGEST and all(isinstance(v, int) for v in saved["lexical"].values())
    idx = IndexSet(tmp_path / "index", settings, None)
    saved["lexical"] = {i: idx._signature(e) for i, e in engrams.items()}  # as older saves wrote it
    del saved["lexical_digest"]
    path.write_text(json.dumps(saved))
    idx = IndexSet(tmp_path / "index", settings, None)
    assert idx.sync(engrams) == 0
    first, second = engrams
    changed = {first: dataclasses.replace(engrams[first], statement="The spare key is in the shed.")}
    assert idx.sync(changed) == 2  # the changed engram re-indexed, the forgotten one removed
    assert list(idx.lexical_hashes) == [first] and idx.lexical.search("shed", 1)[0][0] == first


def test_a_save_while_the_dense_leg_is_deferred_keeps_the_dense_entries_on_disk(tmp_path):
    settings, engrams = _home(tmp_path)
    path = tmp_path / "index" / "manifest.json"
    idx = IndexSet(tmp_path / "index", settings, None, defer_dense=True)
    assert idx.dense_deferred
    saved = json.loads(path.read_text())
    saved["model"], saved["dense"] = "some-model", {i: e.content_hash for i, e in engrams.items()}
    path.write_text(json.dumps(saved))  # another process saved its dense leg meanwhile
    first, _ = engrams
    idx.remove([first])
    idx.save()
    again = json.loads(path.read_text())
    assert again["model"] == "some-model" and again["dense"] == saved["dense"] and first not in again["lexical"]


def test_popping_past_the_compaction_threshold_returns_each_digest_and_keeps_the_rest():
    """A forget of a 5,030-turn session through the service failed: the pop that crossed the compaction threshold
    read its digest at the slot number from before the compaction (IndexError, or another id's digest)."""
    n = 5_030
    table = SignatureTable((f"e{i}", f"sig {i}") for i in range(n + 2))
    for i in range(n):  # crosses 1024 + len(table) dead slots on the way, so the table compacts mid-loop
        assert table.pop(f"e{i}") == digest(f"sig {i}")
    assert table.pop("e0") is None and len(table) == 2
    assert dict(table) == {f"e{n}": digest(f"sig {n}"), f"e{n + 1}": digest(f"sig {n + 1}")}
    table.put("e0", "sig again")
    assert table["e0"] == digest("sig again") and len(table) == 3


def test_forgetting_a_session_larger_than_the_compaction_threshold_in_one_call(tmp_path):
    with Memory(tmp_path / "home", model="none", fsync=False) as m:
        m.ingest([{"role": "user", "content": f"Turn {i}: the user mentioned parcel {i:05d}."} for i in range(2_100)],
                 session="big", scope="project:ship")
        m.ingest([{"role": "user", "content": "Another chat about the garden fence."}], session="other")
    with Memory(tmp_path / "home", model="none", fsync=False) as m:
        assert m.recall("parcel", 5)  # the index is open: the forget goes through IndexSet.remove
        assert len(m.forget_session("big")) == 2_100
        assert not m.recall("parcel", 5) and m.recall("garden fence", 5)
