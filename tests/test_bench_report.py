"""bench.quality.report: populations, tables, README refresh, files of a run."""

from __future__ import annotations

import json

import pytest

from bench.quality import report


def _row(qid, variant, r5, *, primary=True, scored=True, group="g1", has_target=True, level="session"):
    return {"qid": qid, "variant": variant, "primary": primary, "scored": scored, "group": group,
            "has_target": has_target, "metrics": {level: {"recall_any@5": r5, "ndcg_any@5": r5 / 2}}}


ROWS = [
    _row("q1", "bm25", 1.0), _row("q2", "bm25", 0.0, group="g2", has_target=False),
    _row("q3_abs", "bm25", 1.0, primary=False, group="abstention"),
    _row("q4", "bm25", 0.0, primary=False, scored=False, group="no-evidence"),
    _row("q1", "hybrid-rrf", 1.0), _row("q2", "hybrid-rrf", 1.0, group="g2", has_target=False),
    _row("q3_abs", "hybrid-rrf", 0.0, primary=False, group="abstention"),
    _row("q4", "hybrid-rrf", 0.0, primary=False, scored=False, group="no-evidence"),
]


def test_aggregate_populations():
    agg = report.aggregate(ROWS)
    bm25 = agg["bm25"]["session"]
    assert bm25["headline"] == {"n": 2, "metrics": {"recall_any@5": 0.5, "ndcg_any@5": 0.25}}
    assert bm25["all"]["n"] == 3 and bm25["all"]["metrics"]["recall_any@5"] == pytest.approx(2 / 3)
    assert bm25["with_target"] == {"n": 1, "metrics": {"recall_any@5": 1.0, "ndcg_any@5": 0.5}}
    assert set(bm25["groups"]) == {"g1", "g2", "abstention"}          # unscored rows are in no group
    assert agg["hybrid-rrf"]["session"]["headline"]["metrics"]["recall_any@5"] == 1.0


def test_tables_and_summary_markdown():
    agg = report.aggregate(ROWS)
    lines = report.headline_table(agg, "session")
    assert lines[0].startswith("| variant | n | R_any@1 | R_any@5")
    assert lines[2].startswith("| bm25 | 2 | - | 0.500 |")
    groups = report.group_table(agg, "session")
    assert "| g2 | 1 | 0.000 | 1.000 |" in groups
    md = report.summary_markdown({"dataset": "longmemeval", "granularity": "session", "model": {"name": "m"},
                                  "data": {"path": "x.json", "sha256": "ab" * 32, "bytes": 3}, "n_questions": 4,
                                  "n_tasks": 4, "wall_s": 1.0, "notes": ["one note"]}, agg)
    assert "abstention questions excluded" in md and "All questions, abstention included" in md
    assert "- one note" in md


def test_fusion_comparison_picks_the_better_mean():
    def run(rrf, weighted):
        return {"dataset": "d", "granularity": "session", "aggregate": {
            "hybrid-rrf": {"session": {"headline": {"n": 1, "metrics": {"ndcg_any@5": rrf}}}},
            "hybrid-weighted": {"session": {"headline": {"n": 1, "metrics": {"ndcg_any@5": weighted}}}}}}
    cmp_ = report.fusion_comparison([run(0.5, 0.6), run(0.7, 0.5)])
    assert cmp_["winner"] == "rrf" and cmp_["mean_diff"] == pytest.approx(-0.05)
    assert report.fusion_comparison([])["winner"] is None


def test_refresh_readme_touches_only_the_marked_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# t\nbefore\n{report.README_START}\nold table\n{report.README_END}\nafter\n")
    assert report.refresh_readme(readme, "| new | table |")
    assert readme.read_text() == f"# t\nbefore\n{report.README_START}\n| new | table |\n{report.README_END}\nafter\n"
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert not report.refresh_readme(plain, "x") and plain.read_text() == "no markers\n"
    assert not report.refresh_readme(tmp_path / "missing.md", "x")


def test_write_run_writes_every_file(tmp_path):
    manifest = {"dataset": "locomo", "granularity": "session", "model": {}, "data": {}, "n_questions": 4,
                "n_tasks": 1, "wall_s": 0.1}
    agg = report.write_run(tmp_path / "run", manifest, ROWS)
    files = {p.name for p in (tmp_path / "run").iterdir()}
    assert files == {"manifest.json", "per_question.jsonl", "summary.json", "summary.md", "summary.png"}
    assert (tmp_path / "run" / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = (tmp_path / "run" / "per_question.jsonl").read_text().splitlines()
    assert [json.loads(x)["qid"] for x in lines] == [r["qid"] for r in ROWS]
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == agg
