"""Every runnable block of the README and the docs runs (issue 41): a renamed flag breaks CI, not a user.

A fenced block is runnable when its info string says so: ```` ```bash runnable ```` (GitHub and the docs
site show it as bash; ``scripts/docs_hooks.py`` drops the word for the site). Each one runs with ``bash -e``
in a scratch folder holding a link to the checkout's ``.venv``, with a fresh ``$HOME`` (so ``~/.plur`` is
new). Python blocks all run (tests/test_readme_examples.py); JSON blocks (host configurations) must parse.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w+)( runnable)?\n(.*?)^```$", flags=re.S | re.M)


def blocks(lang: str, runnable: bool | None = None) -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for m in FENCE.finditer(page.read_text(encoding="utf-8")):
            if m.group(1) == lang and (runnable is None or bool(m.group(2)) == runnable):
                out.append((page.relative_to(ROOT).as_posix(), m.group(3)))
    return out


RUNNABLE = blocks("bash", runnable=True)


def test_the_readme_and_the_docs_have_runnable_blocks() -> None:
    pages = {page for page, _ in RUNNABLE}
    assert {"README.md", "docs/getting-started.md", "docs/guide/cli.md"} <= pages, pages
    stray = [(p, b[:40]) for p in PAGES for b in re.findall(r"^```\w+ (?!runnable\n)\S.*$", p.read_text("utf-8"),
                                                            flags=re.M)]
    assert stray == [], f"a fence's info string other than '<lang> runnable' (typo?): {stray}"


@pytest.mark.slow
@pytest.mark.parametrize("page,code", RUNNABLE, ids=[f"{p}:{i}" for i, (p, _) in enumerate(RUNNABLE)])
def test_runnable_block_runs(page: str, code: str, tmp_path: Path) -> None:
    home, work = tmp_path / "you", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / ".venv").symlink_to(ROOT / ".venv")
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    for name in ("HF_HUB_OFFLINE", "PYTHONPATH"):
        if name in os.environ:
            env[name] = os.environ[name]
    try:
        out = subprocess.run(["bash", "-e", "-c", code], cwd=work, env=env, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, f"{page}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
        assert "Traceback" not in out.stderr, out.stderr
    finally:
        subprocess.run([str(ROOT / ".venv" / "bin" / "plur"), "service", "stop"], env=env, capture_output=True,
                       timeout=120)


@pytest.mark.parametrize("page,code", blocks("json"), ids=[p for p, _ in blocks("json")])
def test_json_blocks_parse(page: str, code: str) -> None:
    json.loads(code)
