"""The local web page, in-process: real Memory on a temporary home, real model, Starlette's TestClient.

Covers every page and its JSON twin (``?format=json``), filters / sort / pagination, the detail page,
statistics, the recall playground, the actions, and each security guard (Host, Origin, CSRF, escaping).
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import starlette  # noqa: F401  (the web extra)
from starlette.testclient import TestClient  # noqa: E402

from conftest import web_login  # noqa: E402
from plur.net.logincode import login_url, page_prefix  # noqa: E402
from plur.memory import Memory  # noqa: E402
from plur.web import charts, security  # noqa: E402
from plur.web.server import create_app  # noqa: E402

ORIGIN = "http://127.0.0.1:7777"
XSS = "<script>alert(1)</script> remember the <b>bold</b> & brave"


@pytest.fixture
def client(memory: Memory):
    with TestClient(create_app(memory), base_url=ORIGIN) as c:
        yield web_login(c)


def at(client: TestClient, path: str) -> str:
    """``path`` under the pages' secret prefix (``/w/<random>``), as the server's links and redirects write it."""
    return client.base_url.raw_path.decode("ascii").rstrip("/") + path


def token_of(client: TestClient, path: str = "/") -> str:
    """Load a page (which sets the session cookie) and read its CSRF token from the meta tag."""
    html = client.get(path).text
    m = re.search(r'<meta name="csrf-token" content="([0-9a-f]{64})">', html)
    assert m, "page has no CSRF token"
    return m.group(1)


def post(client: TestClient, path: str, token: str | None, *, origin: str | None = ORIGIN, **data: str):
    form = dict(data)
    if token is not None:
        form["csrf_token"] = token
    headers = {"Origin": origin} if origin is not None else {}
    return client.post(path, data=form, headers=headers, follow_redirects=False)


def seed(memory: Memory) -> dict[str, str]:
    """Five engrams with distinct dates, scopes, types and tags; returns name -> id."""
    ids = {}
    ids["dog"] = memory.learn("The user's dog is called Rex.", created="2025-01-01", tags=["pets"]).id
    ids["tabs"] = memory.learn("The user prefers tabs over spaces.", created="2025-01-02", type="user",
                               tags=["style", "editor"]).id
    ids["deploy"] = memory.learn("Deploy with make release from the main branch.", created="2025-01-03",
                                 type="procedure", scope="project:shop", tags=["deploy"]).id
    ids["vault"] = memory.learn("The deploy key lives in the vault.", created="2025-01-04", scope="project:shop").id
    ids["old"] = memory.learn("The office was on Baker Street.", created="2025-01-05", scope="project:archive").id
    memory.update(ids["old"], status="retired")
    return ids


# -- pages and JSON twins --------------------------------------------------------------------------

def test_engrams_table_is_newest_first_and_json_twin_matches(client: TestClient, memory: Memory) -> None:
    ids = seed(memory)
    page = client.get("/?format=json").json()
    newest_first = [ids[k] for k in ("old", "vault", "deploy", "tabs", "dog")]
    assert [r["id"] for r in page["rows"]] == newest_first
    assert page["total"] == page["matched"] == 5
    html = client.get("/").text
    positions = [html.index(f'data-id="{i}"') for i in newest_first]
    assert positions == sorted(positions)
    row = next(r for r in page["rows"] if r["id"] == ids["tabs"])
    assert row == {"id": ids["tabs"], "statement": "The user prefers tabs over spaces.", "statement_chars": 34, "type": "user",
                   "scope": "global", "tags": ["style", "editor"], "status": "active", "pinned": False,
                   "created": "2025-01-02T00:00:00Z", "recalls": 0, "injections": 0, "last_recalled": None,
                   "valid_until": None, "current": True}
    assert client.get("/", headers={"Accept": "application/json"}).headers["content-type"].startswith("text/html")


def test_counts_come_from_stats_and_sort_by_them(client: TestClient, memory: Memory) -> None:
    ids = seed(memory)
    assert all(r["recalls"] == 0 for r in client.get("/?format=json").json()["rows"])   # fills the cache
    memory.recall("deploy key vault", k=1, mode="bm25", agent="coder")
    memory.recall("where is the deploy key", k=1, mode="bm25", agent="coder")
    memory.stats.record_injection(agent="coder", engram_ids=[ids["vault"], ids["dog"]], block_hash="sha256:x",
                                  tokens=120)
    rows = {r["id"]: r for r in client.get("/?format=json").json()["rows"]}
    assert rows[ids["vault"]]["recalls"] == 2 and rows[ids["vault"]]["injections"] == 1
    assert rows[ids["vault"]]["last_recalled"].endswith("Z")
    assert rows[ids["dog"]]["recalls"] == 0 and rows[ids["dog"]]["injections"] == 1
    by_recalls = client.get("/?sort=recalls&format=json").json()["rows"]
    assert by_recalls[0]["id"] == ids["vault"]
    by_inj = client.get("/?sort=injections&order=desc&format=json").json()["rows"]
    assert {by_inj[0]["id"], by_inj[1]["id"]} == {ids["vault"], ids["dog"]}


@pytest.mark.parametrize("params, expected", [
    ("q=DEPLOY", {"deploy", "vault"}),
    ("q=editor", {"tabs"}),                      # tags are searched too
    ("scope=project:shop", {"deploy", "vault"}),
    ("type=procedure", {"deploy"}),
    ("tag=pets", {"dog"}),
    ("status=retired", {"old"}),
    ("status=active&scope=project:shop&q=key", {"vault"}),
    ("q=nothing+matches+this", set()),
])
def test_filters(client: TestClient, memory: Memory, params: str, expected: set[str]) -> None:
    ids = seed(memory)
    got = {r["id"] for r in client.get(f"/?{params}&format=json").json()["rows"]}
    assert got == {ids[k] for k in expected}


@pytest.mark.parametrize("sort", ["created", "statement", "type", "scope", "status", "recalls", "injections",
                                  "last_recalled"])
def test_every_column_sorts_both_ways(client: TestClient, memory: Memory, sort: str) -> None:
    seed(memory)
    asc = client.get(f"/?sort={sort}&order=asc&format=json").json()["rows"]
    desc = client.get(f"/?sort={sort}&order=desc&format=json").json()["rows"]
    assert [r["id"] for r in asc] == [r["id"] for r in reversed(desc)]
    if sort in ("statement", "type", "scope", "status", "created"):
        key = [r[sort].casefold() if sort == "statement" else r[sort] for r in asc]
        assert key == sorted(key)
    html = client.get(f"/?sort={sort}&order=asc").text
    assert ('aria-sort="ascending"' in html) is (sort != "status")        # status has no column of its own


def test_pagination(client: TestClient, memory: Memory) -> None:
    memory.learn_many([{"statement": f"Numbered note {i:03d}", "created": f"2025-02-01T00:{i // 60:02d}:{i % 60:02d}Z"}
                       for i in range(120)])
    first = client.get("/?format=json").json()
    assert (first["page"], first["pages"], first["per_page"], len(first["rows"])) == (1, 3, 50, 50)
    assert first["rows"][0]["statement"] == "Numbered note 119"
    third = client.get("/?page=3&format=json").json()
    assert len(third["rows"]) == 20 and third["rows"][-1]["statement"] == "Numbered note 000"
    assert client.get("/?page=99&format=json").json()["page"] == 3          # clamped to the last page
    small = client.get("/?per_page=7&page=2&format=json").json()
    assert [r["statement"] for r in small["rows"]][0] == "Numbered note 112"
    html = client.get("/?page=2").text
    assert 'href="?page=1"' in html and 'href="?page=3"' in html and "Page 2 of 3" in html


@pytest.mark.parametrize("url, fragment", [
    ("/?sort=bogus", "'bogus'"),
    ("/?order=sideways", "'sideways'"),
    ("/?page=0", "'0'"),
    ("/?type=poem", "'poem'"),
    ("/?status=asleep", "'asleep'"),
    ("/?scope=bogus", "'bogus'"),
    ("/playground?q=x&mode=fuzzy", "'fuzzy'"),
    ("/playground?q=x&k=0", "'0'"),
    ("/playground?q=x&scope=project+a", "project a"),
])
def test_bad_parameters_are_400_naming_the_value(client: TestClient, url: str, fragment: str) -> None:
    r = client.get(url + "&format=json")
    assert r.status_code == 400 and fragment in r.json()["error"]
    assert client.get(url).status_code == 400
    assert client.get(url.split("?")[0] + "?format=xml").status_code == 400


def test_detail_page_shows_yaml_recalls_and_injections(client: TestClient, memory: Memory) -> None:
    ids = seed(memory)
    memory.recall("deploy key vault", k=3, mode="hybrid", agent="coder", scope="project:shop")
    memory.stats.record_injection(agent="coder", engram_ids=[ids["dog"], ids["vault"]], block_hash="sha256:abc",
                                  tokens=99)
    data = client.get(f"/engrams/{ids['vault']}?format=json").json()
    assert data["engram"]["statement"] == "The deploy key lives in the vault."
    assert data["yaml"] == memory.store.path_for(ids["vault"]).read_text(encoding="utf-8")
    assert data["counts"]["recalls"] == 1 and data["counts"]["injections"] == 1
    (rec,) = data["recalls"]
    assert rec["query"] == "deploy key vault" and rec["agent"] == "coder" and rec["rank"] == 1
    assert rec["bm25_rank"] == 1 and rec["dense_rank"] is not None and rec["time"].endswith("Z")
    (inj,) = data["injections"]
    assert inj["position"] == 2 and inj["tokens"] == 99
    html = client.get(f"/engrams/{ids['vault']}").text
    assert "deploy key vault" in html and 'id="recall-history"' in html and 'id="injection-history"' in html
    assert "statement: The deploy key lives in the vault." in html


@pytest.mark.parametrize("path, status", [
    ("/engrams/ENG-2020-01-01-abcdef", 404),
    ("/engrams/not-an-id", 400),
    ("/engrams/ENG-2020-01-01-ABCDEF", 400),
    ("/engrams/..%2F..%2Fetc%2Fpasswd", 404),         # no route matches a decoded path
])
def test_unknown_or_malformed_ids(client: TestClient, path: str, status: int) -> None:
    r = client.get(path + "?format=json")
    assert r.status_code == status and r.json()["error"]
    assert client.get(path).status_code == status


def test_stats_page(client: TestClient, memory: Memory) -> None:
    ids = seed(memory)
    for q in ("dog name", "deploy key", "deploy key vault"):
        memory.recall(q, k=1, mode="bm25", agent="coder")
    memory.stats.record_injection(agent="coder", engram_ids=[ids["dog"]], tokens=10)
    data = client.get("/stats?format=json").json()
    t = data["totals"]
    assert (t["engrams"], t["active"], t["retired"], t["recalls"], t["injections"]) == (5, 4, 1, 3, 1)
    assert data["recalled_active"] == 2 and data["never_recalled_active"] == 2
    assert data["most_recalled"][0] == {"id": ids["vault"], "recalls": 2, "injections": 0,
                                        "statement": "The deploy key lives in the vault.", "statement_chars": 34,
                                        "scope": "project:shop", "below_floor": 0, "useful": 0,
                                        "not_useful": 0}
    assert data["by_scope"] == [["global", 2], ["project:archive", 1], ["project:shop", 2]]
    assert data["per_day"][0]["recalls"] == 3 and data["latency_ms"]["p50"] is not None
    html = client.get("/stats").text
    assert html.count("<svg") >= 5 and 'id="most-recalled"' in html


def test_listing_json_twins_clip_a_huge_statement_and_its_page_keeps_it_whole(client: TestClient,
                                                                               memory: Memory) -> None:
    from plur.web.table import LIST_STATEMENT_CHARS

    big = memory.learn("The atlas runbook says: " + "restart the worker then check the queue. " * 23000)
    assert len(big.statement) > 900_000
    memory.recall("atlas runbook", k=1, mode="bm25")
    for url in ("/?format=json", "/stats?format=json", "/playground?q=atlas+runbook&mode=bm25&format=json"):
        got = client.get(url)
        assert len(got.content) < 100_000, (url, len(got.content))  # was ~1 MB each
    row = client.get("/?format=json").json()["rows"][0]
    assert len(row["statement"]) == LIST_STATEMENT_CHARS and row["statement_chars"] == len(big.statement)
    assert client.get("/stats?format=json").json()["most_recalled"][0]["statement_chars"] == len(big.statement)
    assert client.get(f"/engrams/{big.id}?format=json").json()["engram"]["statement"] == big.statement


def test_playground_shows_three_rankings_and_the_exact_block(client: TestClient, memory: Memory) -> None:
    from plur.prompt.selection import select_block

    ids = seed(memory)
    memory.update(ids["dog"], pinned=True)
    memory.learn("Payments go through the shop's Stripe account.", scope="project:other")
    before = memory.stats.summary()["recalls"]
    data = client.get("/playground?q=deploy+key&scope=project:shop&mode=hybrid&k=5&format=json").json()
    assert set(data["legs"]) == {"hybrid", "bm25", "dense"}
    for leg in ("hybrid", "bm25", "dense"):
        assert data["legs"][leg], leg
        assert {h["scope"] for h in data["legs"][leg]} <= {"project:shop", "global"}
    assert data["legs"]["hybrid"][0]["id"] == ids["vault"]
    top = data["legs"]["bm25"][0]
    assert top["bm25_rank"] == 1 and top["bm25_score"] > 0
    assert all(-1.0 <= h["dense_score"] <= 1.0 for h in data["legs"]["dense"])
    legs = memory.recall_legs("deploy key", 5, scope="project:shop", record=False)
    pinned = memory.pinned("project:shop")
    assert [e.id for e in pinned] == [ids["dog"]]
    expected = select_block(legs["hybrid"], memory.settings.budget_tokens, pinned=pinned).block  # floor applied
    assert data["block"]["text"] == expected.text and data["block"]["tokens"] == expected.tokens
    assert data["block"]["engram_ids"][0] == ids["dog"]                      # pinned goes first
    assert memory.stats.summary()["recalls"] == before                       # playground is not recorded
    html = client.get("/playground?q=deploy+key&scope=project:shop&mode=bm25").text
    assert 'id="leg-hybrid"' in html and 'id="leg-bm25"' in html and 'id="leg-dense"' in html
    assert "&lt;plur-memory&gt;" in html                                     # the block, shown as text
    assert client.get("/playground?format=json").json()["block"] is None    # no query: just the form


# -- actions ---------------------------------------------------------------------------------------

def test_pin_retire_edit_forget_through_forms(client: TestClient, memory: Memory) -> None:
    ids = seed(memory)
    eid = ids["tabs"]
    path = memory.store.path_for(eid)
    tok = token_of(client)
    r = post(client, f"/engrams/{eid}/pin", tok)
    assert r.status_code == 303 and r.headers["location"] == at(client, f"/engrams/{eid}")
    assert "pinned: true" in path.read_text() and memory.get(eid).pinned
    assert post(client, f"/engrams/{eid}/unpin", tok).status_code == 303 and not memory.get(eid).pinned
    assert post(client, f"/engrams/{eid}/retire", tok).status_code == 303
    assert "status: retired" in path.read_text()
    assert post(client, f"/engrams/{eid}/restore", tok).status_code == 303 and memory.get(eid).status == "active"
    r = post(client, f"/engrams/{eid}/edit", tok, statement="The user prefers spaces now.\r\nTwo of them.")
    assert r.status_code == 303 and memory.get(eid).statement == "The user prefers spaces now.\nTwo of them."
    assert "The user prefers spaces now." in path.read_text()
    r = post(client, f"/engrams/{eid}/forget", tok)
    assert r.status_code == 303 and r.headers["location"] == at(client, f"/?forgotten={eid}")
    assert not path.exists()
    assert f"Forgot {eid}." in client.get(ORIGIN + r.headers["location"]).text
    assert post(client, f"/engrams/{eid}/pin", tok).status_code == 404


def test_actions_json_twin_with_header_token(client: TestClient, memory: Memory) -> None:
    ids = seed(memory)
    tok = client.get("/?format=json").headers["x-csrf-token"]
    assert tok == token_of(client)
    r = client.post(f"/engrams/{ids['dog']}/pin?format=json", json={},
                    headers={"Origin": ORIGIN, "X-CSRF-Token": tok})
    assert r.status_code == 200 and r.json()["engram"]["pinned"] is True
    r = client.post(f"/engrams/{ids['dog']}/edit?format=json", json={"statement": "   "},
                    headers={"Origin": ORIGIN, "X-CSRF-Token": tok})
    assert r.status_code == 400 and "empty" in r.json()["error"]
    r = client.post(f"/engrams/{ids['dog']}/explode?format=json", json={},
                    headers={"Origin": ORIGIN, "X-CSRF-Token": tok})
    assert r.status_code == 400 and "'explode'" in r.json()["error"]


def test_failed_edit_shows_the_reason_and_keeps_the_file(client: TestClient, memory: Memory) -> None:
    ids = seed(memory)
    path = memory.store.path_for(ids["dog"])
    before = path.read_bytes()
    r = post(client, f"/engrams/{ids['dog']}/edit", token_of(client), statement="  \n ")
    assert r.status_code == 400 and 'id="edit-error"' in r.text and "empty" in r.text
    assert path.read_bytes() == before


# -- security --------------------------------------------------------------------------------------

@pytest.mark.parametrize("action", ["pin", "retire", "edit", "forget"])
def test_mutations_without_a_valid_csrf_token_are_refused(client: TestClient, memory: Memory,
                                                          action: str) -> None:
    ids = seed(memory)
    path = memory.store.path_for(ids["dog"])
    before = path.read_bytes()
    url = f"/engrams/{ids['dog']}/{action}"
    tok = token_of(client)
    assert post(client, url, None, statement="x").status_code == 403                     # no token
    assert post(client, url, "0" * 64, statement="x").status_code == 403                 # forged token
    with TestClient(client.app, base_url=ORIGIN) as other:                               # another session's
        web_login(other)
        assert post(other, url, tok, statement="x").status_code == 403
    client.cookies.delete(security.COOKIE_NAME)                                           # token, no cookie
    assert post(client, url, tok, statement="x").status_code == 403
    client.cookies.clear()                                                                # nor logged in
    assert post(client, url, tok, statement="x").status_code == 401
    assert path.read_bytes() == before
    assert web_login(client).get(url).status_code == 405                                 # never via GET


@pytest.mark.parametrize("origin, referer", [
    ("http://evil.example", None),
    ("http://127.0.0.1:8000", None),          # another local port is another origin
    ("https://127.0.0.1:7777", None),         # another scheme
    ("null", None),
    (None, None),                             # neither header
    (None, "http://evil.example/page"),
])
def test_mutations_need_a_same_origin_origin(client: TestClient, memory: Memory, origin, referer) -> None:
    ids = seed(memory)
    tok = token_of(client)
    headers = {k: v for k, v in (("Origin", origin), ("Referer", referer)) if v is not None}
    r = client.post(f"/engrams/{ids['dog']}/pin", data={"csrf_token": tok}, headers=headers, follow_redirects=False)
    assert r.status_code == 403 and "cross-origin" in r.text
    assert not memory.get(ids["dog"]).pinned
    ok = client.post(f"/engrams/{ids['dog']}/pin", data={"csrf_token": tok},
                     headers={"Referer": ORIGIN + f"/engrams/{ids['dog']}"}, follow_redirects=False)
    assert ok.status_code == 303 and memory.get(ids["dog"]).pinned                    # Referer fallback


@pytest.mark.parametrize("host, allowed", [
    ("127.0.0.1:7777", True), ("localhost:7777", True), ("[::1]:7777", True), ("LOCALHOST", True),
    ("evil.example:7777", False), ("127.0.0.1.nip.io:7777", False), ("", False), ("[::1", False),
    ("localhost:99999", False), ("10.0.0.5:7777", False),
])
def test_foreign_host_header_is_refused(memory: Memory, host: str, allowed: bool) -> None:
    app = create_app(memory)
    with TestClient(app, base_url=ORIGIN) as c:
        login = login_url(ORIGIN, app.state.login_token)
        c.get(login, headers={"Host": host})  # logged in under that name
        r = c.get(urlsplit(login).path, headers={"Host": host})
        assert (r.status_code == 200) is allowed, (host, r.status_code, r.text[:200])
        if not allowed:
            assert r.status_code == 400 and "Host" in r.text
            assert c.get("/static/style.css", headers={"Host": host}).status_code == 400


def test_bound_and_extra_hosts_are_accepted(memory: Memory) -> None:
    app = create_app(memory, bound_host="10.0.0.5", allow_hosts=["box.lan"])
    with TestClient(app, base_url=ORIGIN) as c:
        web_login(c)
        assert c.get("/", headers={"Host": "10.0.0.5:7777"}).status_code == 200
        assert c.get("/", headers={"Host": "box.lan:7777"}).status_code == 200
        assert c.get("/", headers={"Host": "evil.example"}).status_code == 400


def test_bind_warning() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert security.bind_warning(host) is None
    for host in ("0.0.0.0", "::", "192.168.1.5"):
        assert "not loopback" in (security.bind_warning(host) or "")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_serve_warns_on_a_non_loopback_bind(plur_home: Path) -> None:
    port = _free_port()
    code = f"from plur.web import serve; serve({str(plur_home)!r}, host='0.0.0.0', port={port})"
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            line = proc.stderr.readline()
            lines.append(line)
            if "serving" in line:
                break
        text = "".join(lines)
        assert "WARNING" in text and "'0.0.0.0'" in text and "not loopback" in text, text
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_engram_text_is_escaped_everywhere(client: TestClient, memory: Memory) -> None:
    e = memory.learn(XSS, tags=["<img src=x onerror=alert(2)>"], scope="project:x")
    memory.recall("remember bold brave", k=3, mode="bm25")
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for url in ("/", f"/engrams/{e.id}", "/stats", "/playground?q=remember+bold+brave",
                "/?q=%3Cscript%3E", "/?tag=%3Cimg+src%3Dx+onerror%3Dalert(2)%3E"):
        html = client.get(url).text
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold</b>" not in html, url
        assert escaped in html, url
    assert client.get("/?q=%3Cscript%3E&format=json").json()["rows"][0]["statement"] == XSS


def test_every_page_and_json_twin_needs_the_owner_login(memory: Memory) -> None:
    """Another local account reaches loopback too: without the login cookie every route is 401."""
    ids = seed(memory)
    app = create_app(memory)
    pages = ["/", f"/engrams/{ids['dog']}", "/stats", "/playground?q=dog", "/no/such/page"]
    with TestClient(app, base_url=ORIGIN) as stranger:
        for url in pages:
            for twin in ("", ("&" if "?" in url else "?") + "format=json"):
                r = stranger.get(url + twin, follow_redirects=False)
                assert r.status_code == 401, (url + twin, r.status_code)
                text = r.json()["error"] if twin else r.text
                assert "plur service url" in text and "\n" not in text.strip() and "Rex" not in r.text, text
                assert "set-cookie" not in r.headers
        r = stranger.post(f"/engrams/{ids['dog']}/forget", data={}, headers={"Origin": ORIGIN})
        assert r.status_code == 401 and memory.get(ids["dog"]).status == "active"
        assert stranger.get("/static/style.css").status_code == 200             # no data in it
        prefix = page_prefix(app.state.login_token)
        for url in pages:                                                        # even knowing the prefix
            assert stranger.get(prefix + url, follow_redirects=False).status_code == 401
        for bad in ("wrong", app.state.login_token[:-1], ""):                    # a guessed token
            r = stranger.get("/?token=" + bad, follow_redirects=False)
            assert r.status_code == 401 and "plur service url" in r.text and "set-cookie" not in r.headers
            r = stranger.get(prefix + "/?login=" + bad, follow_redirects=False)
            assert r.status_code == 401 and "plur service url" in r.text and "set-cookie" not in r.headers
        stranger.cookies.set("plur_auth_7777", "x" * 32 + "." + "0" * 64)       # a forged cookie
        assert stranger.get("/", follow_redirects=False).status_code == 401
    other = create_app(memory)                                                   # signed by another server
    with TestClient(other, base_url=ORIGIN) as c:
        web_login(c)
        forged = c.cookies.get("plur_auth_7777")
    with TestClient(app, base_url=ORIGIN) as stranger:
        stranger.cookies.set("plur_auth_7777", forged)
        assert stranger.get("/", follow_redirects=False).status_code == 401


def test_the_login_url_sets_a_strict_httponly_cookie_and_drops_the_token(memory: Memory) -> None:
    ids = seed(memory)
    app = create_app(memory, login_token="t" * 43)
    assert app.state.login_token == "t" * 43
    prefix = page_prefix("t" * 43)
    with TestClient(app, base_url=ORIGIN) as c:
        url = login_url(ORIGIN, "t" * 43, f"/engrams/{ids['dog']}").replace("?", "?format=json&")
        r = c.get(url, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"{prefix}/engrams/{ids['dog']}?format=json"
        cookie = r.headers["set-cookie"]
        assert cookie.startswith("plur_auth_7777=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert f"Path={prefix}/;" in cookie                          # never sent outside the secret prefix
        assert c.get(r.headers["location"]).json()["engram"]["id"] == ids["dog"]
        assert c.get(prefix + "/stats").status_code == 200
        assert c.get(prefix).status_code == 200                      # -> prefix + '/', where the cookie goes
        again = c.get(url, follow_redirects=False)                    # reopened while logged in: fine
        assert again.status_code == 303 and "set-cookie" not in again.headers
    with TestClient(app, base_url=ORIGIN) as stranger:
        r = stranger.get(url, follow_redirects=False)                 # a used link (history, a log): no
        assert r.status_code == 401 and "used already" in r.text and "set-cookie" not in r.headers


def test_a_login_link_works_once_and_briefly(memory: Memory) -> None:
    from plur.net.logincode import CODE_TTL_S, CodeBook, mint_code

    book = CodeBook("s" * 43)
    code = mint_code("s" * 43, now=1000)
    assert book.redeem(code, now=1000 + CODE_TTL_S - 1) == CodeBook.OK
    assert book.redeem(code, now=1001) == CodeBook.USED
    assert book.redeem(mint_code("s" * 43, now=1000), now=1001 + CODE_TTL_S) == CodeBook.EXPIRED
    assert book.redeem(mint_code("other", now=1000), now=1000) == CodeBook.BAD
    assert book.redeem(code[:-1] + ("0" if code[-1] != "0" else "1"), now=1000) == CodeBook.BAD
    app = create_app(memory)
    with TestClient(app, base_url=ORIGIN) as c:
        old = f"{page_prefix(app.state.login_token)}/?token={app.state.login_token}"   # the old long-lived form
        assert c.get(old, follow_redirects=False).status_code == 401


def test_security_headers_and_cookie(client: TestClient) -> None:
    r = client.get("/")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-frame-options"] == "DENY" and r.headers["cache-control"] == "no-store"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(security.COOKIE_NAME + "=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert "set-cookie" not in client.get("/").headers                  # one session per browser
    assert client.get("/static/app.js").status_code == 200


# -- pure helpers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ("127.0.0.1:7777", ("127.0.0.1", 7777)), ("LocalHost", ("localhost", None)), ("[::1]:80", ("::1", 80)),
    ("[::1]", ("::1", None)), ("::1", ("", None)), ("a:b", ("", None)), ("[::1]x", ("", None)),
])
def test_split_host(value: str, expected: tuple) -> None:
    assert security.split_host(value) == expected


def test_csrf_token_is_bound_to_secret_and_session() -> None:
    sid = security.new_session_id()
    tok = security.csrf_token(b"k" * 32, sid)
    assert security.token_valid(b"k" * 32, sid, tok)
    assert not security.token_valid(b"j" * 32, sid, tok)
    assert not security.token_valid(b"k" * 32, security.new_session_id(), tok)
    assert not security.token_valid(b"k" * 32, "short", security.csrf_token(b"k" * 32, "short"))


def test_nice_max() -> None:
    assert [charts.nice_max(v) for v in (0, 0.7, 1, 3, 7, 11, 240, 2600)] == [1, 1, 1, 5, 10, 20, 250, 5000]


def test_bar_chart_escapes_labels_and_scales() -> None:
    svg = charts.bar_chart(["<a>", "b"], [5, 10], title="T & U")
    assert svg.startswith("<svg") and svg.count('class="chart-bar"') == 2
    assert "&lt;a&gt;" in svg and "<a>" not in svg and "T &amp; U" in svg
    heights = [float(h) for h in re.findall(r'class="chart-bar"[^>]*height="([\d.]+)"', svg)]
    assert heights[1] == pytest.approx(2 * heights[0])
    assert "No data yet" in charts.bar_chart([], [], title="x")
    with pytest.raises(ValueError, match="2 labels but 1 values"):
        charts.bar_chart(["a", "b"], [1], title="x")


def test_chart_labels_show_control_and_bidi_characters_escaped() -> None:
    """Labels are agent names and scopes a host sent: an override must not flip the chart's text."""
    for svg in (charts.bar_chart(["agent\u202ex", "b"], [1, 2], title="t\x1b]0;x\x07"),
                charts.line_chart(["d1", "d2"], {"agent\u2066y": [1, 2]}, title="t"),
                charts.share_bar([("s\u202e", 1), ("t", 2)], title="t")):
        assert "\u202e" not in svg and "\u2066" not in svg and "\x1b" not in svg
    assert "agent\\u202ex" in charts.bar_chart(["agent\u202ex"], [1], title="t")


def test_line_chart_breaks_at_missing_points() -> None:
    svg = charts.line_chart(["d1", "d2", "d3", "d4", "d5"], {"p50": [1, 2, None, 3, 4]}, title="lat", unit=" ms")
    assert svg.count("<polyline") == 2 and svg.count("<circle") == 4 and "4 ms" in svg
    assert "No data yet" in charts.line_chart(["d1"], {"p50": [None]}, title="lat")


def test_share_bar_parts() -> None:
    svg = charts.share_bar([("recalled", 1), ("never", 3)], title="r")
    assert "recalled: 1 (25%)" in svg and "never: 3 (75%)" in svg
    assert "No data yet" in charts.share_bar([("a", 0)], title="r")
