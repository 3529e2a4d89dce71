"""A running service never answers with settings other than the caller's (plur.service.stamp).

Real services (BM25 only, ``PLUR_MODEL=none``: no model to load), real ``plur`` processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from plur.service import autostart, daemon
from plur.service.files import pid_alive, read_service_file
from plur.service.stamp import CONFIG, ENV, drift


def plur(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    full = {**base, "HF_HUB_OFFLINE": "1", "PLUR_MODEL": "none", **env}
    return subprocess.run([sys.executable, "-m", "plur", "--home", str(home), *args], capture_output=True,
                          text=True, env=full, timeout=240)


@pytest.fixture()
def home() -> Iterator[Path]:
    h = Path(tempfile.mkdtemp(prefix="plur-stamp-", dir="/tmp")) / "home"  # short: a unix socket path
    assert plur(h, "learn", "The user's dog is called Rex.").returncode == 0
    plur(h, "learn", "Deploys go out on Thursdays.")
    yield h
    daemon.stop(h)
    shutil.rmtree(h.parent, ignore_errors=True)


@contextmanager
def _plur_env() -> Iterator[None]:
    """This process's environment as :func:`plur` gives its commands (no PLUR_* but PLUR_MODEL=none), so a
    service this process starts or waits for has the settings those commands compare against."""
    env = {**os.environ, "PLUR_MODEL": "none", "HF_HUB_OFFLINE": "1"}
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update({k: v for k, v in env.items() if not k.startswith("PLUR_") or k == "PLUR_MODEL"})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(old)


def _start(home: Path, *, auto: bool) -> dict:
    with _plur_env():
        if auto:
            door = autostart.door(home)
            assert door.state == "started", door
            client = autostart.wait(home, 300.0)
            assert client is not None
            client.close()
        else:
            daemon.start(home, port=0)
    info = read_service_file(home)
    assert info is not None and info["settings"]["env"] == {"PLUR_MODEL": "none"}
    return info


def test_drift_kinds(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = {"settings": {"config": None, "env": {"PLUR_MODEL": "none"}, "names": ["PLUR_FUSION", "PLUR_MODEL"]}}
    monkeypatch.delenv("PLUR_FUSION", raising=False)
    monkeypatch.delenv("PLUR_MODEL", raising=False)
    assert drift(home, info) == ("", "")                      # lacking a variable the service saw: no drift
    monkeypatch.setenv("PLUR_FUSION", "rrf")
    assert drift(home, info) == (ENV, "PLUR_FUSION is 'rrf' here and unset in the service")
    monkeypatch.delenv("PLUR_FUSION")
    (home / "config.toml").write_text("fusion = 'rrf'\n", encoding="utf-8")
    kind, words = drift(home, info)
    assert kind == CONFIG and "config.toml changed since the service started" in words
    assert drift(home, {"pid": 1}) == ("", "")                 # an older service wrote no stamp


def test_an_auto_started_service_is_replaced_when_config_toml_changes(home: Path) -> None:
    old = _start(home, auto=True)
    assert "via the service" in plur(home, "-v", "recall", "dog").stderr
    (home / "config.toml").write_text("stemming = false\n", encoding="utf-8")
    r = plur(home, "-v", "recall", "dogs")
    assert r.returncode == 0 and "no engrams recalled" in r.stderr, r.stdout + r.stderr  # 'dogs' is not 'dog' now
    assert f"stopped the service pid {old['pid']}" in r.stderr and "config.toml changed" in r.stderr, r.stderr
    assert not pid_alive(old["pid"])
    with _plur_env():
        client = autostart.wait(home, 300.0)   # its replacement, started with the new settings
    assert client is not None
    client.close()
    new = read_service_file(home)
    assert new["pid"] != old["pid"] and new["settings"]["config"] is not None
    again = plur(home, "-v", "recall", "dogs")
    assert f"via the service (service pid {new['pid']}" in again.stderr, again.stderr
    assert "no engrams recalled" in again.stderr and "Rex" in plur(home, "recall", "dog").stdout


def test_a_service_the_user_started_is_named_and_this_call_works_in_process(home: Path) -> None:
    info = _start(home, auto=False)
    assert "Rex" in plur(home, "recall", "dogs").stdout     # stemmed: 'dogs' finds 'dog'
    (home / "config.toml").write_text("stemming = false\n", encoding="utf-8")
    r = plur(home, "recall", "dogs")
    assert r.returncode == 0 and "no engrams recalled" in r.stderr, r.stdout + r.stderr   # the new setting applies
    assert f"the running service (pid {info['pid']}) ignores the new settings" in r.stderr
    assert "plur service stop && plur service start" in r.stderr
    assert pid_alive(info["pid"])                            # the user's service is left running


def test_a_variable_set_for_one_call_is_honoured_in_process(home: Path) -> None:
    info = _start(home, auto=False)
    plain = plur(home, "-v", "recall", "dogs", "--json")
    assert f"via the service (service pid {info['pid']}" in plain.stderr and json.loads(plain.stdout)
    r = plur(home, "-v", "recall", "dogs", "--json", PLUR_STEMMING="false")
    assert r.returncode == 0, r.stderr
    assert "PLUR_STEMMING is 'false' here and unset in the service" in r.stderr and "in-process" in r.stderr
    assert json.loads(r.stdout) == []


def test_a_folder_named_plur_where_the_user_stands_does_not_break_the_service(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m plur` puts the current folder first on sys.path: a ./plur folder shadowed the package and the
    spawned service died at import (exit 7 from `plur service start`, and every auto-start)."""
    (tmp_path / "plur").mkdir()
    (tmp_path / "plur" / "notes.txt").write_text("not a package", encoding="utf-8")
    monkeypatch.setenv("PLUR_MODEL", "none")
    monkeypatch.chdir(tmp_path)
    info = daemon.start(home, port=0)
    assert info["pid"] and pid_alive(info["pid"])
