"""Issue 38: a file in ``engrams/`` whose *name* is not UTF-8 (``x\\xe9y.yaml``, as an old archive or a sync
tool leaves it) is quarantined once, by its bytes, and everything carries on: ``list``, ``recall``,
``learn`` and ``doctor`` (text and JSON) exit 0, the service's recall and the web page answer 200.
Before, each of them exited 2 with "re-save it as UTF-8" and each run added another ``.reason``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plur.memory import Memory

BAD = b"x\xe9y.yaml"


def _drop_bad_name(home: Path) -> None:
    src = next((home / "engrams").rglob("ENG-*.yaml")).read_bytes()  # in its month folder (issue 49)
    fd = os.open(os.path.join(os.fsencode(home / "engrams"), BAD), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, src)
    os.close(fd)


def _plur(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "false",
           "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "plur", *args], env=env, capture_output=True, timeout=120)


def test_a_name_that_is_not_utf8_is_quarantined_once_and_every_command_carries_on(plur_home: Path) -> None:
    assert _plur(plur_home, "learn", "The user's dog is called Rex.").returncode == 0
    _drop_bad_name(plur_home)
    for args in (["list"], ["recall", "dog", "--mode", "bm25"], ["learn", "The cat is Tom."], ["doctor"],
                 ["doctor", "--json"], ["list"]):
        got = _plur(plur_home, *args)
        assert got.returncode == 0, (args, got.stderr.decode(errors="replace"))
        assert b"re-save it as UTF-8" not in got.stderr + got.stdout, args
    doctor = json.loads(_plur(plur_home, "doctor", "--json").stdout)   # valid UTF-8 JSON, the name spelt \xNN
    assert len(doctor["quarantined"]) == 1 and doctor["quarantined"][0]["original"].endswith("x\\xe9y.yaml")
    quarantine = os.fsencode(plur_home / "quarantine")
    names = os.listdir(quarantine)
    assert len([n for n in names if n.endswith(b".reason")]) == 1, names           # once, not once per run
    assert BAD not in os.listdir(os.fsencode(plur_home / "engrams"))               # moved, by its bytes
    assert any(n.startswith(BAD + b".") and not n.endswith(b".reason") for n in names)
    listed = _plur(plur_home, "list").stdout.decode()
    assert "Rex" in listed and "Tom" in listed


def test_the_service_and_the_page_carry_on_past_a_bad_name(memory: Memory) -> None:
    from starlette.testclient import TestClient

    from conftest import web_login
    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api
    from plur.web.server import create_app

    memory.learn("The user's dog is called Rex.")
    memory.list()
    _drop_bad_name(memory.settings.home)
    worker = RecallWorker(memory)
    try:
        with TestClient(create_api(memory, worker, "tok")) as api:
            r = api.post("/api/v1/recall", json={"query": "dog", "mode": "bm25"},
                         headers={"Authorization": "Bearer tok"})
            assert r.status_code == 200 and r.json()["hits"], r.text
        with TestClient(create_app(memory), base_url="http://127.0.0.1:7777") as page:
            web_login(page)
            assert page.get("/").status_code == 200 and page.get("/?format=json").status_code == 200
    finally:
        worker.close()
    assert len([n for n in os.listdir(os.fsencode(memory.settings.home / "quarantine"))
                if n.endswith(b".reason")]) == 1
