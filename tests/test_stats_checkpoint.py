"""stats.db's WAL is checkpointed by a thread of its own, never inside a recall's record (issue 49).

SQLite checkpoints in the commit that grows the WAL past 1,000 pages (a copy and an fsync); the recall whose
record made that commit waited for it: recall p99 under 4 writers, which fsync each engram they write.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from plur.stats.db import StatsDB
from plur.store import sqlite_files


def _record(db: StatsDB, n: int) -> None:
    hits = [SimpleNamespace(engram=SimpleNamespace(id=f"ENG-2026-12-07-{i:06x}"), rank=i + 1, score=0.5,
                            bm25_rank=i, dense_rank=i, below_floor="") for i in range(10)]
    for i in range(n):
        db.record_recall(agent=None, scope=None, query=f"question number {i}", mode="hybrid", latency_ms=1.0, hits=hits)


def _wal_frames(path: Path) -> int:
    """Frames in the WAL now (a PASSIVE checkpoint of a connection of our own reports them)."""
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    finally:
        conn.close()


def test_a_recall_record_never_checkpoints_in_its_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate, held = threading.Event(), threading.Event()
    behind = getattr(sqlite_files, "CheckpointBehind", None)
    if behind is not None:
        run = behind._checkpoint

        def gated(self) -> None:
            held.set()
            assert gate.wait(120)
            run(self)

        monkeypatch.setattr(behind, "_checkpoint", gated)
    db = StatsDB(tmp_path / "stats.db")
    try:
        _record(db, 400)   # ~5 WAL pages each: well past SQLite's 1,000-page autocheckpoint
        assert _wal_frames(tmp_path / "stats.db") > 1500   # no commit checkpointed (and restarted) the WAL
        assert held.wait(120)                               # a checkpoint fell due: on its own thread
    finally:
        gate.set()
        db.close()


def test_the_checkpoint_thread_keeps_the_wal_bounded(tmp_path: Path) -> None:
    db = StatsDB(tmp_path / "stats.db")
    try:
        for _ in range(10):
            _record(db, 100)
            db._checkpoints.wait()
        assert _wal_frames(tmp_path / "stats.db") < 20 * sqlite_files.CHECKPOINT_EVERY   # restarted after each
        assert db.summary()["recalls"] == 1000
    finally:
        db.close()


def test_a_table_without_its_primary_key_is_rebuilt_and_a_record_stays_whole(tmp_path: Path) -> None:
    """A record is one transaction now, so an injections table copied without its primary key (CREATE TABLE AS
    SELECT) made the whole record fail ("foreign key mismatch" on injection_engrams), not only its engram rows:
    opening the file rebuilds the table as the schema makes it, keeping its rows and the child rows."""
    path = tmp_path / "stats.db"
    db = StatsDB(path)
    db.record_injection(agent="a", engram_ids=["ENG-2026-12-07-000001"], message=None)
    db.close()
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE old AS SELECT id, ts, agent, block_hash, tokens FROM injections; "
                       "DROP TABLE injections; ALTER TABLE old RENAME TO injections;")
    conn.close()
    db = StatsDB(path)
    assert db.record_injection(agent="a", engram_ids=["ENG-2026-12-07-000002"], message=None) > 0
    db.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM injections").fetchone()[0] == 2
        assert conn.execute("SELECT count(*) FROM injection_engrams").fetchone()[0] == 2
        assert any(r[1] == "id" and r[5] for r in conn.execute("PRAGMA table_info(injections)"))
    finally:
        conn.close()
