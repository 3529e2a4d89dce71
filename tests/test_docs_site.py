"""The documentation site as built (issue 48): nothing loaded from outside the machine, no raw Sphinx role, and a
Python reference that lists the methods a user calls.

Builds the site once per module with ``mkdocs build --strict`` (what ``scripts/docs build`` runs), into a
temporary folder. Skipped without the ``docs`` extra (``scripts/setup --dev``; ``scripts/docs`` installs it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What a page may load from another machine: nothing. (Links a reader clicks are not loads.)
EXTERNAL_LOAD = re.compile(r"""<(?:link|script|img|iframe|source)\b[^>]*\b(?:href|src)=["']?(?:https?:)?//""", re.I)
ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):(?:<code>|`)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1", "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


@pytest.mark.slow
def test_the_site_loads_nothing_from_outside_the_machine(site: Path) -> None:
    """The built site fetched Roboto from fonts.googleapis.com on every page (7 failed requests offline)."""
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 30
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, page
        assert not EXTERNAL_LOAD.findall(text), (page, EXTERNAL_LOAD.findall(text)[:3])
    for css in site.rglob("*.css"):
        assert "fonts.googleapis" not in css.read_text(encoding="utf-8", errors="replace"), css


@pytest.mark.slow
def test_the_python_reference_renders_roles_and_lists_the_methods(site: Path) -> None:
    """The reference listed 2 of Memory's methods and showed 48 raw roles (`:class:~plur.config.Settings`)."""
    text = (site / "reference" / "python" / "index.html").read_text(encoding="utf-8")
    assert not ROLE.findall(text), ROLE.findall(text)[:5]
    for page in site.rglob("*.html"):
        assert not ROLE.search(page.read_text(encoding="utf-8")), page
    ids = set(re.findall(r'id="(plur\.[\w.]+)"', text))
    for name in ("plur.memory.Memory.learn", "plur.memory.Memory.recall", "plur.memory.Memory.capture",
                 "plur.memory.Memory.update", "plur.memory.Memory.supersede", "plur.memory.Memory.forget",
                 "plur.memory.Memory.ingest", "plur.memory.Memory.history",
                 "plur.prompt.worker.RecallWorker.submit", "plur.prompt.section.MemorySection.text",
                 "plur.hosts.anthropic_memory.PlurMemoryTool", "plur.hosts.pydantic_ai.attach"):
        assert name in ids, name
    assert 'href="#plur.config.Settings"' in text  # a role became a link to what it names


def test_scripts_docs_works_after_plain_setup(tmp_path: Path) -> None:
    """`scripts/docs` needed `scripts/setup --dev` (the docs extra), which the README did not say: after a plain
    `scripts/setup` it installs that extra into .venv first (a stub interpreter records what it is asked)."""
    import shutil

    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "docs", tmp_path / "scripts" / "docs")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    stub = tmp_path / ".venv" / "bin" / "python"
    log = tmp_path / "calls.txt"
    stub.write_text(f'#!/bin/sh\necho "$*" >> {log}\n[ "$1" = "-c" ] && exit 1\nexit 0\n')
    stub.chmod(0o755)
    r = subprocess.run(["bash", str(tmp_path / "scripts" / "docs"), "build"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    assert calls[1] == "-m pip install -q -e .[docs]" and calls[2].startswith("-m mkdocs build --strict"), calls


def test_the_readme_and_getting_started_name_the_platform_ci_tests() -> None:
    """getting-started said "Linux or macOS", the README "Linux"; CI (.ci/run -> scripts/test) runs on Debian."""
    claim = "On Linux with Python 3.11 or newer (CI runs Debian on x86-64; macOS is not tested)"
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert claim in text and "Linux or macOS" not in text, page
    assert "apt-get" in (ROOT / "scripts" / "setup").read_text()  # what the claim rests on
