"""Settings precedence and validation: defaults < config.toml < PLUR_* env < arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from plur.config import load_settings
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
