"""Settings precedence and validation: defaults < config.toml < PLUR_* env < arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from plur.config import load_settings, load_settings_reporting
from plur.errors import ConfigError


def test_precedence(plur_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plur_home.mkdir(parents=True)
    (plur_home / "config.toml").write_text("bm25_k1 = 1.2\nrrf_k = 10\nfusion = 'weighted'\n", encoding="utf-8")
    monkeypatch.setenv("PLUR_RRF_K", "20")
    s = load_settings(plur_home, fusion="rrf")
    assert (s.bm25_k1, s.rrf_k, s.fusion, s.bm25_b) == (1.2, 20, "rrf", 0.75)
    assert load_settings().home == plur_home


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"rrf_k": "sixty"}, "'sixty'"),
    ({"fusion": "max"}, "'max'"),
    ({"bm25_b": -1}, "-1"),
    ({"no_such": 1}, "'no_such'"),
    ({"stemming": "maybe"}, "'maybe'"),
])
def test_bad_values_name_the_value(plur_home: Path, kwargs: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_settings(plur_home, **kwargs)


def test_bad_toml_names_the_file(plur_home: Path) -> None:
    plur_home.mkdir(parents=True)
    (plur_home / "config.toml").write_text("bm25_k1 = = 2", encoding="utf-8")
    with pytest.raises(ConfigError, match="config.toml"):
        load_settings(plur_home)


@pytest.mark.parametrize(("content", "needle"), [
    (b"bm25_k1 = 1.2\n" + b"# padding\n" * 10_000, "over 65536 bytes"),      # not a config: refused before parsing
    (b"x = " + b"[" * 100_000 + b"]" * 100_000, "over 65536 bytes"),      # nesting bomb, big
    (b"x = " + b"[" * 20_000 + b"]" * 20_000, "not valid TOML|over"),     # nesting bomb under the cap
    (b"bm25_k1 = 1.2 \xff\n", "not valid TOML"),                          # not UTF-8
])
def test_hostile_config_files_are_one_clear_error(plur_home: Path, content: bytes, needle: str) -> None:
    plur_home.mkdir(parents=True)
    (plur_home / "config.toml").write_bytes(content)
    with pytest.raises(ConfigError, match=needle) as info:
        load_settings(plur_home)
    assert "config.toml" in str(info.value)


def test_unreadable_config_is_a_config_error(plur_home: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    plur_home.mkdir(parents=True)
    cfg = plur_home / "config.toml"
    cfg.write_text("bm25_k1 = 1.2\n", encoding="utf-8")
    cfg.chmod(0)
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(plur_home)


def test_a_listed_word_is_taken_in_any_case_and_stored_as_listed(plur_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUR_EMBED_PRECISION", " INT8 ")
    s = load_settings(plur_home, fusion="RRF", device="Cpu")
    assert (s.embed_precision, s.fusion, s.device) == ("int8", "rrf", "cpu")
    with pytest.raises(ConfigError, match="'fp8'.*float32, int8"):
        load_settings(plur_home, embed_precision="fp8")


def test_reporting_loader_lists_every_bad_value_and_keeps_the_value_below(plur_home: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    plur_home.mkdir(parents=True)
    (plur_home / "config.toml").write_text("bm25_k1 = 'x'\nrrf_k = 10\nfusion = 'rrf'\nno_such = 1\n",
                                           encoding="utf-8")
    monkeypatch.setenv("PLUR_FUSION", "max")
    s, problems = load_settings_reporting(plur_home)
    assert (s.bm25_k1, s.rrf_k, s.fusion) == (1.5, 10, "rrf")  # default, config.toml's, config.toml's under a bad env
    assert [p.split(" (from")[0] for p in problems] == ["setting bm25_k1='x'", "unknown setting 'no_such'",
                                                         "setting fusion='max'"]
    (plur_home / "config.toml").write_text("bm25_k1 = = 2", encoding="utf-8")
    s, problems = load_settings_reporting(plur_home)
    assert s.bm25_k1 == 1.5 and len(problems) == 2 and "not valid TOML" in problems[0]
    monkeypatch.delenv("PLUR_FUSION")
    (plur_home / "config.toml").write_text("rrf_k = 7\n", encoding="utf-8")
    assert load_settings_reporting(plur_home) == (load_settings(plur_home), [])
