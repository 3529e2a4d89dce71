"""A reader keeps up with other writers through the writer journal, without a stat of every file.

EngramStore.refresh(full=False) (what Memory uses when the folder changed) must see every write of
another plur process, a file copied in or deleted by hand, and a write whose journal name it saw
before the file was written (writers append the name first); in-place hand edits wait for the next
full scan. The stall it removes: issue 14, recall under four writers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from plur.store import mirror
from plur.store.engram import Engram
from plur.store.store import EngramStore


@pytest.fixture
def pair(tmp_path: Path):
    writer, reader = EngramStore(tmp_path, fsync=False), EngramStore(tmp_path, fsync=False)
    writer.add(Engram.create("first fact"))
    reader.refresh()  # the reader's one full scan
    yield writer, reader
    writer.close()
    reader.close()


def _count_full_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = mirror.FolderMirror._full_refresh

    def counted(self, *a, **k):
        calls[0] += 1
        return real(self, *a, **k)

    monkeypatch.setattr(mirror.FolderMirror, "_full_refresh", counted)
    return calls


def test_other_writers_are_seen_without_a_full_scan(pair, monkeypatch: pytest.MonkeyPatch) -> None:
    writer, reader = pair
    full = _count_full_scans(monkeypatch)
    added = [writer.add(Engram.create(f"fact number {i}"))[0] for i in range(20)]
    changes = reader.refresh(full=False)
    assert {e.id for e in added} <= changes.added and full[0] == 0
    edited = writer.put(added[0].replace(statement="fact number zero, edited"))
    writer.delete(added[1].id)
    changes = reader.refresh(full=False)
    assert changes.updated == {edited.id} and changes.removed == {added[1].id} and full[0] == 0
    assert reader.get(edited.id).statement == "fact number zero, edited"


def test_files_copied_in_or_deleted_by_hand_are_seen_at_once(pair, tmp_path: Path) -> None:
    writer, reader = pair
    e = Engram.create("copied in by hand")
    (tmp_path / "engrams" / f"{e.id}.yaml").write_text(e.to_yaml(), encoding="utf-8")
    assert e.id in reader.refresh(full=False).added
    first = writer.all()[0]
    writer.path_for(first.id).unlink()
    assert first.id in reader.refresh(full=False).removed


def test_a_name_seen_before_its_write_is_rechecked(pair, tmp_path: Path) -> None:
    """The journal gets the name before the file: a reader in between must look again later."""
    writer, reader = pair
    old = writer.all()[0]
    path = writer.path_for(old.id)
    with writer._lock.hold():  # a writer names the file and writes it under the lock
        with open(tmp_path / "index" / "store-journal", "ab") as f:  # what a writer does first...
            f.write(f"{path.parent.name}/{path.name}".encode() + b"\n")
        assert not reader.refresh(full=False)  # ...a reader looks now: nothing changed yet
        newer = old.replace(statement="written after the name")
        path.write_text(newer.to_yaml(), encoding="utf-8")  # ...then the write lands (same name: no new entry)
    assert reader.refresh(full=False).updated == {old.id}
    assert reader.get(old.id).statement == "written after the name"


def test_in_place_hand_edits_wait_for_the_full_scan(pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mirror, "RECENT_S", 0.0)  # the file is not among the last journal names any more
    writer, reader = pair
    e = writer.all()[0]
    path = writer.path_for(e.id)
    with open(path, "r+", encoding="utf-8") as f:  # same inode, same name: no journal line
        text = f.read().replace("first fact", "first fact, edited in place")
        f.seek(0)
        f.write(text)
    assert not reader.refresh(full=False)  # documented: the quick path does not stat every file
    assert reader.refresh(full=True).updated == {e.id}
    assert reader.get(e.id).statement == "first fact, edited in place"


def test_an_untrusted_journal_means_a_full_scan(pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer, reader = pair
    (tmp_path / "index" / "store-journal").unlink()
    full = _count_full_scans(monkeypatch)
    e = Engram.create("after the journal went away")
    (tmp_path / "engrams" / f"{e.id}.yaml").write_text(e.to_yaml(), encoding="utf-8")
    assert e.id in reader.refresh(full=False).added and full[0] == 1


def test_a_stream_of_writes_is_read_once_per_file_and_listed_boundedly(pair, monkeypatch: pytest.MonkeyPatch) -> None:
    # Under a stream of writers every recall quick-refreshes. Files another plur process wrote are
    # written by rename, so re-checking the recent ones is a stat: each is read once, even within the
    # racy window, and the O(files) folder listing runs at most every LIST_EVERY_S while the journal
    # names new writes (it ran at every refresh: recall p50 172 ms under 4 writers at 10k, issue 27).
    writer, reader = pair
    reads, listings = [0], [0]
    real_read, real_list = mirror.FolderMirror._read_file, mirror.FolderListing.list

    def read(self, name):
        reads[0] += 1
        return real_read(self, name)

    def list_names(self, root):
        listings[0] += 1
        return real_list(self, root)

    monkeypatch.setattr(mirror.FolderMirror, "_read_file", read)
    monkeypatch.setattr(mirror.FolderListing, "list", list_names)
    monkeypatch.setattr(mirror, "LIST_EVERY_S", 3600.0)
    reader.refresh(full=False)  # nothing named: lists once
    assert listings[0] == 1
    written = []
    for i in range(10):
        written += [writer.add(Engram.create(f"streamed fact {i}.{j}"))[0].id for j in range(3)]
        reader.refresh(full=False)
    assert set(written) <= {e.id for e in reader.all()}
    assert reads[0] == len(written) and listings[0] == 1
    monkeypatch.setattr(mirror, "LIST_EVERY_S", 0.0)
    e = Engram.create("copied in by hand while writers write")
    (reader.root / f"{e.id}.yaml").write_text(e.to_yaml(), encoding="utf-8")
    writer.add(Engram.create("one more streamed fact"))
    seen = reader.refresh(full=False).added       # a listing is due: taken on a thread of its own (issue 49)
    reader._behind.wait()
    monkeypatch.setattr(mirror, "LIST_EVERY_S", 3600.0)
    writer.add(Engram.create("and one more"))
    assert e.id in seen | reader.refresh(full=False).added and listings[0] == 2


def test_a_writer_settles_recent_names_once(pair, monkeypatch: pytest.MonkeyPatch) -> None:
    """Names a lock-free scan saw last are re-checked by the next write (under the lock), then settled:
    a process that only writes (capture, per-turn ingest) must not re-read them at every write."""
    writer, reader = pair
    for i in range(30):
        writer.add(Engram.create(f"fact number {i}"))
    reader.refresh()  # a lock-free full scan: the newest journal names may have been mid-write
    recent = len(reader._recent)
    assert recent >= 30
    checks = [0]
    real = mirror.FolderMirror._check_one

    def counted(self, *a, **k):
        checks[0] += 1
        return real(self, *a, **k)

    monkeypatch.setattr(mirror.FolderMirror, "_check_one", counted)
    for i in range(10):
        reader.add(Engram.create(f"the reader's own fact {i}"))
    assert checks[0] <= recent + 10, (checks[0], recent)
    assert not reader._recent


def test_a_stat_pass_taken_earlier_keeps_what_was_read_since(pair, tmp_path: Path) -> None:
    """Issue 49: a full scan's stat pass may be taken without any lock (``prescan``) and applied later; files written
    and read after the pass began are kept as read, not forgotten or re-read by the older pass."""
    writer, reader = pair
    a, _ = writer.add(Engram.create("first fact"))
    reader.refresh(full=True)
    assert reader.prescan() is not None and EngramStore(tmp_path).prescan() is None  # none before a first scan
    pre = reader.prescan()
    b, _ = writer.add(Engram.create("second fact, written after the stat pass"))
    reader.refresh(full=False)                                  # the quick path reads it
    got = reader.refresh(full=True, prescan=pre)                # the older pass has no b
    assert reader.get(b.id) == b and reader.get(a.id) == a and not got.removed
    path = writer.path_for(a.id)
    edited = path.read_text(encoding="utf-8").replace("first fact", "first fact, edited by hand")
    path.write_text(edited, encoding="utf-8")                   # in place, after a pass: the next pass sees it
    reader.refresh(full=True, prescan=reader.prescan())
    assert reader.get(a.id).statement == "first fact, edited by hand"


def test_a_listing_reads_only_the_month_folders_that_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49: another process's write moves its month folder's mtime; the quick refresh lists that folder, not
    every name of the store (a full listing is ~1.1 s of CPU at a million files), and still sees files copied in
    or deleted by hand in any month."""
    import os
    import time

    from plur.store import listing as listing_mod

    writer, reader = EngramStore(tmp_path, fsync=False), EngramStore(tmp_path, fsync=False)
    made = [writer.add(Engram.create(f"fact of month {m}", created=f"2025-{m:02d}-10T00:00:00Z"))[0] for m in range(1, 7)]
    past = time.time() - 3600   # settled folders (older than the racy window)
    for folder in [tmp_path / "engrams", *(tmp_path / "engrams").iterdir()]:
        os.utime(folder, (past, past))
    reader.refresh()
    reader.refresh(full=False)  # the first listing reads everything
    listed: list[str] = []
    real = listing_mod.os.listdir
    monkeypatch.setattr(listing_mod.os, "listdir", lambda p: (listed.append(Path(p).name), real(p))[1])
    monkeypatch.setattr(mirror, "LIST_EVERY_S", 0.0)
    assert not reader.refresh(full=False) and listed == []    # nothing moved: nothing listed
    e = Engram.create("copied by hand into March", created="2025-03-20T00:00:00Z")
    (tmp_path / "engrams" / "2025-03" / f"{e.id}.yaml").write_text(e.to_yaml(), encoding="utf-8")
    assert reader.refresh(full=False).added == {e.id} and listed == ["2025-03"]
    listed.clear()
    writer.path_for(made[4].id).unlink()                      # deleted by hand in May
    assert reader.refresh(full=False).removed == {made[4].id} and sorted(set(listed)) == ["2025-03", "2025-05"]


def _small_journal(monkeypatch: pytest.MonkeyPatch, max_bytes: int) -> None:
    """Rotate the writer journal beyond ``max_bytes`` (wherever WriterJournal.append reads its limit)."""
    monkeypatch.setitem(mirror.WriterJournal.append.__globals__, "JOURNAL_MAX_BYTES", max_bytes)


def test_a_journal_rotation_is_carried_over_without_a_full_scan(pair, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49: a writer that starts a new journal epoch hands the old one on (store-journal.prev and the new
    epoch's ``after`` line), so readers and other writers that had seen the old epoch keep to the quick path;
    before, each did a full scan (a stat of every file) at its next look, one of them inside a recall."""
    writer, reader = pair
    other = EngramStore(tmp_path, fsync=False)
    other.add(Engram.create("the other writer's first fact"))
    reader.refresh(full=False)
    _small_journal(monkeypatch, 1024)
    full = _count_full_scans(monkeypatch)
    journal = tmp_path / "index" / "store-journal"
    epoch = journal.read_bytes().split(b"\n", 1)[0]
    gone = writer.all()[0]
    added = [writer.add(Engram.create(f"fact number {i} before and after the rotation"))[0] for i in range(40)]
    writer.delete(gone.id)
    assert journal.read_bytes().split(b"\n", 1)[0] != epoch          # rotated, once
    assert (tmp_path / "index" / "store-journal.prev").is_file()
    changes = reader.refresh(full=False)
    assert {e.id for e in added} <= changes.added and gone.id in changes.removed
    other.add(Engram.create("the other writer again"))               # its sync carries over too
    assert {e.id for e in added} <= {e.id for e in other.all()} and gone.id not in {e.id for e in other.all()}
    assert full[0] == 0
    other.close()


def test_a_reader_two_rotations_behind_scans(pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer, reader = pair
    reader.refresh(full=False)
    _small_journal(monkeypatch, 512)
    full = _count_full_scans(monkeypatch)
    added = [writer.add(Engram.create(f"fact number {i} over two rotations"))[0] for i in range(40)]
    assert {e.id for e in added} <= reader.refresh(full=False).added and full[0] == 1


def test_a_missing_copy_of_the_old_epoch_means_a_full_scan(pair, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    writer, reader = pair
    reader.refresh(full=False)
    _small_journal(monkeypatch, 1024)
    added = [writer.add(Engram.create(f"fact number {i} and a lost copy"))[0] for i in range(30)]
    (tmp_path / "index" / "store-journal.prev").unlink(missing_ok=True)
    full = _count_full_scans(monkeypatch)
    assert {e.id for e in added} <= reader.refresh(full=False).added and full[0] == 1


def test_among_a_stream_of_writes_the_listing_is_not_taken_on_the_callers_thread(pair, tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49 (recall p99 under 4 writers): the once-a-second listing that finds files copied in or deleted by
    hand runs on a thread of its own while the journal names new writes (it cost a recall ~17 ms of CPU at 10k
    names); what it finds is re-checked at the next refresh after it ends, where nothing is lost or kept wrongly."""
    import threading

    writer, reader = pair
    monkeypatch.setattr(mirror, "LIST_EVERY_S", 0.0)
    reader.refresh(full=False)
    threads: list[threading.Thread] = []
    real = mirror.FolderListing.list

    def list_names(self, root):
        threads.append(threading.current_thread())
        return real(self, root)

    monkeypatch.setattr(mirror.FolderListing, "list", list_names)
    by_hand = Engram.create("copied in by hand among the stream")
    (tmp_path / "engrams" / f"{by_hand.id}.yaml").write_text(by_hand.to_yaml(), encoding="utf-8")
    deleted = writer.all()[0]
    writer.path_for(deleted.id).unlink()
    streamed = writer.add(Engram.create("a streamed fact"))[0]
    changes = reader.refresh(full=False)
    assert streamed.id in changes.added                          # the journal's names: at once
    if hasattr(reader, "_behind"):
        reader._behind.wait()
    assert threads and threading.current_thread() not in threads
    writer.add(Engram.create("another streamed fact"))
    later = reader.refresh(full=False)
    assert by_hand.id in changes.added | later.added and deleted.id in changes.removed | later.removed
    assert {e.id for e in reader.all()} == {e.id for e in EngramStore(tmp_path).all()}
    late = Engram.create("named first, written after the refresh")
    with writer._lock.hold():  # a write whose name an earlier refresh read (plur appends it first) lands: a stream
        with open(tmp_path / "index" / "store-journal", "ab") as f:
            f.write(f"{late.id[4:11]}/{late.id}.yaml\n".encode())
        reader.refresh(full=False)
        if hasattr(reader, "_behind"):
            reader._behind.wait()
        threads.clear()
        (tmp_path / "engrams" / late.id[4:11] / f"{late.id}.yaml").write_text(late.to_yaml(), encoding="utf-8")
    assert late.id in reader.refresh(full=False).added
    assert threading.current_thread() not in threads


def test_names_are_re_checked_only_until_the_write_lock_is_seen_free(pair, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49: a name the journal gave is stat'ed again at each refresh for RECENT_S (its write may not have
    landed: plur names a file first), ~200 stats a refresh under 4 writers x 10/s. A writer names and writes under
    one hold of the lock, so a refresh that finds the lock free after reading the journal checks them once more
    and is done with them; while the lock is held they are kept."""
    writer, reader = pair
    for i in range(20):
        writer.add(Engram.create(f"fact number {i}"))
    reader.refresh(full=False)
    checks = [0]
    real = mirror.FolderMirror._check_one

    def counted(self, name, stat_only=False):
        checks[0] += stat_only
        return real(self, name, stat_only)

    monkeypatch.setattr(mirror.FolderMirror, "_check_one", counted)
    one = writer.add(Engram.create("one more fact"))[0]
    assert one.id in reader.refresh(full=False).added and checks[0] == 0 and not reader._recent
    with writer._lock.hold():   # a write in flight: what the reader saw stays to be re-checked
        two = writer.add(Engram.create("a fact written while the lock is held"))[0]
        assert two.id in reader.refresh(full=False).added and reader._recent
    reader.refresh(full=False)   # the lock free again: settled
    assert not reader._recent
