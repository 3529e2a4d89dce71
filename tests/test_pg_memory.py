"""Two homes on one PostgreSQL database (two Memory instances, the real model): what A writes, B recalls."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import PACKAGED_MODEL, wait_for
from plur.errors import ConflictError, DatabaseUnavailableError




def _memory(tmp_path: Path, name: str, uri: str, embedder):
    from plur.memory import Memory

    return Memory(tmp_path / name, embedder=embedder, model=PACKAGED_MODEL, store=uri)


@pytest.fixture
def two(tmp_path: Path, pg_uri: str, embedder):
    a = _memory(tmp_path, "home-a", pg_uri, embedder)
    b = _memory(tmp_path, "home-b", pg_uri, embedder)
    yield a, b
    a.close()
    b.close()


def _ids(hits) -> list[str]:
    return [h.engram.id for h in hits]


def test_learn_on_a_is_recalled_on_b_and_embedded_once(two, capsys):
    a, b = two
    a.learn("The team's staging database runs on port 6543.")
    a.recall("staging database port", 3, record=False)  # A embeds the text (into the shared table)
    b.recall("warm up", 3, record=False)  # B's indexes open (the text's vector comes from the table) and listen
    t0 = time.perf_counter()
    e = a.learn("Release trains leave every second Thursday at noon.")
    wait_for(lambda: e.id in _ids(b.recall("when do release trains leave", 3, mode="bm25", record=False)),
             "B to recall A's new engram")
    latency_s = time.perf_counter() - t0  # propagation + a BM25 recall (a dense query adds its embedding)
    assert e.id in _ids(b.recall("when do release trains leave", 3, record=False))
    with capsys.disabled():
        print(f"\nA learn -> B recall (bm25): {latency_s * 1000:.0f} ms")
    emb = b.model_resolution().embedder
    assert emb.cache.shared_hits >= 1      # the first text came from the database, not B's model
    assert emb.stats.misses <= 1           # B's model embedded at most the second text (when A had not yet)
    first = b.recall("staging database port", 1, mode="dense", record=False)
    assert first and "6543" in first[0].engram.statement


def test_forget_on_a_is_gone_on_b_with_its_derived_copies(two):
    from plur.embed.cache import text_key

    a, b = two
    e = a.learn("The vault combination is 31-41-59.")
    keep = a.learn("The office plant needs water on Mondays.")
    assert e.id in _ids(wait_for(lambda: b.recall("vault combination", 3), "B to recall it"))
    b.save()
    a.forget(e.id)
    wait_for(lambda: e.id not in _ids(b.recall("vault combination", 3, record=False)), "B to drop it")
    emb = b.model_resolution().embedder
    assert emb.cache.local.get_many(emb.identity, [text_key(e.statement)]) == {}
    assert emb.cache.shared.get_many(emb.identity, [text_key(e.statement)]) == {}
    assert b.stats.feedback_counts(e.id) == {"useful": 0, "not_useful": 0}
    for f in (b.home / "index").rglob("*"):
        if f.is_file():
            assert b"31-41-59" not in f.read_bytes(), f
    assert keep.id in _ids(b.recall("office plant water", 3, record=False))


def test_edits_from_both_sides_follow_the_conflict_rule(two):
    from plur.store.engram import engram_version

    a, b = two
    e = a.learn("Deploys need two approvals.")
    seen_by_a = engram_version(a.get(e.id))
    wait_for(lambda: e.id in b.store.refresh().added or e.id in b.store.by_id(), "B to see it")
    b.update(e.id, tags=["process"])
    with pytest.raises(ConflictError, match="changed since you opened it"):
        a.update(e.id, expected=seen_by_a, statement="Deploys need three approvals.")
    assert a.get(e.id).tags == ("process",) and a.get(e.id).statement == "Deploys need two approvals."


def test_database_down_one_line_nothing_lost_catch_up_after_restart(tmp_path: Path, embedder):
    import tempfile

    pgserver = pytest.importorskip("pgserver")
    folder = tempfile.mkdtemp(prefix="plur-pg-outage-")
    server = pgserver.get_server(folder, cleanup_mode="stop")  # a server of its own, to stop and restart
    uri = server.get_uri()
    a = _memory(tmp_path, "home-a", uri, embedder)
    b = _memory(tmp_path, "home-b", uri, embedder)
    try:
        kept = a.learn("Backups are kept for ninety days.")
        assert kept.id in _ids(wait_for(lambda: b.recall("how long are backups kept", 3), "B to recall it"))
        server.cleanup()  # stops it: open connections are cut, as in a real outage
        with pytest.raises(DatabaseUnavailableError) as exc:
            a.learn("Written while the database is down.")
        assert "\n" not in str(exc.value) and "unreachable" in str(exc.value) and exc.value.exit_code == 9
        with pytest.raises(DatabaseUnavailableError):
            b.recall("backups", 3)
        server = pgserver.get_server(folder, cleanup_mode="delete")  # the same database, restarted
        again = wait_for(lambda: _learn_or_none(a, "Written after the restart."), "A to write again")
        wait_for(lambda: again.id in _ids(_recall_or_none(b, "written after the restart") or []), "B to catch up")
        assert {kept.id, again.id} <= set(b.store.by_id())  # nothing lost
        assert not any(x.statement == "Written while the database is down." for x in b.list())
    finally:
        a.close()
        b.close()
        server.cleanup()


def _learn_or_none(mem, text: str):
    try:
        return mem.learn(text)
    except DatabaseUnavailableError:
        return None


def _recall_or_none(mem, query: str):
    try:
        return mem.recall(query, 3, record=False)
    except DatabaseUnavailableError:
        return None


def test_a_home_that_was_off_during_a_forget_erases_its_copies_when_back(tmp_path: Path, pg_uri: str, embedder):
    from plur.embed.cache import EmbeddingCache, text_key

    a = _memory(tmp_path, "home-a", pg_uri, embedder)
    b = _memory(tmp_path, "home-b", pg_uri, embedder)
    e = a.learn("The alarm code for the lab is 8812.")
    assert e.id in _ids(wait_for(lambda: b.recall("alarm code lab", 3), "B to recall it"))
    b.feedback(e.id, True)
    identity = b.model_resolution().embedder.identity
    b.close()                                             # B is off ...
    a.forget(e.id)                                        # ... while A forgets
    cache = b.cache_dir / "embeddings.sqlite"
    with EmbeddingCache(cache) as c:
        assert c.get_many(identity, [text_key(e.statement)])  # B's copy is still there
    b2 = _memory(tmp_path, "home-b", pg_uri, embedder)     # B comes back
    try:
        assert e.id not in _ids(b2.recall("alarm code lab", 3, record=False))
        with EmbeddingCache(cache) as c:
            assert c.get_many(identity, [text_key(e.statement)]) == {}
        assert b2.stats.feedback_counts(e.id) == {"useful": 0, "not_useful": 0}
        for f in (b2.home / "index").rglob("*"):
            if f.is_file():
                assert b"8812" not in f.read_bytes(), f
    finally:
        a.close()
        b2.close()
