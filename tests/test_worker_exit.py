"""A RecallWorker left open when the interpreter exits: a clean exit, no warm-up error, no lost rows.

Each case runs a real script in a fresh interpreter (the bug lives in interpreter shutdown: a daemon
recall thread importing lazily after ``threading._shutdown`` began raised "can't register atexit
after shutdown", printed as "recall worker warm-up failed").
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import PACKAGED_MODEL


def _run(script: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PLUR_HOME=str(home), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True,
                          text=True, timeout=180)


def test_exit_while_the_worker_warms_up_the_model_is_silent(plur_home: Path) -> None:
    # The warm-up loads the real model (torch imports concurrent.futures) while the main thread exits.
    out = _run(f"""
        import logging
        logging.basicConfig(level=logging.WARNING)
        from plur import Memory
        from plur.prompt import RecallWorker
        mem = Memory(model={PACKAGED_MODEL!r})
        mem.learn("The staging cluster is called kestrel.")
        worker = RecallWorker(mem)
        worker.submit("a1", "which cluster?")
        print("done")
    """, plur_home)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
    assert "warm-up failed" not in out.stderr and "atexit" not in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "WARNING" not in out.stderr, out.stderr


def test_exit_with_a_queued_injection_writes_it_before_stats_db_closes(plur_home: Path) -> None:
    out = _run("""
        import logging
        logging.basicConfig(level=logging.WARNING)
        from plur import Memory
        from plur.prompt import MemorySection, RecallWorker
        mem = Memory(model="none")
        mem.learn("The staging cluster is called kestrel.")
        worker = RecallWorker(mem)
        assert "kestrel" in worker.warm("a1", "staging cluster")
        assert "kestrel" in MemorySection(worker).text("a1")   # queues the injection notice; exit at once
    """, plur_home)
    assert out.returncode == 0, out.stderr
    assert "WARNING" not in out.stderr and "Traceback" not in out.stderr, out.stderr
    with sqlite3.connect(plur_home / "stats.db") as db:
        assert db.execute("SELECT COUNT(*) FROM injections WHERE agent = 'a1'").fetchone()[0] == 1
