#!/usr/bin/env python3
"""Fetch and verify the embedding models pinned in models.lock: :mod:`plur.embed.fetch`, which documents it.

``python -m plur.embed.fetch`` does the same wherever plur is installed (a wheel has no scripts/ folder);
this script runs it from a checkout without an install.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from plur.embed.fetch import main  # noqa: E402  (after the path tweak, so a checkout works without install)

if __name__ == "__main__":
    sys.exit(main())
