"""The secret screen at plur's doors (issue 47): capture stores one marker per secret and counts it once, under
capture; a key pasted in two pieces over two turns of a conversation leaves neither piece in the home (notes,
ingest, the recall log); identity numbers are kept only when the setting says so; the CLI's model-fallback
warning names the model and its Fix command runs as printed."""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Iterator

import pytest

from plur.memory import Memory
from screen_corpus import URLSAFE, body


def files_holding(home: Path, needle: str) -> list[str]:
    """Every file under ``home`` whose bytes hold ``needle``."""
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and needle.encode() in p.read_bytes())


@pytest.fixture
def mem(plur_home: Path) -> Iterator[Memory]:
    m = Memory(plur_home, model="none", fsync=False, capture="user")
    yield m
    m.close()


def split_key(seed: int = 3) -> str:
    """A random 32-character key that the screen catches whole (each 16-character half alone looks like nothing)."""
    from plur.screen.text import screen

    r = random.Random(seed)
    while True:
        key = body(r, 32, URLSAFE)
        if not screen(key).clean and screen(key[:16]).clean and screen(key[16:]).clean:
            return key


def test_a_captured_password_is_one_marker_counted_once_under_capture(mem: Memory) -> None:
    """Capture screened a turn and ingest screened it again: ``password=[redacted password] password]`` was stored,
    counted under capture and under ingest."""
    got = mem.capture("the staging wifi password=hunter2x, ask Lena", session="s", turn=0)
    (e,) = got.stored
    assert e.statement == "the staging wifi password=[redacted password], ask Lena"
    assert got.redacted == ("password",)
    assert mem.stats.screened_by_door() == {"capture": 1} and mem.stats.screened_counts() == {"password": 1}


@pytest.mark.parametrize("said", ["My password for the company system is SuperSecret123!",
                                  "DB_PASSWORD=Winter2024!", "my card is 4111 1111 1111 1111"])
def test_secrets_said_in_words_never_reach_the_home(mem: Memory, plur_home: Path, said: str) -> None:
    secret = said.rsplit("=", 1)[-1].rsplit(" is ", 1)[-1]
    mem.capture(said, session="s", turn=0)
    mem.recall(said)
    mem.close()
    assert files_holding(plur_home, secret) == []


def test_a_key_pasted_in_two_turns_leaves_neither_piece(mem: Memory, plur_home: Path) -> None:
    key = split_key()
    first = mem.capture(f"the deploy key, first half: {key[:16]}", session="s", turn=0, agent="a")
    assert first.stored and key[:16] in first.stored[0].statement      # alone, half a key looks like nothing
    mem.recall(f"the deploy key, first half: {key[:16]}", agent="a")
    second = mem.capture(f"and the second half: {key[16:]}", session="s", turn=1, agent="a")
    mem.recall(f"and the second half: {key[16:]}", agent="a")
    assert second.redacted == ("split-key",)
    notes = sorted(e.statement for e in mem.list())
    assert notes == ["and the second half: [redacted split-key]", "the deploy key, first half: [redacted split-key]"]
    (earlier,) = [e for e in mem.list() if e.source["turn"] == 0]
    assert earlier.source == {"kind": "conversation", "format": "capture", "session": "s", "turn": 0, "role": "user",
                              "capture": True, "agent": "a"}
    assert mem.stats.screened_by_door() == {"capture": 1, "recall": 1}
    mem.close()
    assert files_holding(plur_home, key[:16]) == [] and files_holding(plur_home, key[16:]) == []


@pytest.mark.parametrize("lead,kinds", [("here it is:", {"split-key": 1}), ("the token:", {"password": 1})])
def test_ingest_cuts_a_key_split_over_two_turns(mem: Memory, lead: str, kinds: dict[str, int]) -> None:
    """Either neither piece alone is a secret (both cut as one ``split-key``), or the first is ("the token: ...") and
    the rest of it, opening the speaker's next turn, is cut too; the key is counted once."""
    key = split_key(5)
    messages = [{"role": "user", "content": f"{lead} {key[:16]}"},
                {"role": "assistant", "content": "Got it, what is the rest?"},
                {"role": "user", "content": f"{key[16:]} is the rest"}]
    res = mem.ingest(messages, session="chat-1")
    assert res.secrets == 1 and mem.stats.screened_by_door() == {"ingest": 1}
    assert mem.stats.screened_counts() == kinds
    rest, first = sorted(e.statement for e in mem.list())     # the user's turns
    assert rest == "[redacted split-key] is the rest" and first.startswith(lead + " [redacted ") and key[:16] not in first


def test_identity_numbers_are_kept_only_when_the_setting_says_so(plur_home: Path) -> None:
    text = "My SSN is 123-45-6789 and my card is 4111 1111 1111 1111."
    with Memory(plur_home / "a", model="none", fsync=False, capture="user") as m:
        assert m.capture(text, session="s", turn=0).stored[0].statement == \
            "My SSN is [redacted us-ssn] and my card is [redacted payment-card]."
    with Memory(plur_home / "b", model="none", fsync=False, capture="user", keep_identity_numbers=True) as m:
        assert m.capture(text, session="s", turn=0).stored[0].statement == \
            "My SSN is 123-45-6789 and my card is [redacted payment-card]."


def test_the_fallback_warning_names_the_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI's warning line passes the screen: ``BAAI/bge-small-en-v1.5`` became ``[redacted high-entropy]``, in
    the warning and in its Fix command."""
    from plur.cli import log_to_stderr
    from plur.config import load_settings
    from plur.embed.resolve import ModelFallbackWarning, resolve_embedder

    log_to_stderr()
    logger = logging.getLogger("plur")
    try:
        with pytest.warns(ModelFallbackWarning):
            res = resolve_embedder(load_settings(tmp_path / "home", device="cpu", model="BAAI/bge-small-en-v1.5"),
                                   cache_dir=tmp_path / "empty-hf-cache")
    finally:
        logger.handlers = [h for h in logger.handlers if type(h).__name__ != "Stderr"]
    err = capsys.readouterr().err
    assert res.source == "packaged-fallback"
    assert "embedding model 'BAAI/bge-small-en-v1.5' could not be loaded" in err, err
    assert "Fix: python -m plur.embed.fetch download BAAI/bge-small-en-v1.5 (needs huggingface.co)" in err
    assert "[redacted" not in err
