"""Issue 38: a service whose home is deleted notices and exits, and writes nothing there on its way out
(before, it ran for hours and ``cache/``, ``index/`` and ``stats.db`` reappeared in deleted homes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import wait_for


def test_a_service_whose_home_is_deleted_exits_and_does_not_recreate_it() -> None:
    home = Path(tempfile.mkdtemp(prefix="plur-gone-", dir="/tmp")) / "home"
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none", "HF_HUB_OFFLINE": "1"}
    assert subprocess.run([sys.executable, "-m", "plur", "learn", "The dog is Rex."], env=env,
                          capture_output=True, timeout=120).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "plur", "serve", "--port", "0"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (home / "service.json").exists() or proc.poll() is not None, "the service to start")
        assert proc.poll() is None, proc.stderr.read()
        shutil.rmtree(home)
        proc.wait(timeout=120)                                         # the exit is the event waited for
        err = proc.stderr.read()
        assert proc.returncode == 0 and "was deleted or replaced; the service stops" in err, err
        assert not home.exists(), sorted(p.name for p in home.rglob("*"))   # nothing written back
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(home.parent, ignore_errors=True)
