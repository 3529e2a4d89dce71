"""Pruning the change feed on a real PostgreSQL: rows every home applied go; a home off for longer than the
retention comes back with a full resync of its derived copies instead of missing a forget."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import PACKAGED_MODEL


def _memory(tmp_path: Path, name: str, uri: str, embedder):
    from plur.memory import Memory

    return Memory(tmp_path / name, embedder=embedder, model=PACKAGED_MODEL, store=uri)


def _feed_rows(conn) -> int:
    return conn.execute("SELECT count(*) FROM plur_changes").fetchone()[0]


def _home_of(mem) -> str:
    return json.loads((mem.home / "index" / "pg-feed.json").read_text())["home"]


def test_rows_every_home_applied_are_pruned_and_nobody_resyncs(tmp_path: Path, pg_uri: str, embedder) -> None:
    import psycopg

    a, b = _memory(tmp_path, "a", pg_uri, embedder), _memory(tmp_path, "b", pg_uri, embedder)
    for i in range(5):
        a.learn(f"Fact number {i} about the greenhouse.")
    assert len(b.recall("greenhouse fact", 10, mode="bm25", record=False)) == 5
    b.close()                                                  # b records its cursor (file and plur_homes)
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        a.store.prune_changes()                                # both homes applied all: every row but the newest
        assert _feed_rows(conn) == 1
        assert a.store.prune_changes() == 0
        newest = conn.execute("SELECT max(seq) FROM plur_changes").fetchone()[0]
        # a third home, seen now, has applied the feed only up to the newest row: it holds later rows back
        conn.execute("INSERT INTO plur_homes (home, cursor) VALUES ('third-home', %s)", (newest,))
        for i in range(3):
            a.learn(f"Later greenhouse fact {i}.")
        a.store.prune_changes()
        assert conn.execute("SELECT min(seq) FROM plur_changes").fetchone()[0] == newest + 1
        assert _feed_rows(conn) == 3
    e = a.learn("The greenhouse door sticks in winter.")
    b = _memory(tmp_path, "b", pg_uri, embedder)
    assert e.id in {h.engram.id for h in b.recall("greenhouse door", 3, mode="bm25", record=False)}
    assert not b.store.take_resync()                           # its cursor was not behind the pruned rows
    a.close()
    b.close()


def test_a_home_off_longer_than_the_retention_resyncs_and_erases_what_was_forgotten(tmp_path: Path, pg_uri: str,
                                                                                   embedder) -> None:
    import psycopg

    from plur.embed.cache import text_key

    a, b = _memory(tmp_path, "a", pg_uri, embedder), _memory(tmp_path, "b", pg_uri, embedder)
    secret = a.learn("The vault combination is 31-41-59.")
    keep = a.learn("The office plant needs water on Mondays.")
    assert secret.id in {h.engram.id for h in b.recall("vault combination", 3)}   # b indexes, caches, records it
    b.close()
    b_home = _home_of(b)
    a.forget(secret.id)
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        # b has been off for two days, longer than a one-day retention; so are the feed rows
        conn.execute("UPDATE plur_homes SET seen = now() - interval '2 days' WHERE home = %s", (b_home,))
        conn.execute("UPDATE plur_changes SET at = now() - interval '2 days'")
        later = a.learn("The office coffee is decaf after 3 pm.")
        assert a.store.prune_changes(retention_s=86400.0) >= 3          # the forget's row went with the others
        assert conn.execute("SELECT count(*) FROM plur_changes WHERE op = 'removed'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM plur_homes WHERE home = %s", (b_home,)).fetchone()[0] == 0
    b = _memory(tmp_path, "b", pg_uri, embedder)
    hits = {h.engram.id for h in b.recall("vault combination office", 5, record=False)}
    assert secret.id not in hits and keep.id in hits and later.id in {
        h.engram.id for h in b.recall("office coffee decaf", 3, record=False)}
    emb = b.model_resolution().embedder
    assert emb.cache.local.get_many(emb.identity, [text_key(secret.statement)]) == {}   # the resync erased it
    assert emb.cache.local.get_many(emb.identity, [text_key(keep.statement)]) != {}
    assert secret.id not in b.stats.engram_ids()
    b.close()
    manifest = json.loads((b.home / "index" / "manifest.json").read_text())
    assert secret.id not in manifest["lexical"] and secret.id not in manifest.get("dense", {})
    for f in (b.home / "index").rglob("*"):
        if f.is_file():
            assert b"31-41-59" not in f.read_bytes(), f
    assert json.loads((b.home / "index" / "pg-feed.json").read_text())["cursor"] > 0   # saved after the resync
    a.close()


def test_a_running_store_behind_the_pruned_rows_reloads_everything(tmp_path: Path, pg_uri: str) -> None:
    import psycopg

    from plur.store.engram import Engram
    from plur.store.pg.store import PgStore

    a, b = PgStore(pg_uri, tmp_path / "a", listen=False), PgStore(pg_uri, tmp_path / "b", listen=False)
    gone, _ = a.add(Engram.create("A note that will be forgotten."))
    assert gone.id in b.by_id()
    b.refresh()
    a.delete(gone.id)
    for i in range(3):
        a.add(Engram.create(f"Note {i} written while b was not looking."))
    assert a.prune_changes(retention_s=0.0) >= 4           # b's cursor holds nothing back at zero retention
    changes = b.refresh()
    assert gone.id in changes.removed and gone.id not in b.by_id() and b.count() == 3
    assert b.take_resync()                                   # which texts went is unknown: the caller resyncs
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        assert _feed_rows(conn) == 1
    a.close()
    b.close()


def test_a_forget_on_a_home_without_a_model_erases_every_homes_chunk_vectors(tmp_path: Path, pg_uri: str,
                                                                            embedder) -> None:
    from conftest import wait_for
    from plur.embed.cache import text_key
    from plur.memory import Memory
    from plur.memory.forget import vector_keys
    from plur.store.pg.vectors import PgVectorCache

    a = _memory(tmp_path, "a", pg_uri, embedder)
    long = " ".join(f"The long runbook step {i} says to check the gauge labelled R{i} twice." for i in range(30))
    e = a.learn(long)
    assert e.id in {h.engram.id for h in a.recall("gauge labelled R7", 3, record=False)}   # a embeds its chunks
    shared = PgVectorCache(pg_uri)
    keys = sorted(shared.present(vector_keys(a, e)))                     # the chunks a embedded
    assert len(keys) > 2
    emb = a.model_resolution().embedder
    assert len(emb.cache.local.get_many(emb.identity, keys)) == len(keys)
    with Memory(tmp_path / "no-model", model="none", store=pg_uri) as b:   # cannot chunk: it has no tokenizer
        b.forget(e.id)
    assert shared.present(keys) == set()                                 # not one chunk vector left in the database
    wait_for(lambda: e.id not in {h.engram.id for h in a.recall("gauge labelled R7", 3, record=False)},
             "a to apply the forget")
    assert emb.cache.local.get_many(emb.identity, keys) == {}           # nor in a's own cache
    shared.close()
    a.close()


def test_a_database_of_schema_1_is_upgraded_in_place(tmp_path: Path, pg_uri: str) -> None:
    import psycopg

    from plur.store.engram import Engram
    from plur.store.pg.store import PgStore

    with PgStore(pg_uri, tmp_path / "a", listen=False) as a:
        kept, _ = a.add(Engram.create("Written before the upgrade."))
    with psycopg.connect(pg_uri, autocommit=True) as conn:   # what a plur of schema 1 left behind
        conn.execute("DROP TABLE plur_homes, plur_chunk_keys")
        conn.execute("UPDATE plur_meta SET value = '1' WHERE key = 'schema_version'")
    with PgStore(pg_uri, tmp_path / "b", listen=False) as b:
        assert kept.id in b.by_id()
        b.add(Engram.create("Written after it."))
        assert b.prune_changes() >= 0
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM plur_meta WHERE key = 'schema_version'").fetchone()[0] == "2"
        assert conn.execute("SELECT count(*) FROM plur_homes").fetchone()[0] >= 1
