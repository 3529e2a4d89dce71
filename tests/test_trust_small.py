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
