"""The local service: a real `plur service start` process on a temp home, real HTTP and a real unix socket."""

from __future__ import annotations

import importlib.util
import http.client
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from plur.errors import NotFoundError, ValidationError
from plur.net.logincode import login_url, page_prefix
from plur.service.client import Client
from plur.service.files import pid_alive

PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
ROUTES = [("GET", "/api/v1/status"), ("GET", "/api/v1/schema"), ("POST", "/api/v1/recall"), ("POST", "/api/v1/block"),
          ("POST", "/api/v1/agents/a/submit"), ("GET", "/api/v1/agents/a/block"), ("DELETE", "/api/v1/agents/a"),
          ("POST", "/api/v1/learn"), ("GET", "/api/v1/engrams/ENG-2025-01-01-aaaaaa"), ("POST", "/api/v1/forget"),
          ("POST", "/api/v1/feedback"), ("GET", "/api/v1/doctor"), ("GET", "/api/v1/no-such-route")]


def plur(*args: str, home: Path, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run the real `plur` command in a fresh process."""
    full = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "plur", "--home", str(home), *args], capture_output=True,
                          text=True, env=full, timeout=timeout)


def short_home() -> Path:
    """A home under /tmp: a unix socket path must stay under ~100 bytes (pytest's tmp_path can be longer)."""
    return Path(tempfile.mkdtemp(prefix="plur-svc-", dir="/tmp")) / "home"


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[Path, dict]]:
    """One real service (packaged model) for the module; stopped, and checked clean, at the end."""
    home = short_home()
    # The settings every test's own `plur` runs with (conftest's per-test env: capture off), so the CLI
    # finds a service with its own settings; a module fixture starts before conftest's monkeypatch.
    env = {"PLUR_MODEL": PACKAGED_MODEL, "PLUR_CAPTURE": "off"}
    seeded = plur("learn", "The user's dog is called Rex and loves the beach.", "--scope", "project:a", home=home)
    assert seeded.returncode == 0, seeded.stderr
    plur("learn", "Deploys to production happen on Tuesdays.", "--scope", "project:b", home=home)
    plur("learn", "The user prefers green tea over coffee.", home=home)
    started = plur("service", "start", "--port", "0", home=home, env=env)
    assert started.returncode == 0, started.stderr + started.stdout
    info = json.loads((home / "service.json").read_text())
    yield home, info
    stopped = plur("service", "stop", home=home)
    assert stopped.returncode == 0 and f"stopped pid {info['pid']}" in stopped.stdout, stopped.stderr
    assert not pid_alive(info["pid"]), "`plur service stop` returned while the process still ran"
    left = sorted(p.name for p in home.iterdir())
    assert not {"service.json", "plur.sock", "service.pid"} & set(left), left
    shutil.rmtree(home.parent, ignore_errors=True)


def raw(info: dict, method: str, path: str, body: object = None, token: str | None = None,
        via: str = "http") -> tuple[int, dict]:
    """One request with http.client, over loopback TCP or the unix socket, with or without a token."""
    if via == "http":
        u = urlsplit(info["url"])
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    else:
        conn = http.client.HTTPConnection("localhost", timeout=30)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(info["socket"])
        conn.sock = sock
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    out = json.loads(resp.read() or b"{}")
    assert "set-cookie" not in {k.lower() for k, _ in resp.getheaders()}  # the API never uses cookies
    conn.close()
    return resp.status, out


def test_service_json_and_socket_are_private(service: tuple[Path, dict]) -> None:
    home, info = service
    assert set(info) == {"api", "version", "pid", "url", "socket", "token", "login", "started", "idle_exit_s", "settings"}
    assert info["idle_exit_s"] == 0 and info["settings"]["env"] == {"PLUR_MODEL": PACKAGED_MODEL, "PLUR_CAPTURE": "off"}
    assert info["login"] != info["token"] and len(info["login"]) >= 43
    assert info["api"] == 1 and info["socket"] == str(home / "plur.sock") and info["url"].startswith("http://127.0.0.1:")
    assert stat.S_IMODE((home / "service.json").stat().st_mode) == 0o600
    st = (home / "plur.sock").stat()
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert (home / "service.pid").read_text().strip() == str(info["pid"])


@pytest.mark.parametrize("via", ["http", "socket"])
def test_every_route_needs_the_token(service: tuple[Path, dict], via: str) -> None:
    _, info = service
    for method, path in ROUTES:
        for token in (None, "wrong-" + info["token"], info["token"][:-1]):
            code, body = raw(info, method, path, {}, token=token, via=via)
            assert code == 401 and body["error"]["type"] == "AuthError", (method, path, token, body)
    code, body = raw(info, "GET", "/api/v1/status", token=info["token"], via=via)
    assert code == 200 and body["pid"] == info["pid"]


def test_browser_pages_keep_their_own_guards(service: tuple[Path, dict]) -> None:
    _, info = service
    u = urlsplit(info["url"])
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", "/", headers={"Host": "evil.example"})
    assert conn.getresponse().status == 400                        # DNS-rebinding guard unchanged
    conn.close()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", "/?format=json")
    resp = conn.getresponse()                                      # not logged in: 401 naming the command
    assert resp.status == 401 and "plur service url" in json.loads(resp.read())["error"]
    conn.close()
    home = service[0]
    got = plur("service", "url", home=home)
    prefix = page_prefix(info["login"])
    assert got.returncode == 0 and got.stdout.strip().startswith(f"{info['url']}{prefix}/?login="), got.stderr
    assert info["login"] not in got.stdout                         # a one-time code, not the secret
    login = urlsplit(got.stdout.strip()).path + "?" + urlsplit(got.stdout.strip()).query
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", login)
    resp = conn.getresponse()                                      # the login URL: a cookie, then the page
    cookie = resp.getheader("set-cookie") or ""
    assert resp.status == 303 and resp.getheader("location") == prefix + "/", resp.read()
    assert cookie.startswith(f"plur_auth_{u.port}=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert f"Path={prefix}/;" in cookie
    conn.close()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", login)                                     # the same URL again (history, a log): no
    resp = conn.getresponse()
    assert resp.status == 401 and b"used already" in resp.read() and not resp.getheader("set-cookie")
    conn.close()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", prefix + "/?format=json", headers={"Cookie": cookie.split(";")[0]})
    resp = conn.getresponse()
    assert resp.status == 200 and "plur_session=" in (resp.getheader("set-cookie") or "")
    assert len(json.loads(resp.read())["rows"]) >= 3


def test_status_and_recall(service: tuple[Path, dict]) -> None:
    home, info = service
    c = Client(info)
    st = c.status()
    assert st["api"] == 1 and st["home"] == str(home) and st["engrams"] >= 3
    assert st["model"]["name"] == PACKAGED_MODEL and st["version"]
    assert st["model"]["query_runtime"] == ("onnx" if importlib.util.find_spec("onnxruntime") else "torchscript")
    got = c.recall("what is my dog called?", k=2, scope="project:a")
    assert got["took_ms"] > 0 and 1 <= len(got["hits"]) <= 2
    top = got["hits"][0]
    assert set(top) >= {"rank", "score", "bm25_rank", "dense_rank", "engram"} and top["rank"] == 1
    assert "Rex" in top["engram"]["statement"]
    assert all(h["engram"]["scope"] in ("project:a", "global") for h in got["hits"])
    bm25 = c.recall("Tuesdays production", mode="bm25")["hits"]
    assert bm25 and bm25[0]["dense_rank"] is None and "Tuesdays" in bm25[0]["engram"]["statement"]
    st = c.status()   # after a dense recall: the index is open and its catch-up state is reported
    assert st["quarantined"] == 0
    assert st["index"]["open"] is True and st["index"]["pending_dense"] == 0 and st["index"]["catching_up"] is False


@pytest.mark.parametrize("via", ["socket", "http"])
def test_a_client_outlives_the_servers_keep_alive_timeout(service: tuple[Path, dict], via: str) -> None:
    _, info = service
    c = Client(info if via == "socket" else {**info, "socket": None})
    assert c.recall("what is my dog called?", k=1)["hits"]
    first = c._conn
    time.sleep(5.5)   # uvicorn closes a kept-alive connection after 5 s idle (timeout_keep_alive)
    assert c.recall("what is my dog called?", k=1)["hits"]      # reopened and sent again, no error
    assert c._conn is not first
    c.close()


@pytest.mark.parametrize("body, named", [
    ({"query": "x", "k": "ten"}, "'ten'"), ({"query": "x", "k": -1}, "-1"), ({"query": "x", "k": True}, "True"),
    ({"query": "x", "mode": "fuzzy"}, "'fuzzy'"), ({"query": "x", "scope": "bad scope"}, "'bad scope'"),
    ({"query": 5}, "5"), ({}, "'query'"), ({"query": "x", "top_k": 3}, "'top_k'"), ({"query": "x", "k": 5000}, "5000"),
])
def test_recall_bad_arguments_are_400_naming_the_value(service: tuple[Path, dict], body: dict, named: str) -> None:
    _, info = service
    code, out = raw(info, "POST", "/api/v1/recall", body, token=info["token"])
    assert code == 400 and out["error"]["type"] == "ValidationError" and named in out["error"]["message"], out


def test_bad_json_and_bad_method(service: tuple[Path, dict]) -> None:
    _, info = service
    code, out = raw(info, "POST", "/api/v1/recall", b"{not json", token=info["token"])
    assert code == 400 and "not valid JSON" in out["error"]["message"]
    code, out = raw(info, "POST", "/api/v1/recall", [1, 2], token=info["token"])
    assert code == 400 and "must be an object" in out["error"]["message"]
    code, out = raw(info, "GET", "/api/v1/recall", token=info["token"])
    assert code == 405 and "GET" in out["error"]["message"]
    code, out = raw(info, "GET", "/api/v1/nope", token=info["token"])
    assert code == 404 and out["error"]["type"] == "NotFoundError"


def test_block_renders_now(service: tuple[Path, dict]) -> None:
    _, info = service
    c = Client(info)
    got = c.block("agent-1", "what does the user drink?", scope="project:b")
    assert got["agent_id"] == "agent-1" and "green tea" in got["text"] and "Rex" not in got["text"]
    assert got["hash"].startswith("sha256:") and got["tokens"] > 0 and got["engram_ids"]
    assert isinstance(got["took_ms"], float) and got["took_ms"] >= 0
    with pytest.raises(ValidationError, match="'agent_id'"):
        c.block("", "x")
    with pytest.raises(ValidationError, match="'agent_id' is required"):
        c.request("POST", "/block", {"query": "x"})


def test_a_block_fetched_to_inject_counts_as_an_injection(service: tuple[Path, dict]) -> None:
    """DSH's section fetches its block with inject: true; a preview (plur section) does not count."""
    import sqlite3

    home, info = service
    c = Client(info)

    def injections() -> list[tuple[str, int]]:
        with sqlite3.connect(home / "stats.db") as db:
            return db.execute("SELECT agent, tokens FROM injections WHERE agent LIKE 'inj-%' ORDER BY id").fetchall()

    c.block("inj-preview", "what does the user drink?", scope="project:b")
    assert injections() == []
    got = c.request("POST", "/block", {"agent_id": "inj-host", "query": "what does the user drink?",
                                       "scope": "project:b", "inject": True})
    assert injections() == [("inj-host", got["tokens"])]
    got = c.request("POST", "/block", {"agent_id": "inj-host", "query": "zzqx telescope", "inject": True})
    assert "Memory overview" in got["text"] and not got["engram_ids"]  # nothing clears the floor: the overview
    assert injections()[1:] == [("inj-host", got["tokens"])]           # which reached the prompt too


def _wait_block(c: Client, agent: str, until, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        got = c.agent_block(agent)
        if until(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_submit_then_block_refreshes_and_keeps_scopes_apart(service: tuple[Path, dict]) -> None:
    _, info = service
    c = Client(info)
    assert c.agent_block("fresh-agent") == {"agent_id": "fresh-agent", "text": "", "hash": "", "engram_ids": [],
                                            "tokens": 0, "quarantined": 0}
    code, out = raw(info, "POST", "/api/v1/agents/a-1/submit", {"text": "the dog and the beach", "scope": "project:a"},
                    token=info["token"])
    assert code == 202 and out == {"queued": True}
    first = _wait_block(c, "a-1", lambda b: "Rex" in b["text"])
    assert "Rex" in first["text"] and "Tuesdays" not in first["text"]
    unchanged = c.status()["worker"]["unchanged"]
    c.submit("a-1", "the dog and the beach", scope="project:a")       # same block: hash-gated, unchanged
    deadline = time.monotonic() + 60                                  # wait for the event, not for 0.5 s
    while c.status()["worker"]["unchanged"] == unchanged:
        assert time.monotonic() < deadline, "the worker never ran the second recall"
        time.sleep(0.05)
    assert c.agent_block("a-1")["hash"] == first["hash"]
    c.submit("b-1", "when are deploys", scope="project:b")
    second = _wait_block(c, "b-1", lambda b: "Tuesdays" in b["text"])
    assert "Tuesdays" in second["text"] and "Rex" not in second["text"]
    assert c.agent_block("a-1")["hash"] == first["hash"]               # agents do not see each other
    assert c.request("DELETE", "/agents/a-1") == {"dropped": "a-1"}
    assert c.agent_block("a-1")["text"] == ""
    for body, named in (({"text": "  "}, "non-blank"), ({"text": "x", "scope": "nope"}, "'nope'"), ({}, "'text'")):
        code, out = raw(info, "POST", "/api/v1/agents/z/submit", body, token=info["token"])
        assert code == 400 and named in out["error"]["message"], out
    st = c.status()
    assert st["worker"]["submitted"] >= 3 and st["worker"]["published"] >= 2


def test_learn_feedback_forget(service: tuple[Path, dict]) -> None:
    home, info = service
    c = Client(info)
    got = c.learn("The user's cat is called Mia.", scope="project:a", tags=["pets"], type="user")
    e = got["engram"]
    assert got["created"] is True and e["type"] == "user" and e["tags"] == ["pets"]
    assert (home / "engrams" / e['id'][4:11] / f"{e['id']}.yaml").is_file()
    again = c.learn("The user's cat is called Mia.", scope="project:a")
    assert again["created"] is False and again["engram"]["id"] == e["id"]
    assert c.recall("cat name", k=1, scope="project:a")["hits"][0]["engram"]["id"] == e["id"]  # indexed at once
    assert c.engram(e["id"])["engram"]["statement"] == "The user's cat is called Mia."
    assert c.feedback(e["id"], True, agent_id="a-1", query="cat") == {"id": e["id"], "useful": 1, "not_useful": 0}
    assert c.feedback(e["id"], False) == {"id": e["id"], "useful": 1, "not_useful": 1}
    code, out = raw(info, "POST", "/api/v1/feedback", {"id": e["id"], "useful": "yes"}, token=info["token"])
    assert code == 400 and "'yes'" in out["error"]["message"]
    code, out = raw(info, "POST", "/api/v1/learn", {"statement": "x", "type": "gossip"}, token=info["token"])
    assert code == 400 and "gossip" in out["error"]["message"]
    assert c.forget(e["id"]) == {"forgotten": e["id"], "quarantined": 0}
    assert not (home / "engrams" / e['id'][4:11] / f"{e['id']}.yaml").exists()
    with pytest.raises(NotFoundError):
        c.forget(e["id"])
    code, out = raw(info, "POST", "/api/v1/forget", {"id": "../../etc/passwd"}, token=info["token"])
    assert code == 404 and out["error"]["type"] == "InvalidIdError"


def test_hand_edits_and_other_processes_stay_coherent(service: tuple[Path, dict]) -> None:
    """A learn by a CLI process that bypasses the service is recalled by the service."""
    home, info = service
    bypass = plur("learn", "Quarterly planning happens in the Zanzibar room.", home=home,
                  env={"PLUR_HOME": str(home)})
    assert bypass.returncode == 0
    time.sleep(0.05)
    hits = Client(info).recall("Zanzibar room", mode="bm25")["hits"]
    assert hits and "Zanzibar" in hits[0]["engram"]["statement"]


def test_the_first_recall_after_another_process_learned_ranks_by_meaning_too(service: tuple[Path, dict]) -> None:
    """Issue 27 (4e): engrams another process learned while the service ran are embedded before its
    next recall answers (a short queue, under recall_embed_batch), not found by BM25 alone."""
    from plur.memory import Memory

    home, info = service
    c = Client(info)
    c.recall("warm the dense leg", k=1)
    with Memory(home, model=PACKAGED_MODEL) as other:   # bypasses the service, as a script would
        new = [other.learn(t) for t in ("The user keeps bees on the roof.", "The bees make lavender honey.",
                                         "The hive was bought in Porto.")]
    top = c.recall("what insects does the user look after", k=3)["hits"][0]  # no word in common with the note
    assert top["engram"]["id"] == new[0].id and top["dense_rank"] == 1, top


def test_cli_uses_the_running_service(service: tuple[Path, dict]) -> None:
    home, info = service
    c = Client(info)
    before = c.status()["served"]
    r = plur("-v", "recall", "dog beach", "-k", "3", "--json", home=home)
    assert r.returncode == 0, r.stderr
    assert f"recall: via the service (service pid {info['pid']}, unix socket {home / 'plur.sock'})" in r.stderr
    assert "Rex" in json.loads(r.stdout)[0]["engram"]["statement"]
    s = plur("-v", "section", "what does the user drink", "--agent", "cli-agent", home=home)
    assert s.returncode == 0 and "green tea" in s.stdout and "section: via the service" in s.stderr
    learned = plur("-v", "learn", "The office plant is a fern.", "--json", home=home)
    assert learned.returncode == 0 and "learn: via the service" in learned.stderr
    eid = json.loads(learned.stdout)["engram"]["id"]
    doc = plur("-v", "doctor", home=home)
    assert doc.returncode == 0 and f"service      pid {info['pid']}" in doc.stdout and "via the service" in doc.stderr
    gone = plur("-v", "forget", eid, "--yes", home=home)
    assert gone.returncode == 0 and gone.stdout.strip() == f"forgotten: {eid}" and "via the service" in gone.stderr
    bad = plur("recall", "x", "--scope", "bad scope", home=home)
    assert bad.returncode == 2 and bad.stderr.startswith("plur: error: ") and "'bad scope'" in bad.stderr
    after = c.status()["served"]
    for name in ("recall", "block", "learn", "doctor", "forget"):
        assert after.get(name, 0) > before.get(name, 0), (name, before, after)


def test_cli_list_is_a_page_the_service_answers_as_the_store_would(service: tuple[Path, dict]) -> None:
    """`plur list --limit N` asks a running service for its page and the total (issue 49: a cold list read
    every engram of the store, 7.4 s at 100k), and prints what the in-process command prints."""
    home, info = service
    c = Client(info)
    c.learn("The user's bike is a red Brompton.", scope="project:a", tags=["bike"])
    before = c.status()["served"].get("list", 0)
    other = {"PLUR_BUDGET_TOKENS": "1999"}  # a setting the service does not have: the command works in-process
    for args in (("list", "--limit", "2"), ("list", "--limit", "50"), ("list", "--limit", "2", "--json"),
                 ("list", "--limit", "1", "--scope", "project:a", "--tag", "bike"), ("list", "--limit", "3", "--text", "TEA")):
        via = plur("-v", *args, home=home)
        direct = plur("-v", *args, home=home, env=other)
        assert via.returncode == direct.returncode == 0, (via.stderr, direct.stderr)
        assert "list: via the service" in via.stderr and "list: in-process" in direct.stderr, (via.stderr, direct.stderr)
        assert via.stdout == direct.stdout and via.stdout.strip(), (args, via.stdout, direct.stdout)
        said = [ln for ln in via.stderr.splitlines() if "list: " not in ln]
        assert said == [ln for ln in direct.stderr.splitlines() if "list: " not in ln], (args, via.stderr, direct.stderr)
    assert c.status()["served"].get("list", 0) == before + 5
    assert plur("list", "--limit", "2", home=home).stderr.startswith(f"{c.list_engrams(limit=1)['total']} engrams (showing 2)")


def test_cli_falls_back_in_process_without_a_service(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"PLUR_MODEL": "none"}
    assert plur("learn", "The user's dog is called Rex.", home=home, env=env).returncode == 0
    r = plur("-v", "recall", "dog", home=home, env=env)
    assert r.returncode == 0 and "Rex" in r.stdout and "recall: in-process (no service running" in r.stderr
    (home / "service.json").write_text(json.dumps({"api": 1, "pid": 2 ** 22 + 7, "token": "t", "url": "http://127.0.0.1:9",
                                                   "socket": str(home / "plur.sock")}))
    r = plur("-v", "recall", "dog", home=home, env=env)
    assert r.returncode == 0 and "Rex" in r.stdout and "in-process (stale" in r.stderr, r.stderr


def test_stale_files_are_handled(tmp_path: Path) -> None:
    home = short_home()
    home.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (home / "service.pid").write_text(f"{dead.pid}\n")
    (home / "service.json").write_text(json.dumps({"api": 1, "pid": dead.pid, "token": "t", "url": "http://127.0.0.1:9",
                                                   "socket": str(home / "plur.sock")}))
    (home / "plur.sock").write_text("")
    st = plur("service", "status", home=home)
    assert st.returncode == 7 and "no plur service running" in st.stderr and "removed stale" in st.stderr
    assert not any((home / n).exists() for n in ("service.json", "service.pid", "plur.sock"))
    (home / "service.pid").write_text(f"{dead.pid}\n")
    stop = plur("service", "stop", home=home)
    assert stop.returncode == 0 and stop.stdout.startswith("not running (removed stale service.pid")
    shutil.rmtree(home.parent, ignore_errors=True)


def test_daemon_start_status_stop_and_one_service_per_home() -> None:
    home = short_home()
    env = {"PLUR_MODEL": "none"}
    try:
        opened = home.parent / "opened.txt"   # a stand-in browser ($BROWSER, as webbrowser reads it)
        browser = home.parent / "browser.py"
        browser.write_text(f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
        started = plur("serve", "--daemon", "--open", "--port", "0", home=home,
                       env={**env, "BROWSER": f"{sys.executable} {browser} %s"})
        assert started.returncode == 0 and "started" in started.stderr, started.stderr
        info = json.loads((home / "service.json").read_text())
        assert opened.read_text().startswith(f"file://{home}/open/login-")            # a file, not a token URL
        assert plur("service", "url", home=home).stdout.strip().startswith(f"{info['url']}{page_prefix(info['login'])}/?login=")
        again = plur("service", "start", "--port", "0", home=home, env=env)
        assert again.returncode == 0 and "already running" in again.stderr
        st = plur("service", "status", "--json", home=home)
        assert st.returncode == 0 and json.loads(st.stdout)["pid"] == info["pid"]
        second = plur("serve", "--port", "0", home=home, env=env, timeout=60)
        assert second.returncode == 7 and f"(pid {info['pid']}) already serves" in second.stderr
        assert "serving" not in second.stderr
        assert "plur: serving" in (home / "service.log").read_text()
        stop = plur("service", "stop", home=home)
        assert stop.returncode == 0 and stop.stdout.strip() == f"stopped pid {info['pid']}"
        assert not pid_alive(info["pid"]), "`plur service stop` returned while the process still ran"
        assert not any((home / n).exists() for n in ("service.json", "service.pid", "plur.sock"))
        assert plur("service", "status", home=home).returncode == 7
        url = plur("service", "url", home=home)
        assert url.returncode == 7 and "no plur service running" in url.stderr and not url.stdout
    finally:
        plur("service", "stop", home=home)
        shutil.rmtree(home.parent, ignore_errors=True)


def test_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = plur("serve", "--port", str(port), home=tmp_path / "home", env={"PLUR_MODEL": "none"}, timeout=60)
    assert r.returncode == 7, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"plur: error: port {port} on 127.0.0.1 is already in use (another plur serve or another program); "
        "pick a free one with --port N, or --port 0 for any free port"]
    bad = plur("serve", "--host", "203.0.113.9", "--port", "0", home=tmp_path / "home", env={"PLUR_MODEL": "none"})
    assert bad.returncode == 7 and "not an address of this machine" in bad.stderr and "Traceback" not in bad.stderr



@pytest.mark.parametrize("command", [["service", "start", "--port", "0"], ["serve", "--daemon", "--port", "0"]])
def test_an_invalid_setting_stops_a_start_with_exit_2_before_anything_is_spawned(tmp_path: Path,
                                                                                 command: list[str]) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("fusion = 'RRF2'\n", encoding="utf-8")
    r = plur(*command, home=home, env={"PLUR_MODEL": "none"}, timeout=60)
    assert r.returncode == 2, r.stderr  # was 7: the service process failed and the start said only that
    assert r.stderr.strip().splitlines() == [
        f"plur: error: setting fusion='RRF2' (from {home / 'config.toml'}) must be one of rrf, weighted"]
    assert sorted(p.name for p in home.iterdir()) == ["config.toml"]  # no log: nothing was spawned


def test_a_start_passes_on_the_exit_code_of_a_service_that_fails(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "engrams").write_text("a file where the engram folder should be", encoding="utf-8")
    r = plur("service", "start", "--port", "0", home=home, env={"PLUR_MODEL": "none"}, timeout=120)
    assert r.returncode == 4, r.stderr  # the service's own StoreError, not a generic 7
    assert r.stderr.startswith("plur: error: the service exited with status 4 while starting: ")
    assert "cannot read the engram folder" in r.stderr and r.stderr.count("\n") == 1


def test_wildcard_bind_answers_on_the_addresses_it_prints() -> None:
    from plur.net.addresses import local_addresses

    lan = local_addresses()
    if not lan:
        pytest.skip("this machine has no non-loopback address")
    home = short_home()
    proc = subprocess.Popen([sys.executable, "-m", "plur", "--home", str(home), "serve", "--host", "0.0.0.0",
                             "--port", "0"], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PLUR_MODEL": "none"})
    try:
        lines = []
        while not any(line.startswith("  Host header") for line in lines):
            line = proc.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
        text = "".join(lines)
        assert "WARNING" in text and "not loopback" in text
        port = json.loads((home / "service.json").read_text())["url"].rsplit(":", 1)[1]
        assert f"http://{lan[0]}:{port}/" in text and lan[0] in text.split("Host header", 1)[1]
        conn = http.client.HTTPConnection(lan[0], int(port), timeout=30)
        conn.request("GET", "/")  # Host: <lan address>:<port>, as a browser on the LAN sends it
        resp = conn.getresponse()
        assert resp.status == 401 and b"plur service url" in resp.read()   # anyone on the LAN: no
        conn.close()
        login = json.loads((home / "service.json").read_text())["login"]
        url = urlsplit(login_url(f"http://{lan[0]}:{port}", login))
        conn = http.client.HTTPConnection(lan[0], int(port), timeout=30)
        conn.request("GET", url.path + "?" + url.query)
        resp = conn.getresponse()
        cookie = resp.getheader("set-cookie").split(";")[0]
        assert resp.status == 303
        conn.close()
        conn = http.client.HTTPConnection(lan[0], int(port), timeout=30)
        conn.request("GET", url.path, headers={"Cookie": cookie})
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(home.parent, ignore_errors=True)
    assert proc.returncode == 0


def test_bm25_recall_imports_no_model(tmp_path: Path, memory) -> None:
    """A BM25 recall in a fresh process loads neither torch nor the model, and keeps the saved dense leg."""
    memory.learn("The user's dog is called Rex.")
    memory.learn("Deploys happen on Tuesdays.")
    memory.recall("dog", k=1)          # builds and (at close) saves both legs
    memory.close()
    home = memory.home
    manifest = json.loads((home / "index" / "manifest.json").read_text())
    assert manifest["dense"]
    code = ("import sys\nfrom plur.cli import main\n"
            "rc = main(['--home', sys.argv[1], 'learn', 'Tuesdays are for tea.'])\n"
            "rc = rc or main(['--home', sys.argv[1], 'recall', '--mode', 'bm25', 'Tuesdays', '--json'])\n"
            "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers', 'usearch') if m in sys.modules]\n"
            "print('HEAVY=' + ','.join(heavy), rc)")
    out = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True, text=True,
                         env={**os.environ, "PLUR_MODEL": PACKAGED_MODEL})
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("HEAVY= 0"), out.stdout
    assert "Tuesdays" in out.stdout
    after = json.loads((home / "index" / "manifest.json").read_text())
    assert after["model"] == manifest["model"] and after["dense"] == manifest["dense"]   # dense leg kept
    assert len(after["lexical"]) == 3


def test_a_reading_cli_process_skips_the_writers_imports(tmp_path: Path, memory) -> None:
    """Readers take no lock: a cold BM25 recall must not pay for filelock (and the asyncio it pulls in)."""
    memory.learn("The user's dog is called Rex.")
    memory.recall("dog", k=1)
    memory.close()
    code = ("import sys\nfrom plur.cli import main\n"
            "rc = main(['--home', sys.argv[1], 'recall', '--mode', 'bm25', 'dog'])\n"
            "print('LOADED=' + ','.join(m for m in ('filelock', 'asyncio', 'torch') if m in sys.modules), rc)")
    out = subprocess.run([sys.executable, "-c", code, str(memory.home)], capture_output=True, text=True,
                         env={**os.environ, "PLUR_MODEL": PACKAGED_MODEL})
    assert out.returncode == 0 and "Rex" in out.stdout, out.stderr
    assert out.stdout.rstrip().endswith("LOADED= 0"), out.stdout


def test_a_cold_cli_recall_through_the_service_imports_only_the_client_path(service: tuple[Path, dict]) -> None:
    """The cold `plur recall` a hook runs: no Memory, store, numpy or YAML, and no http.client (email, ssl)."""
    home, _ = service
    code = ("import sys\nfrom plur.cli import main\n"
            "rc = main(['--home', sys.argv[1], '--verbose', 'recall', 'dog'])\n"
            "bad = ('plur.memory', 'plur.store.store', 'numpy', 'yaml', 'http.client', 'email.parser', 'ssl', "
            "'tempfile', 'plur.cli.edit', 'plur.cli.health')\n"
            "print('LOADED=' + ','.join(m for m in bad if m in sys.modules), rc)")
    out = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0 and "via the service" in out.stderr, out.stderr
    assert "Rex" in out.stdout and out.stdout.rstrip().endswith("LOADED= 0"), out.stdout


def test_tcp_listener_gets_nodelay_connections() -> None:
    """Accepted API connections have TCP_NODELAY (without it each loopback request waited ~40 ms on delayed ACKs)."""
    import asyncio

    from plur.net.addresses import bind_tcp

    sock = bind_tcp("127.0.0.1", 0)
    seen: list[int] = []

    async def main() -> None:
        def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=sock)
        _, w = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
        w.close()
        server.close()

    asyncio.run(main())
    assert seen and seen[0] != 0


def test_cli_on_the_service_path_still_says_files_are_quarantined() -> None:
    """The quarantine warning (issue 14) comes through the service too: its answers carry the count."""
    home = short_home()
    try:
        ok = plur("learn", "The boat is called Nausicaa.", "--json", home=home)
        eid = json.loads(ok.stdout)["engram"]["id"]
        plur("learn", "The kettle is blue.", home=home)
        assert plur("service", "start", "--port", "0", home=home, env={"PLUR_MODEL": PACKAGED_MODEL}).returncode == 0
        path = home / "engrams" / eid[4:11] / f"{eid}.yaml"
        path.write_text(path.read_text(encoding="utf-8").split("scope:")[0], encoding="utf-8")  # truncated
        for args in (("-v", "recall", "kettle"), ("-v", "section", "kettle", "--agent", "a"),
                     ("-v", "learn", "The door is red."), ("-v", "list", "--limit", "5")):
            r = plur(*args, home=home)
            assert r.returncode == 0 and "via the service" in r.stderr, r.stderr
            assert "1 file is quarantined" in r.stderr and "plur doctor" in r.stderr, (args, r.stderr)
        r = plur("recall", "kettle", "--json", home=home)
        assert json.loads(r.stderr.strip().splitlines()[-1])["quarantined"] == 1
    finally:
        plur("service", "stop", home=home)
        shutil.rmtree(home.parent, ignore_errors=True)
