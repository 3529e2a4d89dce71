"""The README's Python examples run as written, each in a fresh interpreter on a temp home.

The only change made to an example is the model string of a pydantic-ai ``Agent``: ``"openai:gpt-4o"``
becomes ``"test"`` (pydantic-ai's own TestModel), so no network or API key is needed. The example must
still build that ``Agent`` exactly as written otherwise; ``Agent("openai:gpt-4o")`` itself is checked to
construct (the ``host`` extra installs what that model string needs) with a dummy key.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PACKAGED_MODEL

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_the_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2, "the README's Python examples were not found (```python blocks)"


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i + 1}" for i in range(len(BLOCKS))])
def test_readme_python_example_runs(code: str, plur_home: Path) -> None:
    runnable = code.replace('Agent("openai:gpt-4o"', 'Agent("test"')
    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": PACKAGED_MODEL, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", runnable], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    # the exit-time bug of v0.1: "recall worker warm-up failed (RuntimeError: can't register atexit ...)"
    assert "Traceback" not in out.stderr and "warm-up failed" not in out.stderr, out.stderr


def test_the_readme_model_string_is_installed_by_the_host_extra() -> None:
    code = ('from pydantic_ai import Agent\nAgent("openai:gpt-4o", instructions="x")\nprint("ok")')
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "OPENAI_API_KEY": "sk-test-not-used"}, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
