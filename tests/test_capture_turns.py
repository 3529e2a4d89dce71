"""Memory.capture (plur/memory/capture.py) and its doors: the setting's modes, the secret screen before the
store, the trivial-turn filter, ingest provenance (an edited turn supersedes), the service's POST /capture,
plur sessions and plur forget --session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from plur.errors import NotFoundError, ValidationError
from plur.memory import Memory
from plur.memory.capture import trivial

KEY = "sk" + "-proj-" + "Zr8Kq2Lm9XwT4vB7nC1dF6gH3jP0sY5aE8uI2oQ"


@pytest.fixture
def mem(plur_home: Path) -> Iterator[Memory]:
    m = Memory(plur_home, model="none", fsync=False, capture="user")
    yield m
    m.close()


@pytest.mark.parametrize("text", ["ok", "Thanks!", "continue", "go ahead please", "ls -la", "git status",
                                  "$ npm test", "/clear", "/compact keep the plan", "yes", "👍", "LGTM",
                                  "[redacted openai-key]", "  "])
def test_turns_with_nothing_to_remember(text: str) -> None:
    assert trivial(text)


@pytest.mark.parametrize("text", ["My sister Lena moved to Vienna.", "git push fails because the remote "
                                  "rejects my key", "ls shows nothing in the deploy folder, why?",
                                  "/usr/local/bin holds the old python", "我住在维也纳", "Use tabs, not spaces.",
                                  "ok so the deadline moved to Friday"])
def test_turns_worth_keeping(text: str) -> None:
    assert not trivial(text)


def test_modes_roles_and_provenance(plur_home: Path) -> None:
    for mode, kept in (("off", set()), ("user", {"user"}), ("all", {"user", "reference"})):
        with Memory(plur_home / mode, model="none", fsync=False, capture=mode) as m:
            m.capture("I moved to Lisbon in May.", session="s1", turn=0, scope="project:shop")
            m.capture("Noted: you live in Lisbon since May.", session="s1", turn=1, role="assistant",
                      scope="project:shop")
            assert {e.type for e in m.list()} == kept, mode
    with Memory(plur_home / "user", model="none") as m:
        (e,) = m.list()
        assert e.scope == "global"             # about the user: recalled in every project (route_personal)
        assert e.source == {"kind": "conversation", "format": "capture", "session": "s1", "turn": 0,
                            "role": "user", "capture": True}


def test_secret_is_redacted_counted_and_the_rest_kept(mem: Memory, plur_home: Path) -> None:
    got = mem.capture(f"The billing API lives at api7.internal and the key is {KEY} today.", session="s",
                      turn=0, scope="project:shop", when="2026-03-01T10:00:00Z")
    (e,) = got.stored
    assert e.statement == "The billing API lives at api7.internal and the key is [redacted openai-key] today."
    assert got.redacted == ("openai-key",) and mem.stats.screened_counts() == {"openai-key": 1}
    assert e.created.isoformat().startswith("2026-03-01T10:00")
    mem.recall(f"what about {KEY}?")                 # the recall log is screened as well
    mem.close()
    leaks = [p for p in plur_home.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaks == []


def test_trivial_repeated_and_edited_turns(mem: Memory) -> None:
    assert mem.capture("thanks!", session="s", turn=0).skipped == "trivial"
    assert mem.capture("The cat is called Miso.", session="s", turn=1).stored
    assert mem.capture("The cat is called Miso.", session="s", turn=1).skipped == "known"   # same turn again
    assert mem.capture("the cat is called  Miso.", session="s", turn=4).skipped == "known"  # said again
    (new,) = mem.capture("The cat is called Mochi.", session="s", turn=1).stored              # an edited turn
    assert new.supersedes and mem.get(new.supersedes).status == "retired"
    assert [e.statement for e in mem.list(status="active")] == ["The cat is called Mochi."]


def test_bad_input_is_one_clear_error(mem: Memory) -> None:
    for kwargs, word in (({"session": ""}, "session"), ({"turn": -1}, "turn"), ({"role": "bot"}, "role"),
                         ({"mode": "some"}, "capture mode"), ({"scope": "proj x"}, "scope")):
        args = {"session": "s", "turn": 0, **kwargs}
        with pytest.raises(ValidationError, match=word):
            mem.capture("The cat is called Miso.", **args)
    assert mem.list() == []


def test_sessions_and_forget_session(mem: Memory) -> None:
    mem.capture("The cat is called Miso.", session="chat-a", turn=0)
    mem.capture("The dog is called Rex.", session="chat-a", turn=1)
    mem.capture("Deploys go out on Tuesdays.", session="chat-b", turn=0, scope="project:ops")
    mem.capture("The cat is called Mochi.", session="chat-a", turn=0)            # an edit: a retired version
    keep = mem.learn("Unrelated note.")
    mem.recall("what is the cat called?")
    listed = {s.session: s for s in mem.sessions()}
    assert set(listed) == {"chat-a", "chat-b"} and listed["chat-a"].turns == 2
    assert [s.session for s in mem.sessions(scope="project:ops")] == ["chat-b"]
    gone = mem.forget_session("chat-a")
    assert len(gone) == 3                                              # both turns and the retired version
    assert {e.statement for e in mem.list()} == {"Deploys go out on Tuesdays.", keep.statement}
    assert all(e.id not in mem.stats.engram_ids() for e in gone)
    with pytest.raises(NotFoundError, match="plur sessions"):
        mem.forget_session("chat-a")


def _plur(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    env.update(PLUR_HOME=str(home), PLUR_MODEL="none", PLUR_AUTOSTART_SERVICE="0")
    return subprocess.run([sys.executable, "-m", "plur", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def test_cli_sessions_and_forget_session(plur_home: Path) -> None:
    with Memory(plur_home, model="none", capture="user") as m:
        m.capture("The cat is called Miso.", session="chat-a", turn=0)
        m.capture("Deploys go out on Tuesdays.", session="chat-b", turn=0)
    out = _plur(plur_home, "sessions", "--json")
    assert out.returncode == 0, out.stderr
    assert {s["session"] for s in json.loads(out.stdout)} == {"chat-a", "chat-b"}
    out = _plur(plur_home, "forget", "--session", "chat-a", "-y")
    assert out.returncode == 0 and "forgotten: session chat-a (1 engram)" in out.stdout, out.stderr
    assert "chat-a" not in _plur(plur_home, "sessions").stdout
    bad = _plur(plur_home, "forget", "--session", "chat-zzz", "-y")
    assert bad.returncode != 0 and "plur sessions" in bad.stderr
    both = _plur(plur_home, "forget")
    assert both.returncode == 2 and "--session" in both.stderr


def test_service_capture_endpoint(plur_home: Path) -> None:
    from starlette.testclient import TestClient

    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api

    with Memory(plur_home, model="none", capture="user") as m, RecallWorker(m, capture=False) as worker:
        (plur_home / "work" / "shop" / ".git").mkdir(parents=True)
        client = TestClient(create_api(m, worker, token="t"))
        auth = {"Authorization": "Bearer t"}
        body = {"text": f"The build box is hammer-3 and its token is {KEY}.", "session": "dsh-1", "turn": 0,
                "cwd": str(plur_home / "work" / "shop" / "src")}
        r = client.post("/api/v1/capture", json={**body, "wait": True}, headers=auth)
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["scope"] == "project:shop" and got["redacted"] == ["openai-key"] and len(got["stored"]) == 1
        r = client.post("/api/v1/capture", json={**body, "turn": 1, "text": "Backups run nightly at 2am."},
                        headers=auth)
        assert r.json() == {"queued": True, "scope": "project:shop"}
        deadline = time.monotonic() + 60
        while len(m.list()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(m.list()) == 2
        bad = client.post("/api/v1/capture", json={"text": "x", "session": "s", "turn": 0}, headers=auth)
        assert bad.status_code == 400 and "cwd" in bad.json()["error"]["message"]
        bad = client.post("/api/v1/capture", json={**body, "role": "bot"}, headers=auth)
        assert bad.status_code == 400 and "role" in bad.json()["error"]["message"]


def test_claude_code_hook_captures_the_prompt_and_under_all_the_answer(tmp_path: Path) -> None:
    """The hook without a service (in-process): UserPromptSubmit stores the prompt (turn 0, the project of cwd);
    Stop stores the assistant's last answer from the transcript (turn 1) only when capture = all."""
    from test_doors import _env

    work = tmp_path / "work" / "shop"
    (work / ".git").mkdir(parents=True)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(x) for x in [
        {"type": "user", "message": {"role": "user", "content": "My sister Lena moved to Vienna."}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "..."}, {"type": "text", "text": "Vienna is a lovely city for Lena."}]}},
    ]) + "\n")
    for mode, kept in (("user", ["My sister Lena moved to Vienna."]),
                       ("all", ["My sister Lena moved to Vienna.", "Vienna is a lovely city for Lena."])):
        home = tmp_path / mode
        env = _env(home, PLUR_CAPTURE=mode, PLUR_MODEL="none")
        assert subprocess.run([sys.executable, "-m", "plur", "init"], env=env, capture_output=True,
                              timeout=120).returncode == 0
        for event in ({"hook_event_name": "UserPromptSubmit", "prompt": "My sister Lena moved to Vienna."},
                      {"hook_event_name": "Stop", "transcript_path": str(transcript), "stop_hook_active": False}):
            proc = subprocess.run([sys.executable, "-m", "plur", "hook", "claude-code"], env=env, timeout=300,
                                  input=json.dumps({"session_id": "cc-1", "cwd": str(work), **event}),
                                  capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr
        with Memory(home, model="none") as m:
            got = sorted(m.list(), key=lambda e: e.source["turn"])
            assert [e.statement for e in got] == kept, mode
            # the user's fact follows the user (route_personal); the assistant's turn stays in the project
            assert [e.scope for e in got] == ["global", "project:shop"][:len(got)]
            assert [(e.source["turn"], e.type) for e in got][-1] == ((1, "reference") if mode == "all" else (0, "user"))


def test_a_prompt_with_a_key_sent_twice_is_counted_once_in_notes(tmp_path: Path) -> None:
    """The same prompt sent twice through the hook keeps one note: the key is counted once in notes and once per
    recall-log row, and `plur doctor` says so (docs/security.md#secrets)."""
    from test_doors import _env

    work = tmp_path / "work" / "shop"
    (work / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    env = _env(home, PLUR_CAPTURE="user", PLUR_MODEL="none")
    assert subprocess.run([sys.executable, "-m", "plur", "init"], env=env, capture_output=True,
                          timeout=120).returncode == 0
    prompt = f"The billing key is {KEY}, keep it safe."
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-m", "plur", "hook", "claude-code"], env=env, timeout=300,
                              input=json.dumps({"session_id": "cc-1", "cwd": str(work),
                                                "hook_event_name": "UserPromptSubmit", "prompt": prompt}),
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    with Memory(home, model="none") as m:
        assert [e.statement for e in m.list()] == ["The billing key is [redacted openai-key], keep it safe."]
        assert m.stats.screened_by_door() == {"recall": 2, "capture": 1}
    out = subprocess.run([sys.executable, "-m", "plur", "doctor"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert "3 redacted before writing (openai-key 3): 1 in notes, 2 in the recall log" in out.stdout, out.stdout
    report = json.loads(subprocess.run([sys.executable, "-m", "plur", "doctor", "--json"], env=env,
                                       capture_output=True, text=True, timeout=300).stdout)
    assert report["secrets_redacted"] == {"openai-key": 3}
    assert report["secrets_redacted_by_door"] == {"recall": 2, "capture": 1}


def test_service_capture_embeds_between_turns(plur_home: Path, embedder) -> None:
    """A turn queued to POST /capture is embedded by the capture thread right after it is stored, so the next
    turn's POST /block does not embed it first (capture off the turn path; bench: python -m bench capture-wait)."""
    from starlette.testclient import TestClient

    from plur.embed.models_lock import PACKAGED_MODEL
    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api

    with Memory(plur_home, embedder=embedder, model=PACKAGED_MODEL, capture="user") as m, \
            RecallWorker(m, capture=False) as worker:
        m.learn("The team meets on Thursdays.")
        client = TestClient(create_api(m, worker, token="t"))
        auth = {"Authorization": "Bearer t"}
        assert client.post("/api/v1/block", json={"agent_id": "a", "query": "When does the team meet?"},
                           headers=auth).status_code == 200           # the indexes are open, the model loaded
        r = client.post("/api/v1/capture", json={"text": "My sister Lena moved to Vienna last spring.",
                                                 "session": "s1", "turn": 0, "scope": "global"}, headers=auth)
        assert r.json()["queued"] is True
        deadline = time.monotonic() + 60
        while (len(m.list()) < 2 or m.index_state()["pending_dense"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(m.list()) == 2 and m.index_state()["pending_dense"] == 0, m.index_state()


def test_forget_session_through_a_running_service_takes_every_turn_in_one_write(tmp_path: Path) -> None:
    """plur forget --session with a service running: a conversation larger than /list's 5,000 rows goes whole,
    in one write (it found the turns through /list limit=5000 and forgot them one request, one save, each)."""
    import shutil
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="plur-fs-", dir="/tmp")) / "home"   # a unix socket path stays short
    turns = 5_030
    with Memory(home, model="none", fsync=False) as m:
        m.ingest([{"role": "user", "content": f"Turn {i}: the user mentioned parcel {i:05d} to the courier."}
                  for i in range(turns)], session="big-chat", scope="project:ship")
        m.ingest([{"role": "user", "content": "Another chat about the garden fence."}], session="other-chat")
        keep = m.learn("An unrelated note about tea.")
        assert len(m.list(scope="project:ship")) == turns
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    env.update(PLUR_HOME=str(home), PLUR_MODEL="none", PLUR_AUTOSTART_SERVICE="0", PLUR_FSYNC="0")

    def plur(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "plur", *args], env=env, capture_output=True, text=True,
                              timeout=600)
    started = plur("service", "start", "--port", "0")
    assert started.returncode == 0, started.stderr + started.stdout
    try:
        out = plur("forget", "--session", "big-chat", "-y", "--json")
        assert out.returncode == 0, out.stderr
        assert len(json.loads(out.stdout)["forgotten"]) == turns
        listed = plur("list", "--json", "--limit", "5000")
        assert listed.returncode == 0, listed.stderr
        assert "parcel" not in listed.stdout and keep.id in listed.stdout and "garden fence" in listed.stdout
    finally:
        stopped = plur("service", "stop")
        assert stopped.returncode == 0, stopped.stderr
    assert not list((home / "engrams").rglob("*.yaml")) or all(
        "parcel" not in p.read_text() for p in (home / "engrams").rglob("*.yaml"))
    assert {s.session for s in Memory(home, model="none").sessions()} == {"other-chat"}
    shutil.rmtree(home.parent, ignore_errors=True)
