"""A capture the service acknowledges survives a kill -9 of the service (plur/service/capture_journal.py):
50 concurrent queued captures (``wait`` false, what the hook and the DSH plugin send), the service killed after
30 acknowledgements while none was stored, and every acknowledged turn is in memory after the next start."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import urllib.request
from pathlib import Path

from conftest import wait_for

from plur.service.capture_journal import CaptureJournal

KEY = "ghp_" + "Wm3Qx7Rt9Zb2Yc5Vn8Kd4Lf1Hs6Gp0aJ2uE"   # made at run time, never a real key

# the real service, whose capture thread never gets to run (as if the kill came first): every queued turn is
# acknowledged and none is stored, so what the next start finds is what the journal kept (without one, nothing)
STUCK = textwrap.dedent("""
    import sys, threading
    from plur.service.capture_queue import CaptureQueue

    CaptureQueue._run = lambda self: threading.Event().wait()
    from plur.cli import main
    sys.exit(main(["--home", sys.argv[1], "serve", "--port", "0"]))
""")


def _call(info: dict, path: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(info["url"] + "/api/v1" + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {info['token']}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {}
    except (OSError, http.client.HTTPException):   # the service was killed mid-answer
        return 0, {}


def _serve(home: Path, env: dict, code: str | None) -> tuple[subprocess.Popen, dict]:
    (home / "service.json").unlink(missing_ok=True)
    args = [sys.executable, "-c", code, str(home)] if code else [
        sys.executable, "-m", "plur", "--home", str(home), "serve", "--port", "0"]
    with open(home / "service.log", "ab") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    info = wait_for(lambda: (home / "service.json").exists() and json.loads((home / "service.json").read_text()),
                    "the service to write service.json", 120)
    wait_for(lambda: _call(info, "/recall", {"query": "warm"})[0] == 200, "the service to answer", 120)
    return proc, info


def _grep(home: Path, needle: str) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_every_acknowledged_capture_survives_a_kill_of_the_service() -> None:
    home = Path(tempfile.mkdtemp(prefix="plur-cj-", dir="/tmp")) / "home"   # a short unix socket path
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    env.update(PLUR_MODEL="none", PLUR_FSYNC="0", PLUR_CAPTURE="user")
    proc, info = _serve(home, env, STUCK)
    acked: list[str] = []
    lock = threading.Lock()
    thirty = threading.Event()

    def send(i: int) -> None:
        text = f"Fact number {i}: the build server {i} lives in rack {i * 7}." + (f" Its key is {KEY}." if i == 3 else "")
        status, body = _call(info, "/capture", {"text": text, "session": "chat-kill", "turn": i, "scope": "global"})
        if status == 200 and body.get("queued"):
            with lock:
                acked.append(f"Fact number {i}:")
                if len(acked) >= 30:
                    thirty.set()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(50)]
    try:
        for t in threads:
            t.start()
        assert thirty.wait(300), f"only {len(acked)} captures were acknowledged"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for t in threads:
            t.join(180)
    with lock:
        acknowledged = list(acked)
    assert len(acknowledged) >= 30
    assert _grep(home, KEY) == [], "the journal holds the key a turn carried"   # screened before it is written

    proc, info = _serve(home, env, None)   # a plain service: it stores what the killed one acknowledged
    try:
        def stored() -> set[str]:
            status, body = _call(info, "/list", {"scope": "global", "limit": 500})
            return {e["statement"].split(" the build")[0] for e in body.get("engrams", [])} if status == 200 else set()

        wait_for(lambda: set(acknowledged) <= stored(), "every acknowledged capture to be stored", 300)
        wait_for(lambda: not any(CaptureJournal(home).folder.glob("*.json")), "the journal to empty", 120)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    assert _grep(home, KEY) == []


def test_a_half_written_or_foreign_journal_file_is_never_a_turn(tmp_path: Path) -> None:
    """A write the kill cut short (a temporary file) is removed; a file plur did not write is set aside."""
    journal = CaptureJournal(tmp_path)
    good = journal.append({"text": "The cat is called Miso.", "session": "s", "turn": 0})
    (journal.folder / ".tmp-0001.json").write_text('{"text": "half')
    (journal.folder / "0002.json").write_text("[1, 2]")
    got = list(journal.pending())
    assert [(p, e["text"]) for p, e in got] == [(good, "The cat is called Miso.")]
    assert not (journal.folder / ".tmp-0001.json").exists()
    assert (journal.folder / "0002.json.bad").exists()
    assert oct(journal.folder.stat().st_mode & 0o777) == "0o700" and oct(good.stat().st_mode & 0o777) == "0o600"
    journal.done(good)
    assert list(journal.pending()) == []
