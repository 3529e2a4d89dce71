"""The web page writes what a user expects it to (issue 48): add a note, edit its type, scope and tags, forget a
conversation whole, and an injection log that says which block (with its message) went to which agent when.

In-process (Starlette's TestClient, a real Memory, BM25 only); the same in a real browser is
tests/test_web_browser.py::test_add_edit_forget_a_conversation_and_find_a_block.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

import starlette  # noqa: F401  (the web extra)
from starlette.testclient import TestClient  # noqa: E402

from conftest import web_login  # noqa: E402
from plur.memory import Memory  # noqa: E402
from plur.prompt.worker import RecallWorker  # noqa: E402
from plur.web.server import create_app  # noqa: E402

ORIGIN = "http://127.0.0.1:7777"
KEY = "gh" + "p_" + "Q7f3K9x2LmZ8aB4cD6eF1gH5jK0pR2sT9vW3"


@pytest.fixture
def mem(plur_home: Path):
    with Memory(plur_home, model="none") as m:
        yield m


@pytest.fixture
def client(mem: Memory):
    with TestClient(create_app(mem), base_url=ORIGIN) as c:
        yield web_login(c)


def token_of(client: TestClient, path: str = "/") -> str:
    m = re.search(r'<meta name="csrf-token" content="([0-9a-f]{64})">', client.get(path).text)
    assert m, "page has no CSRF token"
    return m.group(1)


def post(client: TestClient, path: str, token: str | None, **data: str):
    form = {**data, **({"csrf_token": token} if token else {})}
    return client.post(path, data=form, headers={"Origin": ORIGIN}, follow_redirects=False)


def test_add_a_note_from_the_table(client: TestClient, mem: Memory) -> None:
    page = client.get("/").text
    assert 'id="add-note"' in page and 'action="/w/' in page and '/engrams"' in page
    r = post(client, "/engrams", token_of(client), statement="Deploys go out on Tuesdays.", type="procedure",
             scope="project:shop", tags="deploy, ops, deploy")
    assert r.status_code == 303
    e = mem.list()[0]
    assert r.headers["location"].endswith(f"/engrams/{e.id}?added=new")
    assert (e.statement, e.type, e.scope, e.tags) == ("Deploys go out on Tuesdays.", "procedure", "project:shop",
                                                       ("deploy", "ops"))
    assert "Added." in client.get(f"/engrams/{e.id}?added=new").text
    # the same note again: memory keeps one, and says so
    r = post(client, "/engrams", token_of(client), statement="Deploys go out on Tuesdays.", scope="project:shop")
    assert r.headers["location"].endswith("?added=known") and len(mem.list()) == 1
    # the JSON twin (a script): 201 for a new note, lists of tags accepted
    r = client.post("/engrams?format=json", json={"statement": "The dog is Rex.", "tags": ["pets"]},
                    headers={"Origin": ORIGIN, "X-CSRF-Token": token_of(client)})
    assert r.status_code == 201 and r.json()["created"] and r.json()["engram"]["tags"] == ["pets"]
    assert r.json()["engram"]["scope"] == "global" and r.json()["engram"]["type"] == "fact"


@pytest.mark.parametrize("form, needle", [
    ({"statement": "  "}, "empty"),
    ({"statement": "x", "scope": "nowhere"}, "nowhere"),
    ({"statement": "x", "type": "opinion"}, "opinion"),
    ({"statement": "x", "tags": "ok, " + "t" * 65}, "tag"),
])
def test_a_bad_note_is_refused_in_one_line_and_nothing_is_written(client: TestClient, mem: Memory, form, needle) -> None:
    r = client.post("/engrams?format=json", json=form, headers={"Origin": ORIGIN, "X-CSRF-Token": token_of(client)})
    assert r.status_code == 400 and needle in r.json()["error"] and "\n" not in r.json()["error"]
    assert mem.list() == []


def test_adding_needs_the_csrf_token(client: TestClient, mem: Memory) -> None:
    token_of(client)
    r = post(client, "/engrams", None, statement="sneaky")
    assert r.status_code == 403 and mem.list() == []


def test_edit_type_scope_and_tags(client: TestClient, mem: Memory) -> None:
    e = mem.learn("Run the linter before pushing.", tags=["style"])
    page = client.get(f"/engrams/{e.id}").text
    assert 'name="type"' in page and 'name="scope"' in page and 'name="tags"' in page
    version = re.search(r'name="version" value="([^"]+)"', page).group(1)
    r = post(client, f"/engrams/{e.id}/edit", token_of(client), statement=e.statement, type="procedure",
             scope="project:shop", tags="style, ci", version=version)
    assert r.status_code == 303 and r.headers["location"].endswith(f"/engrams/{e.id}")
    got = mem.get(e.id)
    assert (got.statement, got.type, got.scope, got.tags) == (e.statement, "procedure", "project:shop", ("style", "ci"))
    # a field not sent is left as it is (the JSON twin sends only what changes)
    r = client.post(f"/engrams/{e.id}/edit?format=json", json={"type": "feedback"},
                    headers={"Origin": ORIGIN, "X-CSRF-Token": token_of(client)})
    assert r.status_code == 200 and r.json()["engram"]["type"] == "feedback"
    assert mem.get(e.id).scope == "project:shop" and mem.get(e.id).tags == ("style", "ci")
    # a bad scope: the form again with the reason, and nothing written
    r = post(client, f"/engrams/{e.id}/edit", token_of(client), statement="Run it twice.", scope="nowhere")
    assert r.status_code == 400 and 'id="edit-error"' in r.text and "nowhere" in r.text
    assert "Run it twice." in r.text                                  # the person's text is kept in the form
    assert mem.get(e.id).scope == "project:shop" and mem.get(e.id).statement == e.statement
    # the version the form was rendered from is checked for these fields too
    r = post(client, f"/engrams/{e.id}/edit", token_of(client), type="user", version=version)
    assert r.status_code == 409 and mem.get(e.id).type == "feedback"


def _conversation(mem: Memory) -> list[str]:
    ids = []
    for turn, text in enumerate(["My sister Lena moved to Vienna.", "She works at the opera house."]):
        ids += [e.id for e in mem.capture(text, session="chat-lena", turn=turn, mode="user").stored]
    mem.capture("Deploys go out on Tuesdays.", session="chat-ops", turn=0, mode="user")
    return ids


def test_forget_a_conversation_as_plur_forget_session_does(client: TestClient, mem: Memory) -> None:
    ids = _conversation(mem)
    mem.recall("where does Lena live", 3, agent="coder")          # a recall that returned its turns
    page = client.get("/conversations").text
    assert "chat-lena" in page and "chat-ops" in page
    assert 'data-action="forget-conversation"' in client.get("/?session=chat-lena").text
    r = post(client, "/conversations/forget", None, session="chat-lena")
    assert r.status_code == 403 and len(mem.list()) == 3               # no token: refused
    r = post(client, "/conversations/forget", token_of(client), session="chat-lena")
    assert r.status_code == 303 and "/conversations?forgotten=chat-lena&n=2" in r.headers["location"]
    assert "Forgot conversation chat-lena (2 notes)." in client.get("/conversations?forgotten=chat-lena&n=2").text
    assert [e.statement for e in mem.list()] == ["Deploys go out on Tuesdays."]
    for engram_id in ids:                                              # every trace, as plur forget --session
        assert not mem.store.path_for(engram_id).exists()
        assert mem.stats.recall_history(engram_id) == []
    assert "where does Lena live" not in [r["query"] for r in mem.stats.recalls()]
    r = client.post("/conversations/forget?format=json", json={"session": "chat-lena"},
                    headers={"Origin": ORIGIN, "X-CSRF-Token": token_of(client)})
    assert r.status_code == 404 and "chat-lena" in r.json()["error"]


def test_the_injection_log_names_the_message_each_block_was_recalled_for(client: TestClient, mem: Memory) -> None:
    rex = mem.learn("The user's dog is called Rex.")
    tue = mem.learn("Deploys go out on Tuesdays.", scope="project:shop")
    with RecallWorker(mem, threads=1) as worker:
        for agent, text, scope in (("coder", "what is my dog called", None),
                                   ("shop-bot", f"when do deploys go out? my token is {KEY}", "project:shop")):
            gen = worker.submit(agent, text, scope)
            assert worker.wait_for(agent, gen, 60)
            assert worker.read(agent)                                  # the block reaches a prompt: recorded
        assert worker.wait_idle(60)
    found = client.get("/injections?format=json&q=DOG").json()
    assert found["matched"] == 1
    row = found["injections"][0]
    assert (row["agent"], row["message"]) == ("coder", "what is my dog called")
    assert [n["id"] for n in row["engrams"]] == [rex.id] and row["engrams"][0]["statement"] == rex.statement
    shop = client.get("/injections?format=json&agent=shop-bot").json()["injections"][0]
    assert KEY not in shop["message"] and "[redacted github-token]" in shop["message"]   # the recall log's text
    assert [n["id"] for n in shop["engrams"]] == [tue.id]
    assert mem.stats.screened_by_door() == {"recall": 1}          # counted once: the message is not stored twice
    html = client.get("/injections?q=dog").text
    assert "what is my dog called" in html and rex.id in html and "Deploys" not in html
    assert "what is my dog called" in client.get(f"/engrams/{rex.id}").text          # the engram's own history
    # forgetting the note blanks the message of the blocks that held it
    mem.forget(rex.id)
    assert client.get("/injections?format=json&q=dog").json()["matched"] == 0
    assert all(KEY not in p.read_bytes().decode("latin-1") for p in mem.home.rglob("stats.db*"))


def test_a_conversation_forgotten_leaves_no_message_in_the_injection_log(mem: Memory) -> None:
    """The turns of a forgotten conversation are the messages its blocks were recalled for: erased too."""
    mem.learn("The user's sister is Lena.")
    with RecallWorker(mem, threads=1, capture=True) as worker:
        gen = worker.submit("coder", "My sister Lena moved to Vienna last spring.", session="chat-lena")
        assert worker.wait_for("coder", gen, 60) and worker.read("coder")
        assert worker.wait_idle(60)
    assert mem.sessions()[0].session == "chat-lena"
    assert mem.stats.injections(text="Vienna")[0] == 1
    mem.forget_session("chat-lena")
    assert mem.stats.injections(text="Vienna") == (0, [])
    assert all(b"Vienna" not in p.read_bytes() for p in mem.home.rglob("stats.db*"))


def test_a_key_pasted_over_two_messages_leaves_no_piece_in_the_injection_log(mem: Memory) -> None:
    """The injection log shows the recall log's text, so a key pasted in two pieces over two messages (cut in
    both recall queries by the screen's pieces rule) is cut in both messages too."""
    from test_screen_doors import split_key

    mem.learn("The deploy key lives in the vault.")
    key = split_key()                                             # each half alone looks like nothing
    with RecallWorker(mem, threads=1) as worker:
        for text in (f"the deploy key, first half: {key[:16]}", f"and the second half: {key[16:]}"):
            gen = worker.submit("coder", text)
            assert worker.wait_for("coder", gen, 60)
            worker.read("coder")
        assert worker.wait_idle(60)
    messages = [r["message"] for r in mem.stats.injections(agent="coder")[1]]
    assert len(messages) == 2 and all("[redacted split-key]" in m for m in messages), messages
    assert all(key[:16].encode() not in p.read_bytes() and key[16:].encode() not in p.read_bytes()
               for p in mem.home.rglob("stats.db*"))


def test_a_schema_2_stats_db_gains_the_recall_column(plur_home: Path) -> None:
    with Memory(plur_home, model="none") as m:
        e = m.learn("a note about hello")
        m.recall("hello", agent="a")
        m.stats.record_injection(agent="a", engram_ids=[e.id], message="hello")
    db = sqlite3.connect(plur_home / "stats.db")
    db.executescript("CREATE TABLE old AS SELECT id, ts, agent, block_hash, tokens FROM injections; "
                     "DROP TABLE injections; ALTER TABLE old RENAME TO injections; "
                     "UPDATE meta SET value='2' WHERE key='schema_version';")
    db.close()
    with Memory(plur_home, model="none") as m:
        assert m.stats.injections()[1][0]["message"] is None            # recorded before injections named a recall
        m.recall("hello again", agent="a")
        m.stats.record_injection(agent="a", engram_ids=[e.id], message="hello again")
        m.stats.record_injection(agent="a", engram_ids=[e.id], message="never recalled")
        assert [r["message"] for r in m.stats.injections()[1]] == [None, "hello again", None]
