"""Issue 38's smaller faults: each one's door, in a real home."""

from __future__ import annotations

from pathlib import Path

import pytest

from plur.config import load_settings
from plur.errors import ConfigError


def test_relevance_floor_as_a_toml_number_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("relevance_floor = 0.3\n")
    assert float(load_settings(tmp_path).relevance_floor) == 0.3     # the line the messages suggest
    (tmp_path / "config.toml").write_text("relevance_floor = 0\n")
    assert float(load_settings(tmp_path).relevance_floor) == 0.0
    for bad in ("3", "true", "-0.5"):
        (tmp_path / "config.toml").write_text(f"relevance_floor = {bad}\n")
        with pytest.raises(ConfigError, match="relevance_floor"):
            load_settings(tmp_path)


def test_zero_width_characters_are_shown_escaped_in_list_show_and_recall(plur_home: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "false"}

    def plur(*args: str) -> str:
        got = subprocess.run([sys.executable, "-m", "plur", *args], env=env, capture_output=True, text=True,
                             timeout=120)
        assert got.returncode == 0, got.stderr
        return got.stdout

    eid = plur("learn", "Send invoices to admin\u200b@\u200bexample.com and \ufeffbilling\u2060.").strip()
    plur("learn", "The family emoji 👨\u200d👩\u200d👧 and می\u200cخواهم stay whole.")
    for out in (plur("list"), plur("show", eid), plur("recall", "invoices", "--mode", "bm25")):
        low = out.lower()   # show prints YAML, which spells \\uFEFF in capitals
        assert "admin\\u200b@\\u200bexample.com" in low and "\\ufeffbilling\\u2060" in low, out
        assert not any(c in out for c in "\u200b\ufeff\u2060"), out
    assert "👨\u200d👩\u200d👧" in plur("list")                          # emoji and scripts keep their joiners


def test_forgetting_one_note_keeps_other_notes_recall_statistics(plur_home: Path) -> None:
    from plur.memory import Memory

    with Memory(plur_home, model="none") as mem:
        kept = mem.learn("The user's dog is called Rex and loves the beach.")
        other = mem.learn("The user's dog walker comes on Tuesdays.")
        for _ in range(10):
            hits = mem.recall("what is the user's dog called", k=5, mode="bm25")
            assert {h.engram.id for h in hits} == {kept.id, other.id}
        before = mem.stats.engram_counts()[kept.id]
        mem.forget(other.id)
        after = mem.stats.engram_counts()[kept.id]
        assert after == before and after["recalls"] + after["below_floor"] == 10, (before, after)
        assert other.id not in mem.stats.engram_counts()
        queries = {r[0] for r in mem.stats._db.execute("SELECT query FROM recalls")}
        assert queries == {""}      # the query that found the forgotten note is blanked, the rows kept


def test_a_huge_recall_query_is_read_up_to_its_bound_at_every_door(memory) -> None:
    from starlette.testclient import TestClient

    from plur.memory.recall import MAX_QUERY_CHARS
    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api

    memory.learn("The user's dog is called Rex.")
    big = "what is the dog called " + "filler " * 500_000            # 3.5 MB
    hits = memory.recall(big, k=3, mode="bm25")
    assert [h.engram.statement for h in hits] == ["The user's dog is called Rex."]
    worker = RecallWorker(memory)
    try:
        with TestClient(create_api(memory, worker, "tok")) as c:
            r = c.post("/api/v1/recall", json={"query": big, "mode": "bm25"}, headers={"Authorization": "Bearer tok"})
            assert r.status_code == 200 and len(r.json()["hits"]) == 1, r.text[:200]
    finally:
        worker.close()
    lengths = [r[0] for r in memory.stats._db.execute("SELECT length(query) FROM recalls")]
    assert lengths and max(lengths) <= MAX_QUERY_CHARS, lengths     # the work and the record are bounded
