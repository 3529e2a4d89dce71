"""The peer bench (``python -m bench peers``, :mod:`bench.peers`): its summary, its message when a peer is
missing, and each peer's adapter on a few turns (skipped, with the install command, where the optional
extra ``compare`` is not installed: CI does not install it). Nothing here is timed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.peers import child, compare, summary

#: A LoCoMo sample of four turns (the shape plur's parser and the bench read).
SAMPLE: dict[str, Any] = {
    "sample_id": "t1",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey greyhound called Biscuit last spring."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! My weekends go to restoring an old canoe by the lake."},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister is moving to Lisbon in September for her new job."},
            {"speaker": "Bob", "dia_id": "D1:4", "text": "I finally passed the saxophone exam after three attempts."},
        ],
    },
    "qa": [{"question": "What is the name of Ann's dog?", "evidence": ["D1:1"], "category": 1}],
}


def _row(plur_s: float, peer_s: float, cold: tuple[float, float] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"load": [0.5, 0.7], "plur": {"ingest": {"s": plur_s, "cpu_s": plur_s, "turns": 10}},
                           "txtai": {"ingest": {"s": peer_s, "cpu_s": peer_s, "turns": 10}}}
    if cold:
        row["plur"]["recall"] = {"cold_s": cold[0], "warm_p50_s": 0.01, "found": 1.0}
        row["txtai"]["recall"] = {"cold_s": cold[1], "warm_p50_s": 0.1, "found": 0.5}
    return row


def test_ratios_are_per_set_then_spread_and_pooled() -> None:
    sets = [_row(1.0, 4.0, (1.0, 10.0)), _row(2.0, 4.0), _row(3.0, 4.0)]
    out = summary.summarise(sets, ["plur", "txtai"])
    r = out["ratios"]["plur/txtai ingest s"]
    assert r["p50"] == pytest.approx(0.5) and r["p10"] == pytest.approx(0.3) and r["p90"] == pytest.approx(0.7)
    assert r["pooled"] == pytest.approx(6.0 / 12.0) and r["sets"] == 3
    cold = out["ratios"]["plur/txtai recall cold s"]
    assert cold["sets"] == 1 and cold["p50"] == pytest.approx(0.1)  # only the set that recalled
    assert out["sides"]["txtai"]["evidence_found"] == pytest.approx(0.5)
    assert out["load"] == {"min": 0.5, "max": 0.7}
    assert "plur/txtai ingest s" in summary.markdown(out, "t")


def test_probe_names_the_install_of_a_missing_peer(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mempalace" else real(name, *a))
    assert child.probe(["mempalace"])["missing"] == {"mempalace": "pip install 'plur[compare]' (mempalace 3.11)"}


def test_a_missing_peer_stops_the_bench_with_its_install_command(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    jobs: list[str] = []

    def fake(python: str, job: dict[str, Any], env: Any = None) -> tuple[dict[str, Any], float]:
        jobs.append(job["job"])
        return {"versions": {}, "missing": {"mempalace": "pip install 'plur[compare]' (mempalace 3.11)"},
                "python": python}, 0.0

    monkeypatch.setattr(compare, "run_child", fake)
    assert compare.main(["--conversations", "1"]) == 2
    err = capsys.readouterr().err
    assert "mempalace is not installed" in err and "pip install 'plur[compare]'" in err and "--peers txtai" in err
    assert jobs == ["probe"]  # nothing timed, nothing prepared


@pytest.fixture(scope="session")
def chroma_minilm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged MiniLM exported for ChromaDB once per session (needs torch and chromadb)."""
    pytest.importorskip("mempalace", reason="MemPalace is not installed: pip install 'plur[compare]'")
    from bench.peers import chroma_model

    meta = chroma_model.prepare(tmp_path_factory.mktemp("peers-cache"))
    assert meta["max_abs_diff"] <= chroma_model.MAX_ABS_DIFF
    return Path(meta["path"])


def test_mempalace_adapter_files_turns_and_finds_one_by_its_words(chroma_minilm: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    from bench.peers import mempalace_side

    # the adapter points HOME, MempalaceConfig and Chroma's model folder at its own; each is put back after
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMPALACE_CONFIG_DIR", str(tmp_path))
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "DOWNLOAD_PATH", ONNXMiniLM_L6_V2.DOWNLOAD_PATH)
    out = mempalace_side.ingest(SAMPLE, tmp_path / "run", model_dir=chroma_minilm)
    assert out["turns"] == 4 and out["s"] > 0 and "onnxruntime" in out["runtime"]
    assert (tmp_path / "run" / "home" / ".mempalace").is_dir()  # its state stayed under the run's folder
    search, _ = mempalace_side.searcher(tmp_path / "run", model_dir=chroma_minilm)
    hits = search("saxophone exam attempts", 2)
    assert hits and "saxophone exam" in hits[0]


def test_txtai_adapter_indexes_turns_and_finds_one_by_its_words(tmp_path: Path) -> None:
    pytest.importorskip("txtai", reason="txtai is not installed: pip install 'plur[compare]'")
    from bench.peers import txtai_side

    out = txtai_side.ingest(SAMPLE, tmp_path, kind="hybrid")
    assert out["turns"] == 4 and "torch" in out["runtime"]
    search, _ = txtai_side.searcher(tmp_path)
    assert "Lisbon" in search("sister moving to Lisbon", 2)[0]
