"""`plur service url` right after an auto-start (`plur recall` started the service, which is still loading its
model): it waits for the starting service and prints the login URL, instead of saying no service runs and
to start one (the README quickstart's last line, on a machine where the first recall auto-started it)."""

from __future__ import annotations

import json
import os
import secrets
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.errors import ServiceError
from plur.net.logincode import page_prefix
from plur.service import files
from plur.service.commands import page_login_url


def test_service_url_waits_for_a_starting_service_and_says_starting_when_it_stays_so(plur_home: Path) -> None:
    plur_home.mkdir(parents=True)
    fd = files.hold_service_lock(plur_home)       # a service that started and has not written service.json yet
    assert fd is not None
    try:
        with pytest.raises(ServiceError, match="still starting") as got:
            page_login_url(plur_home, wait_s=0)
        assert "start one" not in str(got.value)
        out: dict[str, object] = {}
        door = threading.Thread(target=lambda: out.update(
            r=CliRunner().invoke(cli, ["--home", str(plur_home), "service", "url"])))
        door.start()
        login = secrets.token_urlsafe(32)
        tmp = plur_home / "service.json.tmp"
        tmp.write_text(json.dumps({"api": files.API_VERSION, "token": secrets.token_urlsafe(16), "pid": os.getpid(),
                                   "url": "http://127.0.0.1:7777", "login": login}))
        tmp.replace(plur_home / files.SERVICE_FILE)   # the service writes it once its API answers
        door.join(timeout=120)
        r = out["r"]
        assert r.exit_code == 0, r.output
        assert r.stdout.startswith(f"http://127.0.0.1:7777{page_prefix(login)}/?login=")
    finally:
        os.close(fd)
    (plur_home / files.SERVICE_FILE).unlink()
    with pytest.raises(ServiceError, match="no plur service running"):   # none at all: said at once
        page_login_url(plur_home)
