"""scripts/fetch_longmemeval.py against a local HTTP server standing in for the Hugging Face endpoint."""

from __future__ import annotations

import hashlib
import http.server
import importlib.util
import threading
from functools import partial
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fetch_longmemeval.py"


@pytest.fixture
def fetch_mod():
    spec = importlib.util.spec_from_file_location("fetch_longmemeval", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def server(tmp_path, monkeypatch):
    root = tmp_path / "www"
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{httpd.server_address[1]}")
    yield root
    httpd.shutdown()
    httpd.server_close()


def _publish(fetch_mod, root: Path, payload: bytes) -> None:
    folder = root / "datasets" / fetch_mod.REPO / "resolve" / fetch_mod.REVISION
    folder.mkdir(parents=True)
    (folder / "longmemeval_oracle.json").write_bytes(payload)


def test_pins_are_the_published_ones(fetch_mod):
    assert fetch_mod.FILES["s"][1:] == (277_383_467,
                                        "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442")
    assert fetch_mod.url_for("x.json").endswith(f"/datasets/xiaowu0162/longmemeval-cleaned/resolve/"
                                                f"{fetch_mod.REVISION}/x.json")


def test_download_is_verified_then_reused(fetch_mod, server, tmp_path, monkeypatch):
    payload = b'[{"question_id": "q"}]'
    _publish(fetch_mod, server, payload)
    monkeypatch.setitem(fetch_mod.FILES, "oracle",
                        ("longmemeval_oracle.json", len(payload), hashlib.sha256(payload).hexdigest()))
    dest = tmp_path / "dest"
    path = fetch_mod.fetch("oracle", dest)
    assert path.read_bytes() == payload and not list(dest.glob("*.part"))
    (server / "datasets").rename(server / "gone")          # a second call must not need the network
    assert fetch_mod.fetch("oracle", dest) == path


def test_sha256_mismatch_deletes_the_file_and_exits(fetch_mod, server, tmp_path, monkeypatch):
    payload = b"tampered"
    _publish(fetch_mod, server, payload)
    monkeypatch.setitem(fetch_mod.FILES, "oracle", ("longmemeval_oracle.json", len(payload), "0" * 64))
    with pytest.raises(SystemExit, match="expected"):
        fetch_mod.fetch("oracle", tmp_path / "dest")
    assert list((tmp_path / "dest").iterdir()) == []
