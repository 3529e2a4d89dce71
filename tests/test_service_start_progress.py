"""`plur service start` waits while a starting service progresses and stops waiting once it stalls; `plur service
stop` stops a service that is still starting (issue 49: a million-engram store took 243 s to open, the start gave
up at 180 s and the stop said the service "wrote no pid yet").

Real processes: the service is held in its start (just before it opens the indexes) by a ``sitecustomize`` on its
``PYTHONPATH`` that waits for a gate file, busy (using CPU: progress) or idle (sleeping: a stall).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plur.service.files import pid_alive
from plur.service.starting import read_starting

HOOK = '''
import os, time
_gate = os.environ.get("PLUR_TEST_GATE")
if _gate:
    import plur.memory.facade as _facade
    _real = _facade.Memory.prepare_serving

    def _held(self):
        open(_gate + ".reached", "w").close()
        while not os.path.exists(_gate):
            if os.environ.get("PLUR_TEST_GATE_MODE") == "busy":
                t = time.process_time()
                while time.process_time() - t < 0.05:
                    pass
            time.sleep(0.02)
        return _real(self)

    _facade.Memory.prepare_serving = _held
'''


@pytest.fixture()
def gated() -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """(home, gate file, environment of a service held at its gate); the service is stopped at the end."""
    base = Path(tempfile.mkdtemp(prefix="plur-gate-", dir="/tmp"))
    home, hook, gate = base / "home", base / "hook", base / "gate"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PLUR_MODEL": "none", "PLUR_TEST_GATE": str(gate),
           "PYTHONPATH": os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])}
    seeded = subprocess.run([sys.executable, "-m", "plur", "--home", str(home), "learn", "Rex loves the beach."],
                            env=env, capture_output=True, text=True, timeout=120)
    assert seeded.returncode == 0, seeded.stderr
    yield home, gate, env
    gate.touch()
    subprocess.run([sys.executable, "-m", "plur", "--home", str(home), "service", "stop"], env=env,
                   capture_output=True, timeout=120)
    shutil.rmtree(base, ignore_errors=True)


def _plur(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "plur", "--home", str(home), *args], env=env, capture_output=True,
                          text=True, timeout=120)


def _wait(cond, what: str, timeout_s: float = 120.0):  # noqa: ANN001, ANN202 - a test helper
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_start_that_keeps_progressing_is_waited_for_past_the_stall_window(gated) -> None:
    home, gate, env = gated
    env = {**env, "PLUR_TEST_GATE_MODE": "busy"}
    cli = subprocess.Popen([sys.executable, "-m", "plur", "--home", str(home), "service", "start", "--port", "0",
                            "--stall-s", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        held = _wait(lambda: (s := read_starting(home)) and s.get("phase") == "opening the indexes and the model"
                     and s, "the service to reach its gate")
        # Six more beats (0.5 s each) of a busy start: three times the 1 s stall window, and the start still waits.
        _wait(lambda: (s := read_starting(home)) and int(s["beat"]) >= int(held["beat"]) + 6, "six more beats")
        assert cli.poll() is None, cli.communicate()
        st = _plur(home, env, "service", "status")
        assert st.returncode == 0 and "starting (opening the indexes and the model" in st.stdout, st.stdout + st.stderr
        gate.touch()
        out, err = cli.communicate(timeout=120)
        assert cli.returncode == 0 and "started" in err, err
        info = json.loads((home / "service.json").read_text())
        assert info["pid"] == held["pid"] and not (home / "service.starting").exists()
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()


def test_a_stalled_start_fails_and_stop_stops_the_service_still_starting(gated) -> None:
    home, gate, env = gated
    env = {**env, "PLUR_TEST_GATE_MODE": "idle"}
    r = _plur(home, env, "service", "start", "--port", "0", "--stall-s", "1")
    assert r.returncode == 7, r.stderr
    assert "made no progress for 1 s while starting (at: opening the indexes and the model)" in r.stderr, r.stderr
    pid = int((home / "service.pid").read_text())
    assert pid_alive(pid) and not (home / "service.json").exists()   # still starting: stop must reach it
    stop = _plur(home, env, "service", "stop")
    assert stop.returncode == 0 and stop.stdout.strip() == f"stopped pid {pid}", stop.stdout + stop.stderr
    assert not pid_alive(pid)
    assert not {"service.json", "service.pid", "plur.sock", "service.starting"} & {p.name for p in home.iterdir()}


def test_memory_count_is_the_number_of_engrams_and_sees_other_writers(tmp_path: Path) -> None:
    from plur.memory import Memory

    mem = Memory(tmp_path / "home", model="none")
    other = Memory(tmp_path / "home", model="none")
    try:
        assert mem.count() == 0
        mem.learn("Rex loves the beach.")
        other.learn("Deploys happen on Tuesdays.")   # another writer: picked up by the count's scan
        assert mem.count() == len(mem.list()) == 2
    finally:
        mem.close()
        other.close()
