"""Issue 38: a PostgreSQL forget that committed is reported as done, even when the database goes away right
after the commit (before: 503 "nothing was half-written, run the command again" for a forget that had
committed). A server of its own is stopped at that very point: after the transaction, before the cached
vectors' erasure."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from conftest import PACKAGED_MODEL


def test_a_forget_that_committed_is_not_reported_as_unwritten(tmp_path: Path, embedder, monkeypatch) -> None:
    pgserver = pytest.importorskip("pgserver")
    import plur.memory.forget as forgetting
    from plur.memory import Memory

    folder = tempfile.mkdtemp(prefix="plur-pg-forget-")
    server = pgserver.get_server(folder, cleanup_mode="stop")
    uri = server.get_uri()
    mem = Memory(tmp_path / "home", embedder=embedder, model=PACKAGED_MODEL, store=uri)
    try:
        e = mem.learn("The staging password rotates monthly.")
        mem.learn("Deploys happen on Tuesdays.")
        mem.recall("staging password", 3)
        original = forgetting.forget_cached_vectors
        down = []

        def outage_after_commit(m, engram):
            server.cleanup()            # the database goes away: the forget's transaction has committed
            down.append(True)
            return original(m, engram)

        monkeypatch.setattr(forgetting, "forget_cached_vectors", outage_after_commit)
        removed = mem.forget(e.id)      # done, not "nothing was half-written, run the command again"
        assert removed.id == e.id and down
        server = pgserver.get_server(folder, cleanup_mode="delete")   # back: the row is gone for good
        with Memory(tmp_path / "other", model="none", store=uri) as again:
            assert [x.statement for x in again.list()] == ["Deploys happen on Tuesdays."]
    finally:
        mem.close()
        server.cleanup()
