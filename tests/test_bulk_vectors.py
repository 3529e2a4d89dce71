"""A bulk build reads the embedding cache in one range scan (plur.embed.bulk_vectors, issue 49).

The scan must answer exactly as the keyed lookups do: the same vectors for the keys present, the missing ones left
out (so the embedder embeds them), keys of another identity or written after the scan still found in the cache.
"""

from __future__ import annotations

import numpy as np
import pytest

from plur.embed.bulk_vectors import BulkVectors, scanned, worth_scanning
from plur.embed.cache import CachedEmbedder, EmbeddingCache, text_key

DIMS = 8


def _cache(tmp_path, n: int = 300) -> tuple[EmbeddingCache, dict[bytes, np.ndarray]]:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    rng = np.random.default_rng(7)
    items = {text_key(f"text {i}"): rng.standard_normal(DIMS).astype(np.float32) for i in range(n)}
    cache.put_many("model-a", items.items())
    cache.put_many("model-b", [(k, -v) for k, v in items.items()])
    cache.put_many("model-a", [(text_key("short"), np.ones(DIMS // 2, dtype=np.float32))])  # another width
    return cache, items


def test_a_scan_gives_the_vectors_the_keyed_lookups_give_and_leaves_the_missing_out(tmp_path) -> None:
    cache, items = _cache(tmp_path)
    wanted = [text_key(f"text {i}") for i in range(0, 300, 7)] + [text_key("never cached"), text_key("short")]
    with BulkVectors(cache, "model-a", DIMS) as bulk:
        assert len(bulk) == 300                                   # the identity's rows of its width, one scan
        got = bulk.get_many("model-a", wanted)
        assert set(got) == set(cache.get_many("model-a", wanted))  # "short" (another width) from the cache itself
        assert text_key("never cached") not in got                # missing: left out, as the cache does
        for k, v in cache.get_many("model-a", wanted).items():
            assert got[k].dtype == np.float32 and np.array_equal(got[k], v)
        assert np.array_equal(bulk.get_many("model-b", wanted[:1])[wanted[0]], -items[wanted[0]])  # other model
        late = text_key("written after the scan")
        cache.put_many("model-a", [(late, np.full(DIMS, 2.0, dtype=np.float32))])
        assert np.array_equal(bulk.get_many("model-a", [late])[late], np.full(DIMS, 2.0, dtype=np.float32))
        assert bulk.get_many("model-a", []) == {}


def test_an_empty_identity_scans_nothing_and_answers_from_the_cache(tmp_path) -> None:
    cache, items = _cache(tmp_path, 5)
    with BulkVectors(cache, "model-c", DIMS) as bulk:
        assert len(bulk) == 0
        assert bulk.get_many("model-c", list(items)) == {}


def test_a_scan_is_only_made_for_a_build_that_wants_a_good_share_of_the_file(tmp_path) -> None:
    cache, _ = _cache(tmp_path, 400)
    rows_worth = cache.path.stat().st_size / (8 * (4 * DIMS + 64))
    assert worth_scanning(cache, DIMS, int(rows_worth) + 1)
    assert not worth_scanning(cache, DIMS, int(rows_worth) - 1)
    assert not worth_scanning(cache, DIMS, 0)


class _Inner:
    name = identity = "model-a"
    dims = DIMS
    max_seq_length = 128

    def embed_documents(self, texts):
        return np.stack([np.full(DIMS, float(len(t)), dtype=np.float32) for t in texts])


@pytest.mark.parametrize("wanted", [300, 1])
def test_the_cached_embedder_gives_the_same_vectors_inside_a_bulk_read(tmp_path, wanted) -> None:
    cache, items = _cache(tmp_path)
    emb = CachedEmbedder(_Inner(), cache)
    texts = [f"text {i}" for i in range(0, 300, 3)] + ["not cached yet"]
    before = emb.embed_documents(texts)
    cache.put_many("model-a", [(text_key("new one"), np.zeros(DIMS, dtype=np.float32))])
    with emb.bulk_reads(wanted) as bulk:
        assert (bulk is not None) == (wanted == 300) and (emb.bulk is bulk)
        inside = emb.embed_documents(texts + ["another new one"])
    assert emb.bulk is None
    assert np.array_equal(inside[:-1], before)
    assert np.array_equal(inside[-1], np.full(DIMS, 15.0, dtype=np.float32))   # a miss still reaches the model
    assert not list(tmp_path.glob("plur-bulk-vectors-*"))                      # the scratch file is gone


def test_keys_out_of_order_are_sorted_and_still_found(tmp_path) -> None:
    cache, items = _cache(tmp_path, 50)
    with BulkVectors(cache, "model-a", DIMS) as bulk:
        perm = np.random.default_rng(3).permutation(len(bulk))        # as if SQLite had returned another order
        bulk._order, bulk._keys = perm, bulk._keys[perm]
        bulk._order = np.argsort(bulk._keys, kind="stable")
        bulk._keys = bulk._keys[bulk._order]
        bulk._order = perm[bulk._order]
        got = bulk.get_many("model-a", list(items))
    assert all(np.array_equal(got[k], v) for k, v in items.items())
