"""EngramStore on real files in tmp_path: round trips, bad input, quarantine, manifest, locking."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import filelock
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from plur.store.engram import Engram
from plur.errors import InvalidIdError, NotFoundError, StoreError, ValidationError
from plur.store.store import EngramStore

TRICKY = [
    'Gov: Root "x"',
    "---",
    "- x",
    "#1)",
    "tab\tseparated\tvalues",
    "“curly” ‘quotes’",
    "emoji 🙂🐕‍🦺",
    "今天玩成语接龙游戏",
    "line one\nline two\n\nline four",
    "trailing newline\n",
    "  leading and trailing spaces  ",
    "windows\r\nline end",
    "yes",
    "null",
    "~",
    "1.0",
    "{a: 1}",
    "& * ! | > % @ `",
    "key: value # not a comment",
    "a\x85b next-line character",
    "a\u2028b line separator",
]
BAD_IDS = ["../../x", "/etc/passwd", "..\\x", "x\0y", "", "ENG-2025-07-25-a1b2c3/../../x",
           "ENG-2025-07-25-A1B2C3", "ENG-2025-07-25-a1b2c3\n"]


def make_store(home: Path, **kw) -> EngramStore:
    kw.setdefault("fsync", False)
    return EngramStore(home, **kw)


def age_files(store: EngramStore, seconds: float = 3600) -> None:
    """Move every engram file's mtime into the past, as if written long ago (not 'racy')."""
    past = time.time() - seconds
    for p in store.iter_files():
        os.utime(p, (past, past))


# -- round trips ------------------------------------------------------------------------
@pytest.mark.parametrize("statement", TRICKY)
def test_statement_survives_save_and_reload_byte_for_byte(tmp_path: Path, statement: str) -> None:
    store = make_store(tmp_path)
    stored, created = store.add(Engram.create(statement))
    assert created
    fresh = make_store(tmp_path)  # a new instance reads the file, not the cache
    assert fresh.get(stored.id).statement == statement
    raw = store.path_for(stored.id).read_bytes()
    assert Engram.from_yaml(raw.decode("utf-8")).statement == statement
    assert raw == stored.to_yaml().encode("utf-8")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example("a\x85b")
@example("\u2029 x \x1b \ud7ff \U0010ffff")
@example("lone surrogate \ud800")
@given(st.text(alphabet=st.characters(blacklist_characters="\x00"), min_size=1, max_size=300)
       .filter(lambda s: s.strip() != ""))
def test_any_text_round_trips(statement: str) -> None:
    try:
        statement.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates cannot go into a UTF-8 file: a clear refusal
        with pytest.raises(ValidationError):
            Engram.create(statement)
        return
    with tempfile.TemporaryDirectory() as d:
        store = make_store(Path(d))
        stored, _ = store.add(Engram.create(statement))
        assert make_store(Path(d)).get(stored.id).statement == statement


def test_put_of_unchanged_engram_does_not_rewrite(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    e, _ = store.add(Engram.create("Byte-stable: same YAML, same file."))
    path = store.path_for(e.id)
    before = path.stat()
    again = store.put(store.get(e.id))
    after = path.stat()
    assert again == e
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    changed = store.put(e.replace(statement="Byte-stable: now different."))
    assert path.stat().st_ino != before.st_ino
    assert make_store(tmp_path).get(e.id).statement == changed.statement


# -- bad input --------------------------------------------------------------------------
@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_ids_are_refused(tmp_path: Path, bad: str) -> None:
    store = make_store(tmp_path)
    store.add(Engram.create("something to protect"))
    for call in (store.get, store.delete, store.path_for):
        with pytest.raises(InvalidIdError, match="invalid engram id"):
            call(bad)
    assert store.count() == 1


@pytest.mark.parametrize("blank", ["", " ", "\t\n", "\u3000"])
def test_empty_or_whitespace_statement_is_refused(tmp_path: Path, blank: str) -> None:
    with pytest.raises(ValidationError, match="empty or whitespace"):
        Engram.create(blank)
    assert make_store(tmp_path).count() == 0


def test_one_mib_statement_is_stored_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    limit = 1 << 20
    exact = "é" * (limit // 2)  # 2 UTF-8 bytes per character: exactly 1 MiB
    e, created = store.add(Engram.create(exact))
    assert created and make_store(tmp_path).get(e.id).statement == exact
    with pytest.raises(ValidationError, match=r"1048577 bytes, over the limit of 1048576 bytes.*max_statement_bytes"):
        store.add(Engram.create(exact + "a"))
    assert store.count() == 1


def test_limit_is_configurable(tmp_path: Path) -> None:
    store = make_store(tmp_path, max_statement_bytes=10)
    store.add(Engram.create("0123456789"))
    with pytest.raises(ValidationError, match="over the limit of 10 bytes"):
        store.add(Engram.create("0123456789x"))


def test_learning_the_same_fact_twice_keeps_one(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    first, c1 = store.add(Engram.create("The user's dog is Rex."))
    second, c2 = store.add(Engram.create("The user's dog is Rex."))
    third, c3 = store.add(Engram.create("  the USER'S dog   is Rex. "))  # same normalised statement
    assert (c1, c2, c3) == (True, False, False)
    assert first.id == second.id == third.id
    assert len(list(store.iter_files())) == 1
    other_scope, c4 = store.add(Engram.create("The user's dog is Rex.", scope="project:a"))
    assert c4 and other_scope.id != first.id


def test_duplicates_inside_one_batch_merge(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    out = store.add_many([Engram.create("same"), Engram.create("other"), Engram.create("Same")])
    assert [c for _, c in out] == [True, True, False]
    assert out[0][0].id == out[2][0].id
    assert store.count() == 2


def test_retired_engram_does_not_block_relearning(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    old, _ = store.add(Engram.create("The office is in Leeds."))
    store.put(old.replace(status="retired"))
    new, created = store.add(Engram.create("The office is in Leeds."))
    assert created and new.id != old.id


def test_same_first_120_characters_both_survive(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    prefix = "x" * 120
    a, ca = store.add(Engram.create(prefix + " ending A"))
    b, cb = store.add(Engram.create(prefix + " ending B"))
    assert ca and cb and a.id != b.id
    assert sorted(e.statement for e in make_store(tmp_path).all()) == [prefix + " ending A", prefix + " ending B"]


def test_timestamps_with_and_without_zone_normalise_to_utc_and_sort(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    forms = ["2025-07-25T02:00:00Z", "2025-07-25 02:00", "2025-07-25T04:00:00+02:00", "2025-07-24T21:00:00-05:00"]
    for i, when in enumerate(forms):
        store.add(Engram.create(f"fact number {i}", created=when))
    store.add(Engram.create("a later fact", created="2025-07-26"))
    loaded = make_store(tmp_path).all()
    expected = datetime(2025, 7, 25, 2, 0, tzinfo=timezone.utc)
    assert [e.created for e in loaded[:4]] == [expected] * 4
    assert loaded[-1].statement == "a later fact"
    assert sorted(loaded, key=lambda e: e.created)[-1].statement == "a later fact"
    for e in loaded[:4]:
        assert "created: '2025-07-25T02:00:00Z'" in store.path_for(e.id).read_text(encoding="utf-8")


def test_id_collision_on_add_gets_a_new_id(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    a, _ = store.add(Engram.create("first", id="ENG-2025-07-25-aaaaaa"))
    b, created = store.add(Engram.create("second", id="ENG-2025-07-25-aaaaaa"))
    assert created and a.id == "ENG-2025-07-25-aaaaaa" and b.id != a.id
    assert b.id.startswith("ENG-" + b.created.date().isoformat())  # a fresh id, dated by created
    assert store.get(a.id).statement == "first" and store.get(b.id).statement == "second"


def test_put_and_delete_of_missing_ids(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    ghost = Engram.create("never stored")
    with pytest.raises(NotFoundError):
        store.put(ghost)
    with pytest.raises(NotFoundError):
        store.delete(ghost.id)
    with pytest.raises(NotFoundError):
        store.get(ghost.id)
    assert not store.path_for(ghost.id).exists()


# -- quarantine -------------------------------------------------------------------------
def _three(store: EngramStore) -> list[Engram]:
    return [store.add(Engram.create(s))[0] for s in ("alpha fact", "beta fact", "gamma fact")]


@pytest.mark.parametrize("garbage, reason", [
    (b"id: [unclosed\nstatement: x\n", "not valid YAML"),
    (b"", "the file is empty (0 bytes"),
    (b"just a string\n", "mapping"),
    (b"id: ENG-2025-07-25-a1b2c3\nstatement: ''\nscope: global\ncreated: 2025-07-25\n", "empty"),
    (b"\xff\xfe not utf-8", "UTF-8"),
])
def test_corrupt_file_is_quarantined_and_the_rest_loads(tmp_path: Path, garbage: bytes, reason: str) -> None:
    store = make_store(tmp_path)
    a, b, c = _three(store)
    bad = store.path_for(b.id)
    bad.write_bytes(garbage)
    fresh = make_store(tmp_path)
    assert sorted(e.id for e in fresh.all()) == sorted([a.id, c.id])  # never "empty"
    q = fresh.quarantined()
    assert len(q) == 1 and reason in q[0]["reason"]
    assert q[0]["original"] == str(bad) and not bad.exists()
    moved = Path(q[0]["path"])
    assert moved.parent == tmp_path / "quarantine" and moved.name.startswith(bad.name + ".")
    assert moved.read_bytes() == garbage  # kept verbatim, never overwritten
    assert Path(str(moved) + ".reason").is_file()
    with pytest.raises(NotFoundError):
        fresh.get(b.id)


def test_file_name_not_matching_its_id_is_quarantined(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    e, _ = store.add(Engram.create("named right"))
    wrong = store.root / "ENG-2020-01-01-000000.yaml"
    wrong.write_bytes(store.path_for(e.id).read_bytes())
    stray = store.root / "notes.yaml"
    stray.write_text("id: whatever\n", encoding="utf-8")
    fresh = make_store(tmp_path)
    assert [x.id for x in fresh.all()] == [e.id]
    reasons = {Path(q["original"]).name: q["reason"] for q in fresh.quarantined()}
    assert "does not match its id" in reasons[wrong.name]
    assert "not an engram id" in reasons[stray.name]


def test_corrupt_file_is_never_overwritten_by_a_write(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    e, _ = store.add(Engram.create("will be corrupted"))
    path = store.path_for(e.id)
    path.write_bytes(b"statement: [broken\n")
    with pytest.raises(NotFoundError):
        store.put(e.replace(statement="overwrite attempt"))
    assert not path.exists()
    assert [Path(q["path"]).read_bytes() for q in store.quarantined()] == [b"statement: [broken\n"]


def test_directories_and_other_files_are_ignored(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    e, _ = store.add(Engram.create("real one"))
    (store.root / "ENG-2025-07-25-bbbbbb.yaml").mkdir()
    (store.root / "README.md").write_text("hello", encoding="utf-8")
    fresh = make_store(tmp_path)
    assert [x.id for x in fresh.all()] == [e.id] and fresh.quarantined() == []


def test_stale_temp_files_are_ignored_and_cleaned_by_the_next_write(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.add(Engram.create("before the crash"))
    partial = store.root / ".tmp-deadbeef.yaml"
    partial.write_bytes(b"id: ENG-2025-07-25-a1b2c3\nstatement: half a wri")
    fresh = make_store(tmp_path)
    assert len(fresh.all()) == 1 and fresh.quarantined() == []
    assert partial.exists()  # readers leave a fresh temp alone: a writer may own it
    fresh.add(Engram.create("after the crash"))  # under the lock every temp file is stale
    assert not partial.exists()


# -- refresh, manifest ------------------------------------------------------------------
def test_refresh_reports_changes_from_another_process_and_hand_edits(tmp_path: Path) -> None:
    mine, theirs = make_store(tmp_path), make_store(tmp_path)
    a, _ = mine.add(Engram.create("one"))
    assert mine.refresh().added == {a.id}
    assert not mine.refresh()
    b, _ = theirs.add(Engram.create("two"))
    theirs.put(theirs.get(a.id).replace(statement="one, edited"))
    ch = mine.refresh()
    assert (ch.added, ch.updated, ch.removed) == ({b.id}, {a.id}, set())
    assert mine.get(a.id).statement == "one, edited"
    theirs.delete(b.id)
    assert mine.refresh().removed == {b.id}
    path = mine.path_for(a.id)
    path.write_text(path.read_text(encoding="utf-8").replace("one, edited", "one, by hand"), encoding="utf-8")
    assert mine.refresh().updated == {a.id}
    assert [e.statement for e in mine.all()] == ["one, by hand"]


def test_writers_catch_up_from_the_journal_without_a_full_scan(tmp_path: Path, monkeypatch) -> None:
    a, b = make_store(tmp_path), make_store(tmp_path)
    a.add(Engram.create("warm a"))
    b.add(Engram.create("warm b"))
    scans: list[EngramStore] = []
    real_scan = EngramStore._full_refresh

    def spy(self: EngramStore, *args, **kwargs) -> None:
        scans.append(self)
        real_scan(self, *args, **kwargs)

    monkeypatch.setattr(EngramStore, "_full_refresh", spy)
    x, _ = a.add(Engram.create("learned by A"))
    y, created = b.add(Engram.create("LEARNED  by a"))  # b dedups against a's new file
    assert not created and y.id == x.id and scans == []
    b.delete(x.id)
    z, created = a.add(Engram.create("learned by A"))  # a saw the delete: learns it afresh
    assert created and z.id != x.id and scans == []
    (tmp_path / "index" / "store-journal").unlink()  # journal lost: a full scan, still correct
    w, created = b.add(Engram.create("learned by a"))
    assert not created and w.id == z.id and scans == [b]


def test_same_size_edit_within_one_timestamp_tick_is_seen(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    e, _ = store.add(Engram.create("The dog is Rex."))
    store.refresh()
    path = store.path_for(e.id)
    st = path.stat()
    with open(path, "r+b") as f:  # in place: same inode, same size
        data = f.read().replace(b"Rex", b"Max")
        f.seek(0)
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime, as within one coarse tick
    assert path.stat().st_size == st.st_size and path.stat().st_ino == st.st_ino
    assert store.refresh().updated == {e.id}
    assert store.get(e.id).statement == "The dog is Max."


def test_manifest_makes_a_fresh_process_reread_only_changed_files(tmp_path: Path, monkeypatch) -> None:
    store = make_store(tmp_path)
    made = store.add_many([Engram.create(f"engram number {i}") for i in range(40)])
    age_files(store)
    store.refresh()  # re-reads the aged files once (racy check), then saves the manifest
    store.save_manifest()
    assert store.manifest_path.is_file()
    target = made[7][0]
    path = store.path_for(target.id)
    path.write_text(path.read_text(encoding="utf-8").replace("number 7", "number seven"), encoding="utf-8")

    reads: list[str] = []
    real_read = EngramStore._read_file

    def spy(self: EngramStore, name: str) -> None:
        reads.append(name)
        real_read(self, name)

    monkeypatch.setattr(EngramStore, "_read_file", spy)
    fresh = make_store(tmp_path)
    changes = fresh.refresh()
    assert reads == [path.relative_to(store.root).as_posix()]
    assert len(changes.added) == 40  # a new instance reports everything once
    assert fresh.get(target.id).statement == "engram number seven"


def test_get_before_all_still_loads_everything(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    made = [e for e, _ in store.add_many([Engram.create(f"e{i}") for i in range(5)])]
    store.save_manifest()
    fresh = make_store(tmp_path)
    assert fresh.get(made[2].id) == made[2]
    assert sorted(e.id for e in fresh.all()) == sorted(e.id for e in made) and fresh.count() == 5


def test_corrupt_manifest_is_ignored(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.add_many([Engram.create(f"e{i}") for i in range(3)])
    store.save_manifest()
    store.manifest_path.write_text("{not json", encoding="utf-8")
    assert make_store(tmp_path).count() == 3


def test_manifest_entry_for_a_deleted_file_is_dropped(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    out = store.add_many([Engram.create(f"e{i}") for i in range(3)])
    store.save_manifest()
    os.unlink(store.path_for(out[0][0].id))
    fresh = make_store(tmp_path)
    assert sorted(e.id for e in fresh.all()) == sorted(e.id for e, _ in out[1:])


# -- lock -------------------------------------------------------------------------------
def test_lock_state_and_timeout_when_another_holder_has_it(tmp_path: Path) -> None:
    store = make_store(tmp_path, lock_timeout_s=0.2)
    store.add(Engram.create("exists"))
    assert store.lock_state()["locked"] is False
    other = filelock.FileLock(str(tmp_path / ".lock"), thread_local=False, preserve_lock_file=True)
    with other:
        state = store.lock_state()
        assert state["locked"] is True and state["held_here"] is False
        with pytest.raises(StoreError, match="locked by another process"):
            store.add(Engram.create("blocked"))
        assert store.count() == 1  # reads need no lock
    assert store.add(Engram.create("now it works"))[1]


def test_open_does_not_create_anything(tmp_path: Path) -> None:
    home = tmp_path / "nothing-here"
    store = make_store(home)
    assert store.all() == [] and store.quarantined() == [] and store.lock_state()["locked"] is False
    assert not home.exists()


def test_reason_file_is_readable_yaml(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    e, _ = store.add(Engram.create("x"))
    store.path_for(e.id).write_text("id: [", encoding="utf-8")
    store.refresh()
    (reason,) = (tmp_path / "quarantine").glob("*.reason")
    info = yaml.safe_load(reason.read_text(encoding="utf-8"))
    assert info["original"].endswith(f"{e.id}.yaml") and "YAML" in info["reason"] and info["when"].endswith("Z")


def test_writer_catching_up_on_a_file_another_writer_left_corrupt(tmp_path):
    """A journalled file that fails to parse during catch-up is quarantined; the write still succeeds."""
    from plur.store.engram import Engram
    from plur.store.store import EngramStore

    home = tmp_path / "shared-home"
    a, b = EngramStore(home, fsync=False), EngramStore(home, fsync=False)
    a.add(Engram.create("warm a"))
    b.add(Engram.create("warm b"))
    x, _ = b.add(Engram.create("written by b"))
    b.path_for(x.id).write_text("not: [valid", encoding="utf-8")
    written, created = a.add(Engram.create("a writes after b's file went bad"))
    assert created
    assert [q for q in a.quarantined() if x.id in str(q["path"])]
    fresh = EngramStore(home, fsync=False)
    assert {e.statement for e in fresh.all()} == {"warm a", "warm b", "a writes after b's file went bad"}
    later, _ = a.add(Engram.create("and one more"))
    assert later.id in {e.id for e in EngramStore(home, fsync=False).all()}


def test_manifest_rows_rebuild_the_same_engrams_and_odd_rows_are_validated_in_full() -> None:
    """Engram.from_manifest (the fast path of a fresh process) equals from_dict, or declines."""
    from plur.store.engram import Engram

    cases = [
        Engram.create("plain fact"),
        Engram.create("tagged, pinned, sourced", tags=("a", "b c"), pinned=True, type="procedure",
                      scope="project:x", source={"kind": "conversation", "session": "s1", "turn": 3},
                      domain="dev.testing", rationale="why"),
        Engram.create("retired with a window", status="retired", valid_from="2025-01-01T00:00:00Z",
                      valid_until="2025-02-01T10:00:00.250000Z", supersedes="ENG-2025-01-01-abcdef"),
    ]
    for e in cases:
        row = e.to_dict()
        got = Engram.from_manifest(row, e.content_hash)
        full = Engram.from_dict(row)
        assert got is not None and got == e
        assert all(getattr(got, f.name) == getattr(full, f.name) for f in dataclasses.fields(Engram))
    row = cases[0].to_dict()
    for bad in ({**row, "surprise": 1}, {**row, "type": "nonsense"}, {**row, "tags": "a"}, {**row, "pinned": "yes"},
                {**row, "created": "2025-01-01"}, {**row, "statement": ""}, {k: v for k, v in row.items() if k != "scope"}):
        assert Engram.from_manifest(bad, cases[0].content_hash) is None, bad
    assert Engram.from_manifest(row, "sha256:0000000000000000") is None  # row and hash disagree


def test_a_tampered_manifest_row_is_not_trusted(tmp_path: Path) -> None:
    """A manifest row that no longer validates is re-checked in full: the engram file wins."""
    import json

    with EngramStore(tmp_path) as store:
        e, _ = store.add(Engram.create("the real statement"))
        store.save_manifest()
    path = tmp_path / "index" / "manifest-store.json"
    head, line = path.read_text().splitlines()
    row = json.loads(line)
    assert row[0] == f"{e.id[4:11]}/{e.id}.yaml"  # the month folder's file (issue 49)
    row[7]["type"] = "not-a-type"
    path.write_text(head + "\n" + json.dumps(row) + "\n")
    with EngramStore(tmp_path) as store:
        assert store.get(e.id) == e


@pytest.mark.parametrize("wide", [2 ** 64, 2 ** 70, -(2 ** 63) - 1, 12345678901234567890123])
def test_an_integer_past_64_bits_survives_a_fresh_process_exactly(tmp_path: Path, wide: int) -> None:
    # the manifest is parsed with orjson, which reads such an integer as a float: the row keeps it out
    store = make_store(tmp_path)
    e, _ = store.add(Engram.create("a turn with a huge counter", source={"kind": "import", "n": wide,
                                                                          "deep": [{"m": wide}]}))
    plain, _ = store.add(Engram.create("an ordinary engram", source={"kind": "import", "n": 2 ** 63}))
    age_files(store)
    store.refresh()
    store.save_manifest()
    fresh = make_store(tmp_path)
    got = fresh.get(e.id).source
    assert got["n"] == wide and type(got["n"]) is int and got["deep"][0]["m"] == wide
    assert fresh.get(plain.id).source["n"] == 2 ** 63 and type(fresh.get(plain.id).source["n"]) is int


def test_add_many_fsyncs_each_file_and_the_folder_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch (an ingest) keeps every file's fsync before its rename, and makes the renames durable with
    one folder fsync before it returns, instead of one per file (ingest speed, issue 42)."""
    from plur.store import atomic, store as store_mod

    calls = {"file": 0, "folder": 0}
    real_fsync, real_dir = os.fsync, atomic.fsync_dir

    def file_fsync(fd: int) -> None:
        calls["file"] += 1
        real_fsync(fd)

    def folder_fsync(folder: Path) -> None:
        calls["folder"] += 1
        real_dir(folder)

    s = EngramStore(tmp_path, fsync=True)
    s.add(Engram.create("opened"))
    monkeypatch.setattr(atomic.os, "fsync", file_fsync)
    monkeypatch.setattr(atomic, "fsync_dir", folder_fsync)
    monkeypatch.setattr(store_mod, "fsync_dir", folder_fsync)
    out = s.add_many([Engram.create(f"fact number {i}") for i in range(40)])
    assert all(created for _, created in out)
    assert calls["folder"] == 1 and calls["file"] >= 40, calls
    s.close()
    assert len(EngramStore(tmp_path).all()) == 41
