"""The web page: an edit made elsewhere meanwhile is a 409 with a reload link (not overwritten); an edit
to another engram's text is refused with its id; quarantined files are announced on the engrams page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from conftest import web_login  # noqa: E402
from plur.memory import Memory  # noqa: E402
from plur.web.server import create_app  # noqa: E402

ORIGIN = "http://127.0.0.1:7777"


@pytest.fixture
def client(plur_home: Path):
    mem = Memory(plur_home, model="none")
    with TestClient(create_app(mem), base_url=ORIGIN) as c:
        web_login(c)
        c.memory = mem  # type: ignore[attr-defined]
        yield c
    mem.close()


def _form(client: TestClient, eid: str) -> dict[str, str]:
    html = client.get(f"/engrams/{eid}").text
    token = re.search(r'<meta name="csrf-token" content="([0-9a-f]{64})">', html).group(1)
    version = re.search(r'name="version" value="([^"]+)"', html).group(1)
    return {"csrf_token": token, "version": version}


def test_web_edit_after_a_change_elsewhere_is_409_with_reload_link(client: TestClient, plur_home: Path) -> None:
    eid = client.memory.learn("The dog is Rex.").id
    form = _form(client, eid)                                   # the page is opened
    with Memory(plur_home, model="none") as other:               # plur edit / another process saves first
        other.update(eid, statement="The dog is Max.")
    r = client.post(f"/engrams/{eid}/edit", data={**form, "statement": "The dog is Rex, a beagle."},
                    headers={"Origin": ORIGIN}, follow_redirects=False)
    assert r.status_code == 409
    assert "changed since you opened it" in r.text and 'id="reload-link"' in r.text
    assert "The dog is Rex, a beagle." in r.text               # the person's text is still in the form
    assert client.memory.get(eid).statement == "The dog is Max."
    form = _form(client, eid)                                   # reload, then save: accepted
    r = client.post(f"/engrams/{eid}/edit", data={**form, "statement": "The dog is Max, a beagle."},
                    headers={"Origin": ORIGIN}, follow_redirects=False)
    assert r.status_code == 303 and client.memory.get(eid).statement == "The dog is Max, a beagle."


def test_web_json_edit_with_a_stale_version_is_409(client: TestClient) -> None:
    e = client.memory.learn("The dog is Rex.")
    form = _form(client, e.id)
    client.memory.update(e.id, pinned=True)
    r = client.post(f"/engrams/{e.id}/edit?format=json", json={"statement": "x y", "version": form["version"]},
                    headers={"Origin": ORIGIN, "X-CSRF-Token": form["csrf_token"]})
    assert r.status_code == 409 and r.json()["kind"] == "ConflictError"


def test_web_edit_to_a_duplicate_names_the_other_engram(client: TestClient) -> None:
    a = client.memory.learn("The dog is Rex.").id
    b = client.memory.learn("The cat is Tom.").id
    form = _form(client, b)
    r = client.post(f"/engrams/{b}/edit", data={**form, "statement": "the dog is rex."},
                    headers={"Origin": ORIGIN}, follow_redirects=False)
    assert r.status_code == 409 and a in r.text
    assert client.memory.get(b).statement == "The cat is Tom."


def test_engrams_page_announces_quarantined_files(client: TestClient, plur_home: Path) -> None:
    client.memory.learn("The dog is Rex.")
    (plur_home / "engrams" / "ENG-2025-01-01-aaaaaa.yaml").write_text("id: [broken\n", encoding="utf-8")
    html = client.get("/").text
    assert 'id="quarantined"' in html and "1 file is quarantined" in html and "plur doctor" in html


def test_control_and_bidi_characters_are_shown_not_obeyed(client: TestClient) -> None:
    """A bidi override or a terminal escape in a statement, tag or rationale is displayed as \\uNNNN on the
    pages (it cannot make the text read differently from what is stored); the edit form and JSON keep it exact."""
    text = "Invoice total: \u202e0001$ \x1b]0;pwned\x07 paid"
    e = client.memory.learn(text, tags=["a\u2066b"], rationale="why \u202d")
    page = client.get(f"/engrams/{e.id}").text
    shown = re.search(r'<blockquote class="statement" id="statement">(.*?)</blockquote>', page, re.S).group(1)
    assert "\u202e" not in shown and "\x1b" not in shown and "\\u202e0001$ \\x1b]0;pwned\\x07 paid" in shown
    assert "a\\u2066b" in page and "why \\u202d" in page
    form = re.search(r'<textarea id="statement-input"[^>]*>(.*?)</textarea>', page, re.S).group(1)
    assert "\u202e" in form                                    # an edit starts from the exact text
    listing = client.get("/").text
    assert "\u202e" not in listing and "\\u202e" in listing
    assert client.get(f"/engrams/{e.id}?format=json").json()["engram"]["statement"] == text
    play = client.get("/playground", params={"q": "invoice total paid"}).text
    assert "\\u202e" in play and "\u202e" not in play           # hits and the memory block
