"""End to end: the real server (uvicorn on a free port) driven by Debian's headless Chromium via Playwright.

Checks the table, filters, sorting, the detail page, the playground, pin and forget actions, adding and editing a
note, forgetting a conversation, the injection log, that engram
text with markup never runs as script, and that the page breaks no rule of its own Content-Security-Policy.
Screenshots land in the test's temporary folder.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from plur.memory import Memory

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]
XSS = "<script>alert(1)</script> the <img src=x onerror=alert(2)> label printer"

pytestmark = [
    pytest.mark.browser,
    # CI (scripts/test sets PLUR_REQUIRE_BROWSER=1) must fail, not skip, when chromium is missing.
    pytest.mark.skipif(not CHROMIUM.exists() and os.environ.get("PLUR_REQUIRE_BROWSER") != "1",
                       reason="needs Debian chromium: apt-get install -y chromium"),
]


@pytest.fixture
def served(memory: Memory):
    """Serve ``create_app(memory)`` with uvicorn in a thread on a free loopback port.

    Yields ``(base_url, login_url)``: ``base_url`` is the pages' root (under their secret prefix, ``/w/<random>``);
    the login URL is what ``plur service url`` prints for a service (one-time).
    """
    from plur.net.logincode import page_prefix
    from plur.web.login import login_url

    import uvicorn
    from plur.web.server import create_app

    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only when the listening
    # socket says TCP; without it Nagle + delayed ACK add ~40 ms to every keep-alive response.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    app = create_app(memory, bound_host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    base = f"http://127.0.0.1:{port}"
    yield base + page_prefix(app.state.login_token), login_url(base, app.state.login_token)
    server.should_exit = True
    thread.join(timeout=15)
    sock.close()


@pytest.fixture
def browser_page():
    from playwright import sync_api
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        page.dialogs = []          # (type, message) of every dialog that opened
        page.console_errors = []   # console errors, CSP violations included

        def on_dialog(dialog) -> None:
            page.dialogs.append((dialog.type, dialog.message))
            dialog.accept() if dialog.type == "confirm" else dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("console", lambda msg: page.console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
        yield page
        browser.close()


def seed(memory: Memory) -> dict[str, str]:
    ids: dict[str, str] = {}
    items = [{"statement": f"Routine note {i:02d} about the weekly report", "created": f"2025-03-01T00:00:{i:02d}Z",
              "tags": ["routine"]} for i in range(55)]
    memory.learn_many(items)
    ids["dog"] = memory.learn("The user's dog is called Rex and loves the beach.", created="2025-04-01",
                              tags=["pets"]).id
    ids["deploy"] = memory.learn("Deploy the shop with make release from the main branch.", created="2025-04-02",
                                 type="procedure", scope="project:shop", tags=["deploy"]).id
    ids["xss"] = memory.learn(XSS, created="2025-04-03", scope="project:shop").id
    for q in ("how do I deploy the shop", "deploy release branch", "label printer"):
        memory.recall(q, k=1, mode="hybrid", agent="coder")
    return ids


def test_browse_filter_inspect_recall_and_forget(served: tuple[str, str], browser_page, memory: Memory,
                                                 tmp_path: Path) -> None:
    base_url, login = served
    page = browser_page
    ids = seed(memory)

    # Not logged in: the page says how to get in, and shows no engram.
    response = page.goto(base_url + "/")
    assert response.status == 401 and "plur service url" in page.content() and "Rex" not in page.content()
    # The owner opens the login URL (as `plur serve --open` does): the token leaves the address bar.
    page.goto(login)
    assert page.url == base_url + "/"
    cookie = [c for c in page.context.cookies() if c["name"].startswith("plur_auth_")]
    assert len(cookie) == 1 and cookie[0]["httpOnly"] and cookie[0]["sameSite"] == "Strict"
    assert page.evaluate("document.cookie").find("plur_auth") < 0          # HttpOnly: no script reads it
    page.console_errors.clear()                                             # the 401 above logged one

    # The table: 58 engrams, first page of 50, newest first, markup shown as text.
    page.goto(base_url + "/")
    rows = page.locator("table.engrams tbody tr")
    assert rows.count() == 50
    assert rows.first.get_attribute("data-id") == ids["xss"]
    assert XSS in rows.first.locator("td.statement a").inner_text()
    assert "Showing 1–50 of 58 matching" in page.locator("#summary").inner_text()
    page.screenshot(path=str(tmp_path / "engrams.png"), full_page=True)

    # Sort by recalls (most recalled first), then the pager.
    page.click("th a[data-sort=recalls]")
    page.wait_for_url("**sort=recalls**")
    assert page.locator("table.engrams tbody tr").first.get_attribute("data-id") == ids["deploy"]
    page.goto(base_url + "/")
    page.click("a[rel=next]")
    page.wait_for_url("**page=2**")
    assert page.locator("table.engrams tbody tr").count() == 8

    # Full-text filter, then scope + tag filters.
    page.goto(base_url + "/")
    page.fill("input[name=q]", "rex")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**q=rex**")
    assert page.locator("table.engrams tbody tr").count() == 1
    page.goto(base_url + "/")
    page.select_option("select[name=scope]", "project:shop")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**scope=project%3Ashop**")
    assert {r.get_attribute("data-id") for r in page.locator("table.engrams tbody tr").all()} == {
        ids["deploy"], ids["xss"]}
    page.select_option("select[name=tag]", "deploy")
    page.click("form.filters button[type=submit]")
    assert page.locator("table.engrams tbody tr").count() == 1

    # Detail page: YAML, recall history; pin it.
    page.click(f"tr[data-id={ids['deploy']}] td.statement a")
    page.wait_for_url(f"**/engrams/{ids['deploy']}")
    assert "statement: Deploy the shop with make release" in page.locator("#yaml").inner_text()
    assert page.locator("#recall-history tbody tr").count() >= 1
    assert "how do I deploy the shop" in page.locator("#recall-history").inner_text()
    page.click("button[data-action=pin]")
    page.wait_for_selector(".badges .badge.pinned")
    assert memory.get(ids["deploy"]).pinned
    page.screenshot(path=str(tmp_path / "detail.png"), full_page=True)

    # The XSS engram's own page: text, not markup.
    page.goto(f"{base_url}/engrams/{ids['xss']}")
    assert page.locator("#statement").inner_text() == XSS
    assert page.locator("main script, main img").count() == 0

    # Playground: three rankings and the block.
    page.goto(base_url + "/playground")
    page.fill("input[name=q]", "deploy the shop")
    page.select_option("select[name=scope]", "project:shop")
    page.click("form.filters button[type=submit]")
    page.wait_for_selector("#memory-block")
    for leg in ("hybrid", "bm25", "dense"):
        assert page.locator(f"#leg-{leg} ol.hits li").count() >= 1, leg
    assert page.locator("#leg-hybrid ol.hits li").first.get_attribute("data-id") == ids["deploy"]
    block = page.locator("#memory-block").inner_text()
    assert block.startswith("<plur-memory>") and ids["deploy"] in block
    page.screenshot(path=str(tmp_path / "playground.png"), full_page=True)

    # Statistics renders its charts.
    page.goto(base_url + "/stats")
    assert page.locator("svg.chart").count() >= 4
    page.screenshot(path=str(tmp_path / "stats.png"), full_page=True)

    # Forget (after confirming the dialog): the file is gone and the table says so.
    path = memory.store.path_for(ids["dog"])
    assert path.exists()
    page.goto(f"{base_url}/engrams/{ids['dog']}")
    page.click("button[data-action=forget]")
    page.wait_for_url("**/?forgotten=*")
    assert f"Forgot {ids['dog']}." in page.locator(".notice").inner_text()
    assert not path.exists()
    assert page.locator(f"tr[data-id={ids['dog']}]").count() == 0

    # No alert ever fired (the only dialog was the forget confirmation); no CSP violation or JS error.
    assert [d[0] for d in page.dialogs] == ["confirm"], page.dialogs
    assert page.console_errors == []
    for name in ("engrams", "detail", "playground", "stats"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000


def test_cross_site_form_post_is_refused(served: tuple[str, str], browser_page, memory: Memory) -> None:
    """A page on another origin (another local port) auto-submits a form at the server: refused."""
    base_url, login = served
    e = memory.learn("Do not forget me.")
    page = browser_page
    page.goto(login)                                # the victim is logged in and has a session cookie
    page.goto(base_url + "/")
    hostile = (f'<form id="f" method="post" action="{base_url}/engrams/{e.id}/forget">'
               '<input name="csrf_token" value="' + "0" * 64 + '"></form>')
    with socket.socket() as s:                      # an origin other than the server's: an unused port
        s.bind(("127.0.0.1", 0))
        other = f"http://127.0.0.1:{s.getsockname()[1]}/"
    page.route(other, lambda route: route.fulfill(status=200, content_type="text/html", body=hostile))
    page.goto(other)
    with page.expect_navigation():
        page.evaluate("document.getElementById('f').submit()")
    assert "cross-origin request refused" in page.content()
    assert memory.store.path_for(e.id).exists()


def test_filter_by_conversation_and_the_secrets_card(served: tuple[str, str], browser_page, memory: Memory) -> None:
    """Captured conversations are a filter of the table; the statistics page counts redacted secrets."""
    memory.capture("My sister Lena moved to Vienna.", session="chat-lena", turn=0, mode="user")
    memory.capture("She works at the opera house.", session="chat-lena", turn=1, mode="user")
    memory.capture("Deploys go out on Tuesdays, token " + "gh" + "p_" + "Q7f3K9x2LmZ8aB4cD6eF1gH5jK0pR2sT9vW3",
                   session="chat-ops", turn=0, mode="user")
    memory.learn("A note typed by hand.")
    base_url, login = served
    page = browser_page
    page.goto(login)
    page.goto(base_url + "/")
    assert page.locator("table.engrams tbody tr").count() == 4
    page.select_option("select[name=session]", "chat-lena")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**session=chat-lena**")
    rows = page.locator("table.engrams tbody tr td.statement").all_inner_texts()
    assert sorted(rows) == ["My sister Lena moved to Vienna.", "She works at the opera house."]
    page.goto(base_url + "/stats")
    assert page.locator("#secrets-redacted").inner_text().strip() == "1"
    assert page.console_errors == []


def test_add_edit_forget_a_conversation_and_find_a_block(served: tuple[str, str], browser_page, memory: Memory,
                                                        tmp_path: Path) -> None:
    """Issue 48: a user adds a note, changes its type and scope, forgets a conversation, and finds the block a
    given message got, all by clicking."""
    from plur.prompt.worker import RecallWorker

    rex = memory.learn("The user's dog is called Rex and loves the beach.")
    for turn, text in enumerate(["My sister Lena moved to Vienna.", "She works at the opera house."]):
        memory.capture(text, session="chat-lena", turn=turn, mode="user")
    with RecallWorker(memory, threads=1) as worker:                # a host's turn: its block reaches a prompt
        gen = worker.submit("coder", "what is my dog called again?")
        assert worker.wait_for("coder", gen, 120) and rex.id in worker.read("coder")
        assert worker.wait_idle(120)
    base_url, login = served
    page = browser_page
    page.goto(login)

    # Add a note from the table.
    page.goto(base_url + "/")
    page.click("#add-note summary")
    page.fill("#add-statement", "Run the linter before every push.")
    page.select_option("#add-type", "feedback")
    page.fill("#add-tags", "style, ci")
    page.screenshot(path=str(tmp_path / "add.png"), full_page=True)
    page.click("button[data-action=add]")
    page.wait_for_selector("#added-notice")
    added = next(e for e in memory.list() if e.statement == "Run the linter before every push.")
    assert page.url.startswith(f"{base_url}/engrams/{added.id}")
    assert (added.type, added.scope, added.tags) == ("feedback", "global", ("style", "ci"))

    # Change its type and scope.
    page.click("#edit summary")
    page.select_option("#edit-type", "procedure")
    page.fill("#edit-scope", "project:shop")
    page.screenshot(path=str(tmp_path / "edit.png"), full_page=True)
    page.click("button[data-action=edit]")
    page.wait_for_selector(".badges .badge.scope:has-text('project:shop')")
    assert page.locator(".badges .badge.type").inner_text() == "procedure"
    now = memory.get(added.id)
    assert (now.type, now.scope, now.statement, now.tags) == ("procedure", "project:shop", added.statement, ("style", "ci"))

    # Find the block a given message got.
    page.click("nav a[href$='/injections']")
    page.fill("input[name=q]", "dog called")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**q=dog+called**")
    rows = page.locator("#injections tbody tr")
    assert rows.count() == 1
    page.screenshot(path=str(tmp_path / "injections.png"), full_page=True)
    assert rows.first.locator("td.message").inner_text() == "what is my dog called again?"
    assert rows.first.locator("td").nth(1).inner_text() == "coder"
    assert rows.first.locator("ol.block li").first.get_attribute("data-id") == rex.id
    rows.first.locator(f"ol.block a[href$='{rex.id}']").click()
    page.wait_for_url(f"**/engrams/{rex.id}")
    assert "what is my dog called again?" in page.locator("#injection-history").inner_text()

    # Forget a conversation (after confirming).
    page.click("nav a[href$='/conversations']")
    row = page.locator("tr[data-session=chat-lena]")
    assert row.locator("td.num").inner_text() == "2"
    page.screenshot(path=str(tmp_path / "conversations.png"), full_page=True)
    row.locator("button[data-action=forget-conversation]").click()
    page.wait_for_selector("#forgotten-notice")
    assert "Forgot conversation chat-lena (2 notes)." in page.locator("#forgotten-notice").inner_text()
    assert page.locator("tr[data-session=chat-lena]").count() == 0
    assert memory.sessions() == [] and not any("Lena" in e.statement for e in memory.list())

    assert [d[0] for d in page.dialogs] == ["confirm"], page.dialogs
    assert page.console_errors == []
