"""Every file plur creates is 0600 and every folder 0700, whatever the umask; `plur doctor --fix` repairs an old home.

Other accounts on the machine must not read statements, recall queries (stats.db and its -wal/-shm),
embeddings, index vocabularies, the service's pid file, log and tokens, even when the home folder's
own 0700 is lost (a home copied elsewhere, or made by an older plur).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.memory import Memory
from plur.store import modes


def _modes(root: Path) -> dict[str, str]:
    """``relative path -> octal mode`` of every entry under ``root`` (links not followed), root included."""
    out = {".": f"{stat.S_IMODE(root.stat().st_mode):04o}"}
    for dirpath, dirs, names in os.walk(root):
        for name in dirs + names:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = f"{stat.S_IMODE(p.lstat().st_mode):04o}"
    return out


def _too_open(root: Path) -> dict[str, str]:
    return {k: v for k, v in _modes(root).items() if int(v, 8) & 0o077}


def _plur(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "plur", "--home", str(home), *args], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}, timeout=240)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)  # the usual default: new files 0644, new folders 0755
    try:
        yield
    finally:
        os.umask(old)


def test_everything_a_home_holds_is_owner_only_under_umask_022(memory: Memory, umask_022, tmp_path: Path) -> None:
    """In-process (a host embedding plur) and through the CLI and the service: nothing for group or others."""
    home = memory.home
    a = memory.learn("The locker code is 7731.", tags=["secret"])
    memory.learn("The user's dog is called Rex.", created="2025-01-01")
    memory.learn_many([{"statement": f"Routine note {i} about the weekly report"} for i in range(20)])
    assert memory.recall("locker code", k=3, mode="hybrid", agent="t")  # embeddings cache, stats.db, indexes
    memory.feedback(a.id, useful=True, agent="t")
    memory.reindex()
    memory.forget(memory.learn("Forget me soon.").id)
    memory.close()
    svc_home = Path(tempfile.mkdtemp(prefix="plur-modes-", dir="/tmp")) / "home"  # a short unix socket path
    try:
        shutil.copytree(home, svc_home)
        os.chmod(svc_home, 0o700)
        env = {"PLUR_MODEL": "none"}
        assert _plur(home, "learn", "Learned by the CLI.", env=env).returncode == 0
        assert _plur(home, "recall", "locker", env=env).returncode == 0
        assert _plur(home, "export", str(tmp_path / "out.jsonl"), env=env).returncode == 0
        assert _plur(home, "export", str(tmp_path / "claude"), "--format", "claude-dir", env=env).returncode == 0
        started = _plur(svc_home, "service", "start", "--port", "0", env=env)
        assert started.returncode == 0, started.stderr
        assert _plur(svc_home, "learn", "Learned through the service.", env=env).returncode == 0
        running = _too_open(svc_home)                        # service.json, service.pid, plur.sock, log
        assert _plur(svc_home, "service", "stop").returncode == 0
        from plur.mcp.auth import ensure_token
        ensure_token(home)
        assert running == {}, running
        assert _too_open(home) == {}, _too_open(home)
        assert _too_open(svc_home) == {}, _too_open(svc_home)
        assert {"stats.db", "service.log", "mcp.token", "index", "cache"} <= set(_modes(home)) | set(_modes(svc_home))
        assert any(k.startswith("cache/embeddings.sqlite") for k in _modes(home)), _modes(home)
        out = tmp_path / "out.jsonl"
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        assert _too_open(tmp_path / "claude") == {}
    finally:
        shutil.rmtree(svc_home.parent, ignore_errors=True)


def test_doctor_fix_repairs_an_older_home(plur_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home made by an older plur: 0755 folders, 0644 files. doctor names it; --fix makes it owner-only."""
    monkeypatch.setenv("PLUR_MODEL", "none")
    mem = Memory(plur_home, model="none")
    mem.learn("The locker code is 7731.")
    mem.recall("locker", k=1, agent="t")
    mem.close()
    for dirpath, dirs, names in os.walk(plur_home):
        os.chmod(dirpath, 0o755)
        for name in names:
            os.chmod(Path(dirpath) / name, 0o644)
    runner = CliRunner()
    r = runner.invoke(cli, ["--home", str(plur_home), "doctor", "--no-model"], catch_exceptions=False)
    assert r.exit_code == 0 and "other users can read" in r.stdout and "plur doctor --fix" in r.stdout, r.stdout
    report = json.loads(runner.invoke(cli, ["--home", str(plur_home), "doctor", "--no-model", "--json"]).stdout)
    assert report["home_private"] is False and "stats.db" in " ".join(report["too_open"])
    r = runner.invoke(cli, ["--home", str(plur_home), "doctor", "--no-model", "--fix"], catch_exceptions=False)
    assert r.exit_code == 0 and "made owner-only" in r.stdout, r.stdout
    assert _too_open(plur_home) == {}
    assert _modes(plur_home)["."] == "0700" and _modes(plur_home)["stats.db"] == "0600"
    r = runner.invoke(cli, ["--home", str(plur_home), "doctor", "--no-model"], catch_exceptions=False)
    assert "other users can read" not in r.stdout
    assert runner.invoke(cli, ["--home", str(plur_home), "list"]).exit_code == 0   # still a working home


def test_modes_helpers(tmp_path: Path, umask_022) -> None:
    with modes.open_private(tmp_path / "a.log", "ab") as fh:
        fh.write(b"x")
    modes.touch_private(tmp_path / "b.db")
    (tmp_path / "c").write_text("old")
    os.chmod(tmp_path / "c", 0o644)
    with modes.open_private(tmp_path / "c", "w", encoding="utf-8") as fh:   # an existing file is narrowed
        fh.write("new")
    assert {k: v for k, v in _modes(tmp_path).items() if k != "."} == {"a.log": "0600", "b.db": "0600", "c": "0600"}
    (tmp_path / "d").mkdir()
    changed = modes.repair(tmp_path)
    assert {(p.name, f"{o:04o}", f"{n:04o}") for p, o, n in changed} >= {("d", "0755", "0700")}
    assert _too_open(tmp_path) == {}
