"""Issue 49: a due full scan works out which files changed without the Memory's lock (the stat pass and the
comparison with what the store knows), and applies only the files it named under the lock. A change another
process makes while the pass runs must not be lost: neither by the pass (it re-checks what it named against the
disk, under the lock) nor by the folder token (kept from before the pass, so the next call catches up)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from plur.memory import Memory
from plur.memory import freshness
from plur.store import folder_scan, mirror
from plur.store.engram import Engram
from plur.store.layout import twin
from plur.store.store import EngramStore

KINDS = ("add", "edit", "delete", "rename")


def _change(kind: str, by: str, home: Path, known: list[Engram]) -> tuple[str, str | None]:
    """Make one change as another process would (``by``: ``writer``, a plur store of its own, or ``hand``);
    returns (the engram id it touched, its statement on disk now or None when it is gone)."""
    root = home / "engrams"
    if by == "writer":
        with EngramStore(home, fsync=False) as other:
            if kind == "add":
                e, _ = other.add(Engram.create("written while the stat pass ran"))
                return e.id, e.statement
            if kind == "edit":
                e = other.put(other.get(known[0].id).replace(statement="edited while the stat pass ran"))
                return e.id, e.statement
            if kind == "delete":
                other.delete(known[1].id)
                return known[1].id, None
            name = other.file_of(known[2].id).relative_to(root).as_posix()  # another layout: plur migrate's move
            os.replace(root / name, root / twin(name))
            other._writes.append(twin(name))
            return known[2].id, known[2].statement
    if kind == "add":
        e = Engram.create("copied in by hand while the stat pass ran")
        (root / f"{e.id}.yaml").write_text(e.to_yaml(), encoding="utf-8")
        return e.id, e.statement
    if kind == "edit":  # an editor's save: a new file renamed over the old one
        path = next(root.rglob(f"{known[0].id}.yaml"))
        text = path.read_text(encoding="utf-8").replace(known[0].statement, "edited by hand while the pass ran")
        tmp = path.with_name("editor-save.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        return known[0].id, "edited by hand while the pass ran"
    if kind == "delete":
        next(root.rglob(f"{known[1].id}.yaml")).unlink()
        return known[1].id, None
    path = next(root.rglob(f"{known[2].id}.yaml"))
    os.replace(path, root / twin(path.relative_to(root).as_posix()))
    return known[2].id, known[2].statement


@pytest.mark.parametrize("by", ["writer", "hand"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_change_made_while_the_stat_pass_runs_is_not_lost(plur_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                             kind: str, by: str, when: str) -> None:
    """The change comes just before or just after the pass stats the folder; the scan is applied under the lock,
    then the next call (the full scan not due) must show the disk as it is."""
    mem = Memory(plur_home, refresh_interval_s=3600.0)
    known = [mem.learn(f"fact number {i} about the garden") for i in range(4)]
    freshness.scan(mem, force=True)                        # the first full scan, in the call
    real = folder_scan.scan_folder
    touched: list[tuple[str, str | None]] = []

    def pass_with_a_change(root: Path):
        if touched:  # the other store's own first scan, or a later one
            return real(root)
        if when == "before":
            touched.append(("", ""))
            touched[0] = _change(kind, by, plur_home, known)
        got = real(root)
        if when == "after":
            touched.append(("", ""))
            touched[0] = _change(kind, by, plur_home, known)
        return got

    monkeypatch.setattr(folder_scan, "scan_folder", pass_with_a_change)
    freshness._scan_behind(mem)                            # the pass off the lock, the named files under it
    monkeypatch.setattr(folder_scan, "scan_folder", real)
    freshness.scan(mem)                                    # the next call: no full scan due
    (engram_id, statement), = touched
    held = mem.store.by_id().get(engram_id)
    if kind == "edit" and by == "hand" and when == "after":  # in place, after its stat: the next full scan's
        assert held is not None
        freshness.scan(mem, force=True)
        held = mem.store.by_id().get(engram_id)
    assert (held.statement if held is not None else None) == statement
    with EngramStore(plur_home, fsync=False) as fresh:     # and nothing else differs from the disk
        assert {e.id: e.statement for e in fresh.all()} == {e.id: e.statement for e in mem.store.all()}
    mem.close()


def test_the_lock_is_held_only_for_the_files_the_pass_named(plur_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Applying a stat pass checks the files it found changed, not every file the store holds."""
    mem = Memory(plur_home, refresh_interval_s=3600.0)
    known = [mem.learn(f"fact number {i} about the garden") for i in range(30)]
    for path in (plur_home / "engrams").rglob("*.yaml"):  # written an hour ago: none is racy when read
        os.utime(path, ns=(time.time_ns() - 3600 * 10**9,) * 2)
    freshness.scan(mem, force=True)
    with EngramStore(plur_home, fsync=False) as other:
        other.put(other.get(known[5].id).replace(statement="edited elsewhere"))
    checked: list[str] = []
    real = mirror.FolderMirror._check_one

    def counted(self, name: str, *a, **k):
        checked.append(name)
        return real(self, name, *a, **k)

    monkeypatch.setattr(mirror.FolderMirror, "_check_one", counted)
    pre = mem.store.prescan()
    assert [Path(n).stem for n in pre.names] == [known[5].id]
    with mem._lock:
        changes = mem.store.refresh(full=True, prescan=pre)
    assert changes.updated == {known[5].id} and [Path(n).stem for n in checked] == [known[5].id]
    assert mem.store.get(known[5].id).statement == "edited elsewhere"
    mem.close()
