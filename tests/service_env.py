"""Start a real plur service the way a user's shell would: under a given environment (the real-host tests)."""

from __future__ import annotations

import os
from pathlib import Path

from plur.service import daemon


def start_service(home: Path, env: dict[str, str]) -> None:
    """``daemon.start(home, port=0)`` with ``env`` as this process's environment (restored after), so the
    service has the settings of the host processes the test runs with ``env``."""
    old = dict(os.environ)
    os.environ.update(env)
    try:
        daemon.start(home, port=0)
    finally:
        os.environ.clear()
        os.environ.update(old)
