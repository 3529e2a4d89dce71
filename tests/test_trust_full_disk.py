"""Issue 38: on a full disk ``plur forget`` still forgets (before: exit 4, "stats.db is read-only", so plur
could not free space). A real full file system: a 2 MiB tmpfs filled to the last block (needs root to
mount; skipped elsewhere)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

MARK = "zqxfullmarker"


@pytest.fixture
def full_fs():
    root = Path(tempfile.mkdtemp(prefix="plur-full-", dir="/tmp"))
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(root)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield root
    finally:
        subprocess.run(["umount", str(root)], capture_output=True)
        os.rmdir(root)


def holding(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and MARK.encode() in p.read_bytes())


def test_forget_on_a_full_disk_erases_the_engram_and_its_stats_later(full_fs: Path) -> None:
    home = full_fs / "home"
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "false",
           "HF_HUB_OFFLINE": "1"}

    def plur(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "plur", *args], env=env, capture_output=True, text=True,
                              timeout=120)

    eid = plur("learn", f"The vault word is {MARK}.").stdout.strip()
    plur("learn", "The user's dog is called Rex.")
    assert plur("recall", f"vault {MARK}", "--mode", "bm25").returncode == 0
    assert set(holding(home)) >= {"stats.db", f"engrams/{eid[4:11]}/{eid}.yaml"}
    filler = full_fs / "fill"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)   # fill the file system to its last block
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    got = plur("forget", "-y", eid)
    assert got.returncode == 0 and f"forgotten: {eid}" in got.stdout, got.stderr
    assert holding(home) in ([], ["stats.db"]), holding(home)    # the file and every saved index: gone now
    filler.unlink()                                               # space again: the next open erases the rest
    assert plur("recall", "dog", "--mode", "bm25").returncode == 0
    assert holding(home) == [] and not (home / "stats.db.forget-pending").exists()
    assert "Rex" in plur("list").stdout
