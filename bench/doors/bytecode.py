"""Start-up benchmarks time what an installed plur costs: its modules byte-compiled, as pip leaves them.

``pip install`` writes ``__pycache__/*.pyc`` for every module; an editable checkout gets them on
first import, unless ``PYTHONDONTWRITEBYTECODE`` is set (some sandboxes and CI images set it).
Then every new process compiles each plur module it imports from source: 8-9 ms more for the hook
path alone (``plur.hooks.claude_code``: 14 ms to import without .pyc, 5.5 ms with, this machine).
The process-start benchmarks call :func:`precompile` first, so their ratios against
``python -c pass`` measure plur, not the compiler, and record whether that was needed.
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def precompile() -> dict[str, object]:
    """Byte-compile ``plur/`` (``compileall``, which writes .pyc whatever ``PYTHONDONTWRITEBYTECODE``).

    Returns:
        ``{"pythondontwritebytecode": bool, "precompiled": bool}`` for the benchmark's output.
    """
    ok = compileall.compile_dir(str(REPO / "plur"), quiet=1)
    return {"pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")), "precompiled": bool(ok)}
