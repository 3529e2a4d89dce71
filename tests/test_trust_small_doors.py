"""Issue 47, small doors: ``POST /api/v1/project`` takes only real project folders; ``plur doctor`` (through the
service too) and ``--discard`` handle any file name the quarantine can hold; a traceback quoting such a name
reaches ``service.log``; a cap says "too large"."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from plur.memory import Memory

pytest.importorskip("starlette")

REPO = Path(__file__).resolve().parents[1]


def _api(memory: Memory):
    from starlette.testclient import TestClient

    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api

    worker = RecallWorker(memory)
    client = TestClient(create_api(memory, worker, "tok"), raise_server_exceptions=False)
    client.headers["Authorization"] = "Bearer tok"
    return client, worker


def test_the_project_door_takes_only_an_existing_absolute_folder_outside_the_home(tmp_path: Path,
                                                                                 plur_home: Path) -> None:
    memory = Memory(plur_home, model="none")
    memory.learn("The user's dog is called Rex.")
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    (tmp_path / "line\nbreak").mkdir()          # a real folder: only its newline is refused
    refused = {"/etc": "operating system", "/": "operating system", "/proc/self": "operating system",
               str(tmp_path / "missing"): "not an existing folder", str(tmp_path / "line\nbreak"): "control character",
               "/" + "a" * 4999: "too large", str(plur_home / "engrams"): "plur's home", str(plur_home): "plur's home",
               "proj": "absolute", "": "absolute"}
    client, worker = _api(memory)
    try:
        with client:
            for folder, why in refused.items():
                r = client.post("/api/v1/project", json={"folder": folder})
                assert r.status_code == 400 and why in r.json()["error"]["message"], (folder[:80], r.text)
                assert "\n" not in r.json()["error"]["message"]
            r = client.post("/api/v1/project", json={"folder": str(tmp_path / "proj")})
            assert r.status_code == 200 and r.json()["scope"] == "project:proj" and r.json()["registered"], r.text
    finally:
        worker.close()
        memory.close()
    roots = json.loads((plur_home / "projects.json").read_text(encoding="utf-8"))["roots"]
    assert list(roots) == [os.path.realpath(tmp_path / "proj")]


#: Names a file in engrams/ may have that are not UTF-8, or hold a newline or a backslash.
ODD_NAMES = (b"x\xe9y.yaml", b"new\nline.yaml", b"back\\slash\xff.yaml", b"back\\\\xffslash.yaml")


def _drop(home: Path, name: bytes, mode: int) -> None:
    path = os.path.join(os.fsencode(home / "engrams"), name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, mode)
    os.write(fd, b"statement: [unclosed\n")
    os.close(fd)
    os.chmod(path, mode)                        # as an editor or a sync tool leaves it (0644: the usual umask)


def test_doctor_through_the_service_and_discard_handle_any_quarantined_name(run, home: Path) -> None:
    memory = Memory(home, model="none")
    memory.learn("The user's dog is called Rex.")
    for name in ODD_NAMES:
        _drop(home, name, 0o644)
    memory.list()                               # quarantines them, by their bytes
    client, worker = _api(memory)
    try:
        with client:
            r = client.get("/api/v1/doctor")
    finally:
        worker.close()
        memory.close()
    assert r.status_code == 200, r.text       # was a 500: the report named a file that is not UTF-8
    report = r.json()
    listed = [Path(q["path"]).name for q in report["quarantined"]]
    assert len(set(listed)) == len(ODD_NAMES) and all(n.isprintable() for n in listed), listed
    assert report["too_open"] and all(t.isprintable() for t in report["too_open"])
    text = run("doctor", "--no-model")
    assert text.exit_code == 0 and all(n in text.stdout for n in listed), text.stdout
    for name in listed:                         # as listed (the CLI refuses an argument that is not UTF-8)
        got = run("doctor", "--discard", name)
        assert got.exit_code == 0 and "discarded: " in got.stdout, (name, got.output)
    assert os.listdir(home / "quarantine") == []
    assert run("doctor", "--discard", "x\\zz").exit_code != 0


def test_the_listed_spelling_of_a_name_is_one_to_one_and_reversible() -> None:
    from plur.store.quarantine import shown, unshown

    names = [os.fsdecode(bytes([b])) for b in range(1, 256) if b != ord("/")]
    names += [os.fsdecode(n) for n in ODD_NAMES] + ["\\x41", "\\\\", "\u0085", "é", "我的"]
    spelt = [shown(n) for n in names]
    assert len(set(spelt)) == len(names)
    for name, s in zip(names, spelt):
        assert s.isprintable() and s.encode("utf-8") and unshown(s) == name, (name, s)
    assert unshown("a\\") is None and unshown("\\q") is None and unshown("\\xzz") is None


def test_a_traceback_quoting_a_name_that_is_not_utf8_reaches_the_service_log(tmp_path: Path) -> None:
    """The service's stderr is service.log; a strict UTF-8 stream dropped a traceback naming such a file
    (docs/security.md says tracebacks are kept)."""
    script = ("import logging\ntry:\n    from plur.cli.serve import service_stdio\n"
              "except ImportError:  # before issue 47 the service screened its streams only\n"
              "    from plur.screen.logs import screen_stdio as service_stdio\n"
              "service_stdio()\nlogging.basicConfig()\n"
              "try:\n    raise FileNotFoundError('no file ' + '\\udce9.yaml')\nexcept OSError:\n"
              "    logging.getLogger('plur.service').exception('API doctor failed')\n")
    log = tmp_path / "service.log"
    with open(log, "wb") as fh:
        subprocess.run([sys.executable, "-c", script], stdout=fh, stderr=subprocess.STDOUT, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8"})
    text = log.read_text(encoding="utf-8")
    assert "API doctor failed" in text and "Traceback" in text and "no file \\udce9.yaml" in text, text


def test_a_cap_says_too_large(tmp_path: Path, plur_home: Path) -> None:
    from plur.config import MAX_CONFIG_BYTES, load_settings
    from plur.errors import PlurError
    from plur.project.registry import MAX_BYTES, load
    from plur.store.engram import Engram
    from plur.store.safe_yaml import load_yaml

    plur_home.mkdir()
    with open(plur_home / "projects.json", "wb") as fh:   # over its 16 MiB cap: was "not valid JSON"
        fh.truncate(MAX_BYTES + 1)
    with pytest.raises(PlurError, match="projects.json is 16777217 bytes, too large") as got:
        load(plur_home)
    assert "not valid JSON" not in str(got.value)
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "config.toml").write_text("#" * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(PlurError, match="too large"):
        load_settings(tmp_path / "h")
    with pytest.raises(PlurError, match="too large"):
        load_yaml("a: b\n" * 10, max_bytes=10)
    with pytest.raises(PlurError, match="too large"):
        Engram.create("x" * 100, max_statement_bytes=10)
