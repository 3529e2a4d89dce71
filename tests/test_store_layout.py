"""The folder store's two layouts (issue 49): month folders (``engrams/YYYY-MM/<id>.yaml``, what plur writes)
and the flat folder older plur wrote (``engrams/<id>.yaml``), read together, and moved between by
``plur migrate --layout``.

"Back" (a sharded store read by an unsharded reader) is ``plur migrate --layout flat``: every file is in
``engrams/`` again, the month folders are gone, and the manifest an older plur would read is refused by
version, so such a reader sees every engram from the files themselves.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from plur.errors import NotFoundError, StoreError
from plur.store import relayout as relayout_mod
from plur.store.engram import Engram
from plur.store.layout import is_engram_name, misplaced, month_name, month_of
from plur.store.manifest import MANIFEST_VERSION, load_manifest
from plur.store.relayout import relayout
from plur.store.store import EngramStore


def _flat_store(home: Path, n: int) -> list[Engram]:
    """What an older plur left: ``engrams/<id>.yaml`` files and a version-2 manifest naming them."""
    made = []
    with EngramStore(home, fsync=False) as store:
        made = [store.add(Engram.create(f"an old fact number {i}", created=f"2025-0{1 + i % 3}-15T10:00:00Z"))[0]
                for i in range(n)]
    assert relayout(EngramStore(home, fsync=False), "flat").moved == n
    past = time.time() - 3600   # written long ago (not "racy"), then a manifest of them
    for p in (home / "engrams").glob("*.yaml"):
        os.utime(p, (past, past))
    with EngramStore(home, fsync=False) as store:
        store.refresh()
        store.save_manifest()
    head, *rows = (home / "index" / "manifest-store.json").read_text(encoding="utf-8").splitlines()
    head_doc = json.loads(head)
    head_doc["version"] = 2
    (home / "index" / "manifest-store.json").write_text("\n".join([json.dumps(head_doc), *rows]) + "\n", encoding="utf-8")
    return made


def _files(home: Path) -> list[str]:
    return sorted(p.relative_to(home / "engrams").as_posix() for p in (home / "engrams").rglob("*.yaml"))


@pytest.mark.parametrize(("created", "month"), [
    ("2026-12-31T23:59:59Z", "2026-12"), ("2027-01-01T00:00:00Z", "2027-01"),
    ("2027-01-01T00:30:00+01:00", "2026-12"),   # the id's date is the UTC one
    ("2024-02-29T12:00:00Z", "2024-02"), ("2024-03-01T00:00:00-00:00", "2024-03"),
])
def test_the_month_folder_of_an_id_at_month_boundaries(tmp_path: Path, created: str, month: str) -> None:
    with EngramStore(tmp_path, fsync=False) as store:
        e, _ = store.add(Engram.create("a fact at a month's edge", created=created))
        assert month_of(e.id) == month and store.path_for(e.id) == tmp_path / "engrams" / month / f"{e.id}.yaml"
        assert _files(tmp_path) == [f"{month}/{e.id}.yaml"] and store.file_of(e.id) == store.path_for(e.id)
    assert is_engram_name(month_name(e.id)) and is_engram_name(f"{e.id}.yaml")
    assert not is_engram_name(f"2026-13/{e.id}.yaml") and not is_engram_name(f"x/{e.id}.yaml")


def test_an_older_plurs_flat_store_opens_and_is_read_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _flat_store(tmp_path, 6)
    assert _files(tmp_path) == sorted(f"{e.id}.yaml" for e in made) and not list((tmp_path / "engrams").glob("*/"))
    reads: list[str] = []
    real = EngramStore._read_file
    monkeypatch.setattr(EngramStore, "_read_file", lambda self, name: (reads.append(name), real(self, name))[1])
    with EngramStore(tmp_path, fsync=False) as store:
        assert {e.id: e for e in store.all()} == {e.id: e for e in made}
        assert reads == []  # the version-2 manifest of the flat files is still trusted: nothing re-read
        old = made[0]
        assert store.file_of(old.id) == tmp_path / "engrams" / f"{old.id}.yaml"
        store.put(old.replace(statement="an old fact, updated"))          # updated where it is
        store.delete(made[1].id)                                         # forgotten where it is
        new, _ = store.add(Engram.create("a new fact", created="2025-02-20T08:00:00Z"))
    assert _files(tmp_path) == sorted([*(f"{e.id}.yaml" for e in made if e.id != made[1].id), month_name(new.id)])
    with EngramStore(tmp_path, fsync=False) as again:
        assert again.get(old.id).statement == "an old fact, updated" and again.get(new.id) == new
        with pytest.raises(NotFoundError):
            again.get(made[1].id)
    assert json.loads((tmp_path / "index" / "manifest-store.json").read_text().splitlines()[0])["version"] == MANIFEST_VERSION


def test_quarantine_and_restore_in_both_layouts(tmp_path: Path) -> None:
    made = _flat_store(tmp_path, 2)
    with EngramStore(tmp_path, fsync=False) as store:
        month, _ = store.add(Engram.create("a month-folder fact", created="2025-03-03T03:00:00Z"))
    for e in (made[0], month):
        path = tmp_path / "engrams" / (f"{e.id}.yaml" if e is made[0] else month_name(e.id))
        path.write_text(path.read_text(encoding="utf-8").split("scope:")[0], encoding="utf-8")  # truncated
    with EngramStore(tmp_path, fsync=False) as store:
        assert {e.id for e in store.all()} == {made[1].id}
        q = {Path(x["original"]).relative_to(tmp_path / "engrams").as_posix(): x for x in store.quarantined()}
        assert set(q) == {f"{made[0].id}.yaml", month_name(month.id)}
        for e in (made[0], month):  # fixed by hand, then restored: both come back into their month folder
            Path(q[f"{e.id}.yaml" if e is made[0] else month_name(e.id)]["path"]).write_text(e.to_yaml(), encoding="utf-8")
            assert store.restore(e.id) == e
    assert _files(tmp_path) == sorted([f"{made[1].id}.yaml", month_name(made[0].id), month_name(month.id)])


def test_a_flat_copy_of_a_month_file_is_set_aside_whichever_is_seen_first(tmp_path: Path) -> None:
    with EngramStore(tmp_path, fsync=False) as store:
        e, _ = store.add(Engram.create("the dog is Rex", created="2026-05-05T05:00:00Z"))
        flat = tmp_path / "engrams" / f"{e.id}.yaml"
        flat.write_text(e.replace(statement="the dog is Rex, an older copy").to_yaml(), encoding="utf-8")
        store.refresh()
        assert store.get(e.id) == e and store.count() == 1 and not flat.exists()
        (reason,) = [q["reason"] for q in store.quarantined()]
        assert f"also in engrams/{month_name(e.id)}" in reason
    # the other order: the flat file was known first, then a person copies it into its month folder
    home = tmp_path / "second"
    (old,) = _flat_store(home, 1)
    with EngramStore(home, fsync=False) as store:
        assert store.get(old.id) == old and store.refresh().added == {old.id}
        (home / "engrams" / month_name(old.id)).parent.mkdir()
        (home / "engrams" / month_name(old.id)).write_text(old.replace(statement="copied and edited").to_yaml(),
                                                           encoding="utf-8")
        changes = store.refresh()
        assert changes.updated == {old.id} and not changes.removed and not changes.added
        assert store.get(old.id).statement == "copied and edited" and store.count() == 1
        store.delete(old.id)
        assert store.count() == 0 and _files(home) == []


def test_a_file_in_the_wrong_month_folder_is_set_aside_with_where_it_belongs(tmp_path: Path) -> None:
    e = Engram.create("filed under the wrong month", created="2026-04-01T00:00:00Z")
    wrong = tmp_path / "engrams" / "2026-05" / f"{e.id}.yaml"
    wrong.parent.mkdir(parents=True)
    wrong.write_text(e.to_yaml(), encoding="utf-8")
    (tmp_path / "engrams" / "notes").mkdir()           # not a month folder: never read
    (tmp_path / "engrams" / "notes" / f"{e.id}.yaml").write_text("whatever", encoding="utf-8")
    with EngramStore(tmp_path, fsync=False) as store:
        assert store.count() == 0
        (q,) = store.quarantined()
        assert q["reason"] == misplaced(f"2026-05/{e.id}.yaml") and "engrams/2026-04/" in q["reason"]
        assert store.restore(e.id) == e and store.path_for(e.id).is_file()


def test_another_process_sees_writes_into_an_existing_month_folder(tmp_path: Path) -> None:
    writer, reader = EngramStore(tmp_path, fsync=False), EngramStore(tmp_path, fsync=False)
    writer.add(Engram.create("first", created="2026-01-10T00:00:00Z"))
    writer.add(Engram.create("second", created="2026-02-10T00:00:00Z"))
    reader.refresh()
    token = reader.change_token()
    e, _ = writer.add(Engram.create("third, into January again", created="2026-01-11T00:00:00Z"))
    assert reader.change_token() != token   # the engram folder's own mtime did not move; January's did
    assert reader.refresh(full=False).added == {e.id}


def test_migrate_to_month_folders_moves_files_and_changes_nothing_else(tmp_path: Path) -> None:
    made = _flat_store(tmp_path, 5)
    other = EngramStore(tmp_path, fsync=False)   # another process that had the store open
    assert len(other.refresh().added) == 5
    res = relayout(EngramStore(tmp_path, fsync=False), "month")
    assert (res.moved, res.already, res.kept) == (5, 0, 0)
    assert _files(tmp_path) == sorted(month_name(e.id) for e in made)
    changes = other.refresh(full=False)            # followed through the journal: nothing to re-index
    assert not (changes.added or changes.updated or changes.removed)
    assert other.refresh(full=True) == changes and {e.id: e for e in other.all()} == {e.id: e for e in made}
    assert relayout(EngramStore(tmp_path, fsync=False), "month").already == 5   # re-running moves nothing
    rows = load_manifest(tmp_path / "index" / "manifest-store.json", tmp_path / "engrams")
    assert sorted(rows) == sorted(month_name(e.id) for e in made)


def test_a_move_seen_by_a_full_scan_reads_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that cannot follow the journal (rotated, here removed) scans: a file in the other layout with
    the same (mtime, size, inode) is the same file moved, and is not read again."""
    made = _flat_store(tmp_path, 4)
    other = EngramStore(tmp_path, fsync=False)
    other.refresh()
    relayout(EngramStore(tmp_path, fsync=False), "month")
    (tmp_path / "index" / "store-journal").unlink()
    reads: list[str] = []
    real = EngramStore._read_file
    monkeypatch.setattr(EngramStore, "_read_file", lambda self, name: (reads.append(name), real(self, name))[1])
    changes = other.refresh(full=False)
    assert reads == [] and not (changes.added or changes.updated or changes.removed)
    assert {e.id: e for e in other.all()} == {e.id: e for e in made} and other.file_of(made[0].id) == other.path_for(made[0].id)


def test_a_move_stopped_half_way_reads_the_same_and_finishes_when_run_again(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    made = _flat_store(tmp_path, 6)
    real, done = relayout_mod.os.rename, []

    def rename(src, dst):
        if len(done) == 3:
            raise OSError(28, "No space left on device")
        done.append(dst)
        real(src, dst)

    monkeypatch.setattr(relayout_mod.os, "rename", rename)
    with pytest.raises(StoreError, match="run it again"):
        relayout(EngramStore(tmp_path, fsync=False), "month")
    monkeypatch.setattr(relayout_mod.os, "rename", real)
    files = _files(tmp_path)
    assert sum("/" in f for f in files) == 3 and len(files) == 6
    with EngramStore(tmp_path, fsync=False) as store:
        assert {e.id: e for e in store.all()} == {e.id: e for e in made} and not store.quarantined()
        assert relayout(store, "month").moved == 3
    assert _files(tmp_path) == sorted(month_name(e.id) for e in made)


def test_back_to_flat_for_an_unsharded_reader(tmp_path: Path) -> None:
    with EngramStore(tmp_path, fsync=False) as store:
        made = [store.add(Engram.create(f"fact {i}", created=f"202{i}-0{i + 1}-01T00:00:00Z"))[0] for i in range(4)]
    assert len({month_of(e.id) for e in made}) == 4
    res = relayout(EngramStore(tmp_path, fsync=False), "flat")
    assert res.moved == 4 and _files(tmp_path) == sorted(f"{e.id}.yaml" for e in made)
    assert [p.name for p in (tmp_path / "engrams").iterdir() if p.is_dir()] == []   # month folders removed
    # an unsharded reader: engrams/*.yaml only, each file named after its id; a version-2 manifest reader
    # refuses this manifest (version 3) and reads the files
    seen = {p.stem: Engram.from_yaml(p.read_text(encoding="utf-8")) for p in (tmp_path / "engrams").glob("*.yaml")}
    assert seen == {e.id: e for e in made}
    head = json.loads((tmp_path / "index" / "manifest-store.json").read_text().splitlines()[0])
    assert head["version"] == 3
    with EngramStore(tmp_path, fsync=False) as store:   # and this plur still reads it, and writes sharded again
        assert store.count() == 4
        e, _ = store.add(Engram.create("after the downgrade and back"))
        assert store.file_of(e.id) == store.path_for(e.id)


def test_plur_migrate_layout_on_the_command_line(run, plur_home: Path) -> None:
    _flat_store(plur_home, 3)
    r = run("migrate", "--layout", "month", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout).items() >= {"layout": "month", "moved": 3, "already": 0, "kept": 0}.items()
    r = run("migrate", "--layout", "month")
    assert r.exit_code == 0 and "moved 0 engram files into month folders (engrams/YYYY-MM/) (3 already there)" in r.stdout
    r = run("migrate", "--layout", "flat", "--to", str(plur_home))
    assert r.exit_code != 0 and "without --from/--to" in r.stderr
    r = run("migrate")
    assert r.exit_code != 0 and "--to HOME|URI" in r.stderr


def test_doctor_counts_the_flat_files_and_names_the_move(run, plur_home: Path) -> None:
    _flat_store(plur_home, 2)
    with EngramStore(plur_home, fsync=False) as store:
        store.add(Engram.create("one new note"))
    r = run("doctor", "--no-model")
    assert r.exit_code == 0, r.output
    assert "1 files in month folders, 2 in engrams/ itself" in r.stdout and "plur migrate --layout month" in r.stdout
    assert json.loads(run("doctor", "--no-model", "--json").stdout)["layout"] == {"month": 1, "flat": 2}
    run("migrate", "--layout", "month")
    assert "layout" not in run("doctor", "--no-model").stdout


def test_memory_updates_and_forgets_an_older_plurs_flat_engram_where_it_is(tmp_path: Path) -> None:
    from plur.memory import Memory

    old, other = _flat_store(tmp_path, 2)
    flat = tmp_path / "engrams" / f"{old.id}.yaml"
    with Memory(tmp_path, model="none") as mem:
        assert [h.engram.id for h in mem.recall("old fact number 0", k=1)] == [old.id]
        mem.update(old.id, statement="an old fact, now edited")
        assert "now edited" in flat.read_text(encoding="utf-8") and not mem.store.path_for(old.id).exists()
        copy = tmp_path / "engrams" / month_name(other.id)   # a month copy of the other: the flat one goes aside
        copy.parent.mkdir(exist_ok=True)
        copy.write_text(other.to_yaml(), encoding="utf-8")
        assert mem.get(other.id) == other and len(mem.store.quarantined()) == 1
        mem.forget(other.id)                                    # the month file and the quarantined flat copy
        mem.forget(old.id)
        assert mem.store.quarantined() == [] and _files(tmp_path) == []
        assert mem.recall("old fact", k=5) == []
