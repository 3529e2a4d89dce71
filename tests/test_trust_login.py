"""Issue 38: another local account must not get in through the browser's cookies or a command line.

* The owner logs in in a real Chromium, then opens a page of a server of another account on another port
  of 127.0.0.1 (cookies ignore ports): no plur credential reaches it, and what did reach it opens nothing.
* ``--open`` hands the browser an owner-only file, not a login URL: the launched process's command line
  holds no token, and the login URL in the file works once.
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import wait_for
from plur.net.logincode import login_url, page_prefix
from plur.memory import Memory

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]


def _get(port: int, path: str, cookie: str | None = None, method: str = "GET",
         headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    hdrs = dict(headers or {})
    if cookie:
        hdrs["Cookie"] = cookie
    conn.request(method, path, headers=hdrs)
    resp = conn.getresponse()
    out = resp.status, resp.read().decode("utf-8", "replace"), {k.lower(): v for k, v in resp.getheaders()}
    conn.close()
    return out


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Mallory's server: records the path and Cookie header of every request, answers a small page."""

    seen: list[tuple[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        type(self).seen.append((self.path, self.headers.get("Cookie") or ""))
        body = b"<!DOCTYPE html><title>mallory</title><img src='/pixel.png'><p id=done>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def plur_page(memory: Memory):
    """The real pages (uvicorn on a free loopback port); yields ``(port, app)``."""
    import uvicorn

    from plur.web.server import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app = create_app(memory, bound_host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "uvicorn to start")
    yield sock.getsockname()[1], app
    server.should_exit = True
    thread.join(timeout=15)
    sock.close()


@pytest.fixture
def mallory():
    """Another account's HTTP server on another port of 127.0.0.1; yields ``(port, recorded requests)``."""
    _Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], _Recorder.seen
    server.shutdown()
    server.server_close()


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists() and os.environ.get("PLUR_REQUIRE_BROWSER") != "1",
                    reason="needs Debian chromium: apt-get install -y chromium")
def test_the_login_cookie_never_reaches_a_server_on_another_port(memory: Memory, plur_page, mallory,
                                                                  tmp_path: Path) -> None:
    from playwright import sync_api

    from plur.net.browser import redirect_file

    secret = memory.learn("The vault combination is 12-34-56.", scope="project:a")
    memory.learn("Deploys happen on Tuesdays.", scope="project:b")
    port, app = plur_page
    other, seen = mallory
    prefix = page_prefix(app.state.login_token)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS, headless=True)
        page = browser.new_page()
        page.set_default_timeout(30_000)
        # log in as --open does: the owner-only redirect file, then the one-time URL it holds
        opener = redirect_file(tmp_path, login_url(f"http://127.0.0.1:{port}", app.state.login_token))
        page.goto(opener.as_uri())
        page.wait_for_url(f"http://127.0.0.1:{port}{prefix}/")
        assert "vault combination" in page.content()                       # logged in: the owner's table
        page.goto(f"http://127.0.0.1:{port}{prefix}/stats")
        assert page.locator("h1").count() >= 1
        names = {c["name"]: c for c in page.context.cookies()}
        assert f"plur_auth_{port}" in names and "plur_session" in names
        assert all(c["path"] == prefix + "/" for c in names.values()), names
        # the owner now opens mallory's page on another port, and a few more of its paths
        for path in ("/", "/stats", "/w/", "/static/style.css", "/engrams/x"):
            page.goto(f"http://127.0.0.1:{other}{path}")
            page.wait_for_selector("#done", state="attached")
        wait_for(lambda: any(p == "/pixel.png" for p, _ in seen), "the page's sub-resource request")
        browser.close()
    received = [c for _, c in seen if c]
    assert not any("plur_" in c for c in received), received                 # no plur cookie left the prefix
    # mallory replays whatever arrived, and tries the old login URL form and a blind login
    for cookie in received + [""]:
        for path in ("/", "/?format=json", "/stats", f"/engrams/{secret.id}?format=json"):
            status, body, _ = _get(port, path, cookie)
            assert status == 401 and "vault" not in body, (path, status)
        status, _, _ = _get(port, f"/engrams/{secret.id}/forget", cookie, "POST",
                            {"Origin": f"http://127.0.0.1:{port}", "Content-Length": "0"})
        assert status == 401
    assert memory.get(secret.id).status == "active" and len(memory.list()) == 2


def _plur(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "HF_HUB_OFFLINE": "1", "PLUR_MODEL": "none", **(env or {})}
    return subprocess.run([sys.executable, "-m", "plur", "--home", str(home), *args], capture_output=True,
                          text=True, env=full, timeout=240)


def test_open_hands_the_browser_a_private_file_not_a_login_url_and_the_url_works_once() -> None:
    home = Path(tempfile.mkdtemp(prefix="plur-open-", dir="/tmp")) / "home"
    dumps = home.parent / "argv"
    dumps.mkdir()
    launcher = home.parent / "browser.py"    # a stand-in browser: records its own command line as ps shows it
    launcher.write_text("import os, sys\n"
                        f"n = len(os.listdir({str(dumps)!r}))\n"
                        f"open(os.path.join({str(dumps)!r}, str(n)), 'wb').write(open('/proc/self/cmdline', 'rb').read())\n")
    env = {"BROWSER": f"{sys.executable} {launcher} %s"}
    try:
        assert _plur("learn", "The vault combination is 12-34-56.", home=home).returncode == 0
        started = _plur("serve", "--daemon", "--open", "--port", "0", home=home, env=env)
        assert started.returncode == 0, started.stderr
        info = json.loads((home / "service.json").read_text())
        wait_for(lambda: len(os.listdir(dumps)) == 1, "the service's --open to launch the browser")
        url = _plur("service", "url", "--open", home=home, env=env)
        assert url.returncode == 0, url.stderr
        wait_for(lambda: len(os.listdir(dumps)) == 2, "plur service url --open to launch the browser")
        port = urlsplit(info["url"]).port
        for dump in sorted(dumps.iterdir()):
            argv = dump.read_bytes().decode("utf-8").split("\0")
            assert not any(s in a for a in argv for s in ("login=", "token=", info["login"], info["token"])), argv
            opened = Path(urlsplit(argv[-2] if argv[-1] == "" else argv[-1]).path)
            assert opened.parent == home / "open" and stat.S_IMODE(opened.stat().st_mode) == 0o600
            assert stat.S_IMODE(opened.parent.stat().st_mode) == 0o700
            link = re.search(r'url=([^"]+)"', opened.read_text()).group(1).replace("&amp;", "&")
            target = urlsplit(link)
            assert target.path == page_prefix(info["login"]) + "/" and target.query.startswith("login=")
            status, _, headers = _get(port, target.path + "?" + target.query)
            assert status == 303 and "set-cookie" in headers                    # works once
            status, body, headers = _get(port, target.path + "?" + target.query)
            assert status == 401 and "used already" in body and "set-cookie" not in headers   # replayed: no
        log = (home / "service.log").read_text()
        assert f"{page_prefix(info['login'])}/?login=" in log                   # plur serve prints a login URL
        # --open with no browser to launch says so, and where the file is
        bare = {"BROWSER": "", "DISPLAY": "", "WAYLAND_DISPLAY": "", "PATH": str(Path(sys.executable).parent)}
        none = _plur("service", "url", "--open", home=home, env=bare)
        assert none.returncode == 0 and "no web browser could be opened" in none.stderr, none.stderr
        assert f"file://{home}/open/login-" in none.stderr
    finally:
        _plur("service", "stop", home=home)
        shutil.rmtree(home.parent, ignore_errors=True)
