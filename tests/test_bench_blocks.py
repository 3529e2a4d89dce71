"""The benchmark's block measurement (bench.quality.blocks) and floor replay (bench.quality.floor), on literal inputs."""

from __future__ import annotations

from plur.index.floor import Floor, mark
from plur.index.recall import Hit
from plur.store.engram import Engram

from bench.quality.blocks import block_fields, block_means, block_markdown
from bench.quality.floor import choose, evaluate, replay


def _hits(scores: list[float]) -> tuple[list[Hit], dict[str, list[str]]]:
    hits, docs_of = [], {}
    for i, s in enumerate(scores):
        e = Engram.create(f"note number {i}")
        hits.append(Hit(engram=e, score=s, rank=i + 1))
        docs_of[e.id] = [f"D1:{i}"]
    return hits, docs_of


def test_block_fields_count_notes_gold_and_tokens_with_and_without_the_floor() -> None:
    hits, docs_of = _hits([0.9, 0.8, 0.2, 0.1])
    hits = mark(hits, Floor(0.5, 0.0, "test"))
    got = block_fields(hits, docs_of, {"D1:0", "D1:2"}, recall_k=3, budget_tokens=2000, now="2024-05-01T10:00:00")
    assert got["block"]["notes"] == 2 and got["block"]["gold_notes"] == 1 and got["block"]["kept_out"] == 1
    assert got["block_nofloor"]["notes"] == 3 and got["block_nofloor"]["gold_notes"] == 2
    assert got["block"]["tokens"] < got["block_nofloor"]["tokens"]
    assert [c[1] for c in got["candidates"]] == [1, 0, 1] and [c[3] for c in got["candidates"]] == [0, 0, 1]
    assert len(got["scores"]) == 4


def test_block_means_precision_over_nonempty_blocks_recall_over_gold() -> None:
    rows = [{"n_gold": 2, "block": {"notes": 4, "gold_notes": 1, "gold_ids": 1, "tokens": 100}},
            {"n_gold": 1, "block": {"notes": 0, "gold_notes": 0, "gold_ids": 0, "tokens": 0}},
            {"n_gold": 0, "block": {"notes": 2, "gold_notes": 0, "gold_ids": 0, "tokens": 50}}]
    m = block_means(rows)
    assert m["n"] == 3 and m["notes"] == 2.0 and m["tokens"] == 50.0
    assert m["precision"] == (0.25 + 0.0) / 2 and m["recall"] == (0.5 + 0.0) / 2 and m["empty"] == 1 / 3
    rows2 = [dict(r, block_nofloor=r["block"], primary=True) for r in rows]
    table = block_markdown(rows2, [("all", lambda r: True)])
    assert table[2].startswith("| all | 3 | 2.000 | 50.0 |") and table[2].endswith("| 1.000 | 0.000 |")


def test_replay_follows_the_budget_and_the_rule() -> None:
    cands = [[0.9, 1, 40, 0], [0.5, 0, 40, 0], [0.45, 1, 5000, 0], [0.3, 1, 40, 0]]
    assert replay(cands, lambda s, t: True, 2000)[:2] == (3, 2)  # the 5000-token note never fits
    assert replay(cands, lambda s, t: s >= 0.6 * t, 2000)[:2] == (1, 1)
    assert replay([[0.1, 0, 40, 0]], lambda s, t: s >= 0.2, 2000) == (0, 0, 0)


def test_choose_takes_the_largest_ratio_keeping_enough_gold_then_a_free_absolute_floor() -> None:
    rows = [{"candidates": [[0.9, 1, 40, 0], [0.5, 0, 40, 0], [0.4, 0, 40, 0]]},
            {"candidates": [[0.8, 0, 40, 0], [0.7, 1, 40, 0], [0.2, 0, 40, 0]]}]
    a, r, m = choose(rows, gold_kept=1.0)
    assert r == 0.86 and a == 0.7  # 0.7 >= 0.86 x 0.8 keeps the second gold (0.88 would not); 0.70: last free floor
    assert m["gold_kept"] == 1.0 and evaluate(rows, lambda s, t: s >= a and s >= r * t)["notes"] == 1.5
