"""Where the benchmark data lives: ``$PLUR_SHARED_DATA`` or ``<repo>/../shared/data`` (CI has it there)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("PLUR_SHARED_DATA") or REPO.parent / "shared" / "data")
