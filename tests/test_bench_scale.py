"""bench.scale: the distractor notes are reproducible, distinct and shaped as captured turns (nothing timed)."""

from __future__ import annotations

from collections import Counter

from bench.datasets.paths import SHARED_DATA
from bench.scale.distractors import OPENERS, TURNS_PER_SESSION, distractors
from bench.scale.homes import locomo_items
from plur.store.engram import normalize_statement


def test_distractors_are_reproducible_distinct_turns_of_three_kinds() -> None:
    first = list(distractors(600, SHARED_DATA))
    assert first == list(distractors(600, SHARED_DATA))                          # seeded: the same store every run
    texts = [d["statement"] for d in first]
    assert len({normalize_statement(t) for t in texts}) == 600                   # the store would merge equal ones
    locomo = {normalize_statement(i["statement"]) for i in locomo_items()}
    assert not locomo & {normalize_statement(t) for t in texts}                  # no LoCoMo turn among them
    assert sum(t.startswith(OPENERS) for t in texts[8::10]) >= 50                # paraphrases (2 in 10)
    assert all(d["source"]["kind"] == "conversation" and d["source"]["role"] == "user" for d in first)
    sessions = Counter(d["source"]["session"] for d in first)
    assert set(sessions.values()) == {TURNS_PER_SESSION}
    assert [d["source"]["turn"] for d in first[:TURNS_PER_SESSION]] == list(range(TURNS_PER_SESSION))
    assert first[0]["created"] < first[-1]["created"]


def test_derived_vectors_sit_near_real_ones_and_never_reach_the_real_cache(tmp_path) -> None:
    import numpy as np

    from bench.scale.derived import DerivedVectors, derived_cache
    from plur.embed.cache import EmbeddingCache, text_key

    real = tmp_path / "cache"
    rng = np.random.default_rng(3)
    src = rng.standard_normal((50, 8)).astype(np.float32)
    src /= np.linalg.norm(src, axis=1, keepdims=True)
    cache = EmbeddingCache(real / "embeddings.sqlite")
    cache.put_many("m", [(text_key(f"t{i}"), v) for i, v in enumerate(src)])
    cache.close()
    copy = derived_cache(real, tmp_path / "work")
    assert copy != real and (copy / "embeddings.sqlite").exists()
    make = DerivedVectors(copy / "embeddings.sqlite", "m", 8)
    out = make(["a new chunk", "another one", "a new chunk"])
    assert out.shape == (3, 8) and np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(out[0], out[2]) and not np.array_equal(out[0], out[1])   # a function of the text alone
    best = (out @ src.T).max(axis=1)
    assert (best > 0.5).all()                                # beside a real vector, not anywhere on the sphere
    EmbeddingCache(copy / "embeddings.sqlite").put_many("m", [(text_key("derived"), out[0])])
    assert not EmbeddingCache(real / "embeddings.sqlite").get_many("m", [text_key("derived")])
