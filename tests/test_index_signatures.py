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
