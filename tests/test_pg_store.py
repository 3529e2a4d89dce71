"""The PostgreSQL store on a real server: the folder store's rules, the change feed, two machines, outages."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from conftest import wait_for

from plur.errors import ConflictError, DatabaseUnavailableError, DuplicateError, NotFoundError, ValidationError
from plur.store.engram import Engram, engram_version



@pytest.fixture
def store(pg_uri: str, tmp_path: Path):
    from plur.store.pg.store import PgStore

    s = PgStore(pg_uri, tmp_path / "home-a")
    yield s
    s.close()


def _other(pg_uri: str, tmp_path: Path, name: str = "home-b"):
    from plur.store.pg.store import PgStore

    return PgStore(pg_uri, tmp_path / name)




def test_add_get_dedup_and_tags(store):
    a, new = store.add(Engram.create("The user's dog is called Rex.", tags=("pets",)))
    assert new and store.get(a.id) == a
    b, new2 = store.add(Engram.create("the user's   DOG is called Rex.", tags=("dogs",)))
    assert not new2 and b.id == a.id and b.tags == ("pets", "dogs")
    c, new3 = store.add(Engram.create("The user's dog is called Rex.", scope="project:x"))
    assert new3 and c.id != a.id  # dedup is per scope
    assert {e.id for e in store.all()} == {a.id, c.id}
    assert store.find_duplicate("THE USER'S DOG IS CALLED REX.").id == a.id


def test_ingest_style_batch_keeps_duplicates_and_batch_dedup(store):
    out = store.add_many([Engram.create("same turn"), Engram.create("same turn")], dedupe=False)
    assert all(new for _, new in out) and out[0][0].id != out[1][0].id
    out = store.add_many([Engram.create("x one", tags=("a",)), Engram.create("X ONE", tags=("b",))])
    assert [new for _, new in out] == [True, False]
    assert store.get(out[0][0].id).tags == ("a", "b")


def test_unknown_keys_and_awkward_values_round_trip(store, pg_uri, tmp_path):
    e = Engram.from_dict({"id": "ENG-2025-01-02-abcdef", "statement": "kept", "scope": "global",
                          "created": "2025-01-02T03:04:05Z", "x_custom": {"nested": [1, 2.5, None, True]},
                          "x_nan": math.nan, "x_intkeys": {1: "one"},
                          "source": {"kind": "conversation", "session": "s1", "turn": 3}})
    stored, _ = store.add(e)
    other = _other(pg_uri, tmp_path)
    try:
        back = other.get(stored.id)
    finally:
        other.close()
    assert back.to_yaml() == stored.to_yaml()  # NaN and the int key survive (kept as YAML text)
    assert engram_version(back) == engram_version(stored)


def test_put_conflict_duplicate_and_byte_stable(store, pg_uri, tmp_path):
    a, _ = store.add(Engram.create("alpha"))
    b, _ = store.add(Engram.create("beta"))
    v = engram_version(a)
    other = _other(pg_uri, tmp_path)
    try:
        other.put(other.get(a.id).replace(tags=("from-b",)), expected=v)   # B edits first
        with pytest.raises(ConflictError, match="changed since you opened it"):
            store.put(a.replace(statement="alpha 2"), expected=v)          # A's stale edit is refused
        assert store.get(a.id).tags == ("from-b",)                         # ...and A now sees B's edit
        with pytest.raises(DuplicateError) as exc:
            store.put(store.get(b.id).replace(statement="ALPHA"))
        assert exc.value.other_id == a.id
        same = store.get(b.id)
        assert store.put(same) is same                                     # unchanged: nothing written
        with pytest.raises(NotFoundError):
            store.put(Engram.create("never stored"))
    finally:
        other.close()
    assert ConflictError.exit_code == 8


def test_delete_erases_row_vector_and_is_seen_elsewhere(store, pg_uri, tmp_path):
    import numpy as np

    from plur.store.pg.vectors import PgVectorCache, text_key

    a, _ = store.add(Engram.create("secret to forget"))
    vectors = PgVectorCache(pg_uri)
    vectors.put_many("model-x", [(text_key(a.statement), np.ones(4, dtype=np.float32))])
    other = _other(pg_uri, tmp_path)
    try:
        assert a.id in other.refresh().added
        gone = store.delete(a.id)
        assert gone.id == a.id
        with pytest.raises(NotFoundError):
            store.get(a.id)
        changes = other.refresh()
        assert changes.removed == {a.id}
        forgotten = other.take_forgotten()
        assert [i for i, _ in forgotten] == [a.id] and text_key(a.statement) in forgotten[0][1]
        assert other.take_forgotten() == []
        assert vectors.count() == 0
        import psycopg

        with psycopg.connect(pg_uri) as conn:  # no copy of the text in any plur table
            for table in ("plur_engrams", "plur_changes", "plur_vectors", "plur_meta"):
                rows = conn.execute(f"SELECT * FROM {table}").fetchall()
                assert "secret to forget" not in repr(rows), table
    finally:
        other.close()
        vectors.close()


def test_validation_and_size_limit(pg_uri, tmp_path):
    from plur.store.pg.store import PgStore

    s = PgStore(pg_uri, tmp_path / "h", max_statement_bytes=10)
    try:
        with pytest.raises(ValidationError, match="over the limit of 10"):
            s.add(Engram.create("x" * 11))
        assert s.count() == 0
    finally:
        s.close()


def test_second_store_hears_a_write_through_listen_notify(store, pg_uri, tmp_path):
    other = _other(pg_uri, tmp_path)
    try:
        other.refresh()
        wait_for(lambda: other._feed is not None and other._feed.connected, "B's listener")
        token = other.change_token()
        t0 = time.perf_counter()
        e, _ = store.add(Engram.create("news from A"))
        wait_for(lambda: other.change_token() != token, "B's change token")
        changes = other.refresh()
        latency = time.perf_counter() - t0
        assert e.id in changes.added and other.get(e.id).statement == "news from A"
        print(f"\nA->B store propagation: {latency * 1000:.1f} ms")
    finally:
        other.close()


def test_restart_catches_up_from_the_cursor(store, pg_uri, tmp_path):
    a, _ = store.add(Engram.create("before"))
    other = _other(pg_uri, tmp_path)
    try:
        assert set(other.refresh().added) == {a.id}
        b, _ = store.add(Engram.create("while B looked away"))
        store.put(store.get(a.id).replace(tags=("t",)))
        changes = other.refresh()
        assert changes.added == {b.id} and changes.updated == {a.id}
        assert other.refresh().added == frozenset()
    finally:
        other.close()


def test_unreachable_database_is_one_clear_line(tmp_path):
    from plur.store.pg.store import PgStore

    s = PgStore("postgresql://plur:hunter2@127.0.0.1:1/nowhere", tmp_path / "h", listen=False)
    with pytest.raises(DatabaseUnavailableError) as exc:
        s.add(Engram.create("x"))
    msg = str(exc.value)
    assert "hunter2" not in msg and "127.0.0.1:1/nowhere" in msg and "\n" not in msg
    assert exc.value.exit_code == 9
    s.close()


def test_bulk_writes_take_the_copy_path_and_read_back(store, pg_uri):
    """More than 50 rows go through COPY (engrams) and COPY + upsert (vectors); the same rows come back."""
    import numpy as np

    from plur.store.pg.vectors import PgVectorCache, text_key

    out = store.add_many([Engram.create(f"bulk statement {i}", tags=("bulk",)) for i in range(120)], dedupe=False)
    fresh = _other(pg_uri, store.home.parent, "fresh")
    try:
        assert {e.id: e.to_yaml() for e, _ in out} == {e.id: e.to_yaml() for e in fresh.all()}
    finally:
        fresh.close()
    cache = PgVectorCache(pg_uri)
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((120, 8)).astype(np.float32)
    keys = [text_key(f"t{i}") for i in range(120)]
    cache.put_many("m", zip(keys, vecs))
    cache.put_many("m", zip(keys[:60], vecs[60:]))  # overwrite half, bulk again
    got = cache.get_many("m", keys)
    assert np.array_equal(got[keys[0]], vecs[60]) and np.array_equal(got[keys[119]], vecs[119])
    assert cache.count("m") == 120
    cache.close()


def test_supersede_pins_and_validity_through_memory(pg_uri, tmp_path):
    """The Memory rules that sit on the store (supersede retires, pins, ttl/validity) hold on PostgreSQL too."""
    from plur.memory import Memory

    a = Memory(tmp_path / "a", model="none", store=pg_uri)
    b = Memory(tmp_path / "b", model="none", store=pg_uri)
    try:
        old = a.learn("I live in Lisbon.", pinned=True)
        new = a.supersede(old.id, "I moved to Porto.")
        gone = a.learn("The parking permit is valid this week.", ttl="1s")
        wait_for(lambda: (b.store.refresh(), gone.id in b.store.by_id())[1], "B to see A's writes")
        assert b.get(old.id).status == "retired" and b.get(new.id).supersedes == old.id
        assert [e.id for e in b.pinned()] == [new.id]                    # the pin moved with the statement
        wait_for(lambda: not b.get(gone.id).is_current(), "the ttl to pass")
        hits = [h.engram.id for h in b.recall("where do I live parking permit", 5, mode="bm25", record=False)]
        assert new.id in hits and old.id not in hits and gone.id not in hits
    finally:
        a.close()
        b.close()
