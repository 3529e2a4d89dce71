"""One license for the repository and the DSH package, and the metadata agreeing (issue 41)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_one_mit_license_for_the_repository_and_the_dsh_package() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "Permission is hereby granted, free of charge" in text
    assert (ROOT / "hosts" / "dsh" / "LICENSE").read_text(encoding="utf-8") == text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    package = json.loads((ROOT / "hosts" / "dsh" / "package.json").read_text(encoding="utf-8"))
    assert package["license"] == "MIT" and "LICENSE" in package["files"]
    lock = json.loads((ROOT / "hosts" / "dsh" / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"][""]["license"] == "MIT"


def test_the_distribution_is_not_the_pypi_project_called_plur() -> None:
    """PyPI's "plur" is a word pluralizer: the distribution is plur-memory; the import and command stay plur."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "plur-memory" and project["scripts"] == {"plur": "plur.__main__:main"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Do not `pip install plur`" in readme
