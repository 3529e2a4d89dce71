"""``plur ingest`` follows capture's rules (issue 46 F): the same turns left out (nothing to remember, slash
commands such as ``/plur capture off``, questions), no turn typed while capture was off, and no sentence stored
twice in a scope from two conversations (captured live, then ingested from another session's log)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from plur.formats import chats as conv
from plur.formats.chats import dsh
from plur.memory import Memory
from plur.memory.rules import OFF_FILE, off_marks

SESSIONS = Path(__file__).resolve().parent / "data" / "ingest" / "dsh" / "sessions"
LENA = "My sister Lena moved to Vienna last spring."


@pytest.fixture
def mem(plur_home: Path) -> Any:
    m = Memory(plur_home, model="none", fsync=False, capture="user")
    yield m
    m.close()


def _chat(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": t} for t in texts]


def test_ingest_leaves_out_what_capture_leaves_out(mem: Memory) -> None:
    chat = _chat("ok", "/plur capture off", "What is my dog called?", "Lin's dog is called Biscuit.", "thanks!",
                 "git status", "lin's dog is called  Biscuit.", "Hi! When does Mia start school?")
    out = mem.ingest(chat, session="chat-1")
    assert [e.statement for e in out.added] == ["Lin's dog is called Biscuit."]
    assert dict(out.left_out) == {"trivial": 4, "question": 2, "repeat": 1} and out.skipped == 0
    again = mem.ingest(chat, session="chat-1")                 # idempotent: nothing new, the same left out
    assert again.added == () and dict(again.left_out) == dict(out.left_out) and again.skipped == 1
    assert [e.statement for e in mem.list()] == ["Lin's dog is called Biscuit."]
    kept = mem.ingest(chat, session="chat-2", rules=False)     # the rules off: every turn of the chat
    assert len(kept.added) == len(chat)


def test_a_sentence_captured_live_then_ingested_from_another_session_shows_once(mem: Memory) -> None:
    (live,) = mem.capture("We deploy the billing service from the branch release-candidate.", session="dsh-1",
                          turn=0, scope="project:shop").stored
    out = mem.ingest(_chat("we deploy the billing service from the branch release-candidate.",
                           "The staging database is billing_stage."), session="cc-9", scope="project:shop")
    assert [e.statement for e in out.added] == ["The staging database is billing_stage."]
    assert dict(out.left_out) == {"repeat": 1}
    from plur.prompt.selection import recall_block

    block = recall_block(mem, "which branch do we deploy the billing service from?", scope="project:shop")
    assert block.text.lower().count("release-candidate") == 1 and live.id in block.engram_ids
    other = mem.ingest(_chat("We deploy the billing service from the branch release-candidate."), session="x",
                       scope="project:other")                # another scope is another memory: stored there
    assert len(other.added) == 1


def test_turns_typed_while_capture_was_off_are_not_ingested(mem: Memory, plur_home: Path) -> None:
    """capture with mode off (the setting, a host's switch) stores nothing and remembers the turn without its text
    (session, number, hash); an ingest of that conversation later leaves it out, in any format."""
    secret = "My bank PIN is 4821, please keep it in mind."
    plur_home.mkdir(parents=True, exist_ok=True)            # a home (plur init, any write); none: nothing marked
    assert mem.capture(secret, session="cc-1", turn=3, mode="off").skipped == "off"
    assert mem.list() == [] and secret.encode() not in (plur_home / OFF_FILE).read_bytes()
    marks = off_marks(plur_home)
    assert ("cc-1", 3, "user") in marks.turns and len(marks.texts) == 1
    out = mem.ingest(_chat("I drive a blue Volvo.", secret), session="cc-1")
    assert [e.statement for e in out.added] == ["I drive a blue Volvo."] and dict(out.left_out) == {"off": 1}
    assert len(mem.ingest(_chat(secret), session="cc-2").added) == 1   # said again in another conversation
    # the rules off (and the turn kept in project:x: routed to global, it would be an edit of cc-1's turn 0 there)
    assert mem.ingest(_chat(secret), session="cc-1", rules=False, personal=False, scope="project:x").added


def test_a_dsh_turn_the_plugin_marked_off_is_not_ingested(mem: Memory, plur_home: Path) -> None:
    """The DSH plugin marks a typed turn by its place (session, number: its log's numbering, no hash) when its own
    capture switch or memory is off; `plur ingest` of the log then leaves that turn out."""
    log = next(f for f, cwd in dsh.sessions(SESSIONS) if cwd == "/home/dev/我的项目")
    sid = conv.load(log)[0]["id"]
    plur_home.mkdir(parents=True, exist_ok=True)
    with open(plur_home / OFF_FILE, "a", encoding="utf-8") as fh:   # what hosts/dsh/src/capture.js appends
        fh.write(json.dumps({"session": sid, "turn": 0, "role": "user", "at": "2026-12-07T10:00:00Z"}) + "\n")
        fh.write("not json\n")
    out = mem.ingest(log, scope="project:a")
    assert out.added == () and dict(out.left_out) == {"off": 1}
    assert [e.statement for e in mem.ingest(log, scope="project:b", rules=False).added] == [LENA]


def test_the_hook_with_capture_off_then_plur_ingest_of_the_transcript(tmp_path: Path) -> None:
    """Claude Code with PLUR_CAPTURE=off: the hook stores nothing; a later `plur ingest` of the session's
    transcript (with capture back on) does not store that prompt either, and stores the others."""
    from test_doors import _env

    work = tmp_path / "work" / "shop"
    (work / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    env = _env(home, PLUR_CAPTURE="off", PLUR_MODEL="none")
    assert subprocess.run([sys.executable, "-m", "plur", "init"], env=env, capture_output=True,
                          timeout=120).returncode == 0
    private = "My therapist appointment moved to Tuesday at four."
    proc = subprocess.run([sys.executable, "-m", "plur", "hook", "claude-code"], env=env, timeout=300,
                          input=json.dumps({"session_id": "cc-7", "cwd": str(work), "hook_event_name": "UserPromptSubmit",
                                            "prompt": private}), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    transcript = tmp_path / "cc-7.jsonl"
    transcript.write_text("".join(json.dumps({"type": "user", "sessionId": "cc-7", "cwd": str(work),
                                              "timestamp": f"2026-12-07T10:0{i}:00Z",
                                              "message": {"role": "user", "content": text}}) + "\n"
                                  for i, text in enumerate(["We use pnpm in this repository.", private])))
    on = {**env, "PLUR_CAPTURE": "user"}
    got = subprocess.run([sys.executable, "-m", "plur", "ingest", str(transcript), "--json"], env=on, timeout=300,
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    assert len(report["added"]) == 1 and report["left_out"] == {"off": 1}
    with Memory(home, model="none") as m:
        assert [e.statement for e in m.list()] == ["We use pnpm in this repository."]


# -- capture's other two rules: facts about the user follow the user; a request to forget is never a note ---------

MIRA = "My daughter Mira has violin lessons every Thursday."
PORT = "The web package's dev server listens on port 5173."


def test_ingest_puts_a_turn_about_the_user_where_capture_puts_it(mem: Memory) -> None:
    """A user turn about the user ingested into a project goes to global, recalled in every project, as capture
    routes it (route_personal); a turn about the code stays in the project. Before, ingest wrote every turn into
    the project, so the same sentence captured live and ingested from a log landed in two scopes."""
    out = mem.ingest(_chat(MIRA, PORT), session="cc-1", scope="project:shop")
    assert {e.statement: e.scope for e in out.added} == {MIRA: "global", PORT: "project:shop"}
    live = {s: mem.capture(s, session="live", turn=i, scope="project:garden").stored
            for i, s in enumerate((MIRA, PORT))}
    assert live[MIRA] == ()                                   # capture: global holds it already (the same place)
    assert [e.scope for e in live[PORT]] == ["project:garden"]
    again = mem.ingest(_chat(MIRA, PORT), session="cc-1", scope="project:shop")
    assert again.added == () and again.skipped == 2          # idempotent across the two scopes
    assert [e.statement for e in mem.list(scope="global")] == [MIRA]
    kept = mem.ingest(_chat(MIRA), session="cc-2", scope="project:x", personal=False)
    assert [e.scope for e in kept.added] == ["project:x"]    # the rule off: the project keeps it
    into_global = mem.ingest(_chat("I keep my spare key under the blue flowerpot."), session="cc-3")
    assert [e.scope for e in into_global.added] == ["global"]


def test_a_turn_that_asks_to_forget_is_never_ingested_and_forgets_within_its_conversation(mem: Memory) -> None:
    """A request to forget said in an ingested conversation is not stored (left_out.forget); what it points to in
    the same conversation, said before it, is not stored either (left_out.forgotten). Notes outside the
    conversation that hold the same words stay: an old log's request says nothing of what memory learned since.
    Before, the request was stored as a note beside what it asked to forget."""
    outside = mem.learn("Alex from the design team prefers async reviews.", scope="project:shop")
    other = mem.ingest(_chat("Alex is my running partner on Sundays."), session="other", scope="project:shop")
    chat = _chat("Alex is moving to Berlin in March.", "The staging database is billing_stage.",
                 "Actually, please forget what I told you about Alex.", "Alex is moving to Berlin in March.")
    out = mem.ingest(chat[:3], session="chat-1", scope="project:shop")
    assert [e.statement for e in out.added] == ["The staging database is billing_stage."]
    assert dict(out.left_out) == {"forget": 1, "forgotten": 1} and out.forgotten == ()
    assert {e.id for e in mem.list()} == {outside.id, other.added[0].id, out.added[0].id}
    again = mem.ingest(chat[:3], session="chat-1", scope="project:shop")       # idempotent
    assert again.added == () and dict(again.left_out) == dict(out.left_out)
    said_again = mem.ingest(chat, session="chat-1", scope="project:shop")      # said again after the request: kept
    assert [e.statement for e in said_again.added] == ["Alex is moving to Berlin in March."]
    assert [e.source["turn"] for e in said_again.added] == [3]


def test_a_request_in_a_conversation_ingested_again_forgets_what_an_earlier_ingest_stored(mem: Memory) -> None:
    """The conversation went on after its first ingest and asked to forget: the next ingest forgets the stored note
    of that conversation (every guarantee of plur forget), the request is not stored, the rest stays; a dry run says
    what it would forget and forgets nothing."""
    key = "I keep my spare key under the blue flowerpot."
    first = mem.ingest(_chat(key, "We use pnpm in this repository."), session="chat-2", scope="project:shop")
    stored = {e.statement: e for e in first.added}
    elsewhere = mem.ingest(_chat("I keep my spare key in the car too."), session="chat-3", scope="project:shop")
    later = _chat(key, "We use pnpm in this repository.", "Please forget where I keep my spare key.")
    dry = mem.ingest(later, session="chat-2", scope="project:shop", dry_run=True)
    assert dry.forgotten == (stored[key].id,) and mem.get(stored[key].id).statement == key
    out = mem.ingest(later, session="chat-2", scope="project:shop")
    assert out.added == () and out.forgotten == (stored[key].id,) and dict(out.left_out) == {"forget": 1}
    assert sorted(e.statement for e in mem.list()) == sorted(["We use pnpm in this repository.",
                                                              elsewhere.added[0].statement])
    assert not list(mem.home.rglob(f"{stored[key].id}.yaml"))
    assert stored[key].id not in {h.engram.id for h in mem.recall("spare key flowerpot", 5, mode="bm25")}
    assert mem.ingest(later, session="chat-2", scope="project:shop").added == ()   # not stored again


def test_forget_that_takes_back_the_turn_before_and_the_rest_of_a_turn_stays(mem: Memory) -> None:
    out = mem.ingest(_chat("I am seeing a therapist on Tuesdays.", "Forget that, please.",
                           "We deploy on Fridays. Please forget my old address.",
                           "My SSN-like badge number is 12-34, forget that."), session="chat-4", scope="project:shop")
    assert [e.statement for e in out.added] == ["We deploy on Fridays."]
    assert dict(out.left_out) == {"forget": 2, "forgotten": 1}
    kept = mem.ingest(_chat("I am seeing a therapist on Tuesdays.", "Forget that, please."), session="chat-5",
                      scope="project:x", forget=False, rules=False)
    assert len(kept.added) == 2                                 # forget_requests off: stored like any turn


def test_plur_ingest_reports_what_a_conversation_asked_to_forget(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from plur.cli import cli

    home = tmp_path / "home"
    chat = tmp_path / "chat.json"
    run = lambda *a: CliRunner().invoke(cli, ["--home", str(home), *a], env={"PLUR_MODEL": "none"},  # noqa: E731
                                        catch_exceptions=False)
    chat.write_text(json.dumps(_chat("I keep my spare key under the blue flowerpot.", PORT)))
    assert run("ingest", str(chat), "--session", "s", "--scope", "project:shop").exit_code == 0
    chat.write_text(json.dumps(_chat("I keep my spare key under the blue flowerpot.", PORT,
                                     "Please forget where I keep my spare key.")))
    r = run("ingest", str(chat), "--session", "s", "--scope", "project:shop", "--json")
    got = json.loads(r.stdout)
    assert got["left_out"] == {"forget": 1} and len(got["forgotten"]) == 1 and got["added"] == []
    chat.write_text(json.dumps(_chat(MIRA, "Forget that.", PORT)))
    r = run("ingest", str(chat), "--session", "t", "--scope", "project:shop")
    assert "1 left out" not in r.output and "asking to forget 1" in r.output, r.output
    assert "forgotten at the user's request 1" in r.output
