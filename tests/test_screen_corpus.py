"""The secret screen's promises, measured on two generated corpora (tests/screen_corpus.py, seeded): 2,750 ordinary
strings of the kinds users type lose nothing; 700 secrets of 50 kinds are all cut out; screening is idempotent
(a hypothesis property); what issue 47 found kept or destroyed is now right."""

from __future__ import annotations

import string
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plur.screen.numbers import ID_KINDS
from plur.screen.pieces import join
from plur.screen.text import MARKER, find_secrets, redact, screen
from screen_corpus import B62, URLSAFE, Case, body, ordinary, secret_cases

import random

ORDINARY = ordinary()
SECRETS = secret_cases()


def test_the_corpora_are_as_large_as_promised() -> None:
    kinds = {k for k, _ in ORDINARY}
    assert len(ORDINARY) >= 2000 and {"model-id", "file-path", "commit-hash", "uuid", "image-tag", "url", "package-pin",
                                      "base64ish-id"} <= kinds
    assert len(SECRETS) >= 500 and len({c.kind for c in SECRETS}) >= 20


def test_ordinary_strings_lose_nothing() -> None:
    changed = [(kind, text, redact(text)) for kind, text in ORDINARY if redact(text) != text]
    assert changed == [], f"{len(changed)} of {len(ORDINARY)} ordinary strings changed, e.g. {changed[:5]}"


def test_every_generated_secret_is_cut_out() -> None:
    missed = [(c.kind, c.text, out) for c in SECRETS if any(g in (out := redact(c.text)) for g in c.gone)]
    assert missed == [], f"{len(missed)} of {len(SECRETS)} secrets kept: {Counter(k for k, _, _ in missed)} {missed[:3]}"


@pytest.mark.parametrize("text,kept", [
    ("My password for the company system is SuperSecret123!", "My password for the company system is "),
    ("the wifi password is plumtree99", "the wifi password is "),
    ("DB_PASSWORD=Winter2024!", "DB_PASSWORD="),
    ("OPENAI_API_KEY=Fig2024secret#", "OPENAI_API_KEY="),
    ("db_password: Winter2024!", "db_password: "),
    ("db_password: postgres", "db_password: "),
    ("card 4111 1111 1111 1111 exp 04/27", "card "),
    ("my SSN is 123-45-6789.", "my SSN is "),
    ("Mein Passwort für das WLAN ist Sonne2024!", "Mein Passwort für das WLAN ist "),
    ("我的密码是plum99，别告诉别人", "我的密码是"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNz' https://api.example.com", "curl -H 'Authorization: Basic "),
])
def test_what_issue_47_found_kept_is_cut(text: str, kept: str) -> None:
    out = screen(text)
    assert out.text.startswith(kept + "[redacted ") and len(out.kinds) == 1, out


@pytest.mark.parametrize("text", [
    "BAAI/bge-small-en-v1.5", "Alibaba-NLP/gte-base-en-v1.5", "sentence-transformers/all-MiniLM-L6-v2",
    "plur: embedding model 'BAAI/bge-small-en-v1.5' could not be loaded; Fix: python scripts/fetch_models.py "
    "download BAAI/bge-small-en-v1.5 (needs huggingface.co)",
    "My password manager is 1Password.", "password: changeme", "The token limit is 4096.", "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "self.token = token", "login_token = login_token or new_login_token()", "OPENAI_API_KEY=sk-...",
    "Use Bearer authentication for the API.", "Authorization: Bearer $TOKEN",
])
def test_names_models_and_code_are_kept_whole(text: str) -> None:
    assert find_secrets(text) == [] and redact(text) == text


def test_redaction_is_counted_once_and_never_again() -> None:
    """Capture screens a turn and ingest screens it again: the second screen finds nothing (before, a password's
    marker was read as a new password: ``password=[redacted password] password]``, counted twice)."""
    once = screen("the wifi password=hunter2x, and DB_PASSWORD=Winter2024!")
    assert once.text == "the wifi password=[redacted password], and DB_PASSWORD=[redacted password]"
    assert once.kinds == ("password", "password")
    again = screen(once.text)
    assert again.text == once.text and again.clean


def test_a_secret_revealed_by_a_redaction_is_cut_in_the_same_call() -> None:
    """``screen`` runs until nothing is found, so what it returns is a fixed point (its idempotence)."""
    key = "gh" + "p_" + body(random.Random(1), 36)
    out = screen(f"token: {key} Abc123def")
    assert key not in out.text and screen(out.text).clean


def test_identity_numbers_can_be_kept_cards_never() -> None:
    text = "SSN 123-45-6789, DNI 12345678Z, card 4111-1111-1111-1111"
    assert redact(text) == "SSN [redacted us-ssn], DNI [redacted es-dni], card [redacted payment-card]"
    assert redact(text, keep_ids=True) == "SSN 123-45-6789, DNI 12345678Z, card [redacted payment-card]"
    ids = [c for c in SECRETS if c.kind in ID_KINDS]
    assert len({c.kind for c in ids}) >= 8 and all(screen(c.text, keep_ids=True).clean for c in ids)


@pytest.mark.parametrize("text", ["4111 1111 1111 1112", "order 4000123412341235 shipped", "ISBN 978-3-16-148410-0",
                                  "123-45-678", "000-12-3456", "666-12-3456", "900-12-3456", "12345678A",
                                  "call +1 415-555-0100", "1700000000000"])
def test_numbers_that_fail_their_check_are_kept(text: str) -> None:
    assert redact(text) == text


def test_a_key_pasted_in_two_pieces_is_cut_in_both() -> None:
    r = random.Random(7)
    for _ in range(50):
        key = body(r, 32, URLSAFE)
        if screen(key).clean:                            # whole, the screen misses 1-2 random keys in 100: so here
            continue
        first = screen(f"first half of the key: {key[:16]}").text
        assert first.endswith(key[:16])                  # alone, half a key looks like nothing
        got = join(first, f"and the rest: {key[16:]} thanks")
        assert got is not None and key[:16] not in got.before and key[16:] not in got.text
        assert got.before == "first half of the key: [redacted split-key]"
    vendor = join("my key is " + "sk" + "-proj-Ab12", "Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78 ok")
    assert vendor is not None and vendor.kind == "openai-key" and vendor.text == "[redacted openai-key] ok"
    rest = join("the key [redacted high-entropy]", "Zq8Vb2Lx7Pw3 is the rest")
    assert rest is not None and rest.before == "the key [redacted high-entropy]" and "Zq8V" not in rest.text


@pytest.mark.parametrize("before,text", [
    ("I moved to Vienna.", "AbCd1234EfGh is my locker code"), ("see test_v2.py", "Python3 is next"),
    ("deploy web-7d4b9c8f5-x2k9p", "then api-5f6g7h8j9-k3l4m"), ("the key [redacted high-entropy]", "Python3Rocks"),
    ("use BAAI/bge-small", "en-v1.5 for it"),
])
def test_neighbouring_turns_without_a_split_key_are_kept(before: str, text: str) -> None:
    assert join(before, text) is None


pieces = [c.text for c in secret_cases(rounds=1)] + [t for _, t in ordinary(3)] + [
    "[redacted password]", "[redacted ", "]", "password", "password: ", "=", " is ", "DB_PASSWORD=", "sk-",
    "4111 1111 1111 1111", "\x00", "密码是", "\n", " ", "token: ", "my password is ", "123-45-6789"]
texts = st.lists(st.one_of(st.sampled_from(pieces), st.text(max_size=12),
                           st.text(alphabet=string.ascii_letters + string.digits + "_-=:[] !#/.", max_size=30)),
                 max_size=12).map("".join)


@given(texts, st.booleans())
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_redact_is_idempotent(text: str, keep_ids: bool) -> None:
    once = redact(text, keep_ids=keep_ids)
    assert redact(once, keep_ids=keep_ids) == once
    assert screen(once, keep_ids=keep_ids).clean


@given(st.sampled_from(SECRETS), st.sampled_from([t for _, t in ORDINARY]))
@settings(max_examples=200, deadline=None)
def test_a_secret_beside_ordinary_text_goes_and_the_text_stays(case: Case, other: str) -> None:
    out = redact(f"{other}\n{case.text}")
    assert out.startswith(other + "\n") and not any(g in out for g in case.gone)
    assert len(MARKER.findall(out)) >= 1
