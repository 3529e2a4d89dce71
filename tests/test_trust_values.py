"""Every number, flag, duration and date a user gives ends in a value or one line naming it (exit 2), from any source.

Property-based (hypothesis) over the one strict parser (:mod:`plur.values`), the settings loader for
config.toml and the environment, durations and timestamps; then the cases found by hand end to end:
``--ttl 99999999d``, ``recall_k = 1e400``, silent config coercions, ``--valid-until`` before ``--created``,
and a ``PLUR_HOME`` that is not UTF-8.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tomllib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings, strategies as st

from plur.cli import cli
from plur.config import SETTINGS, load_settings
from plur.errors import ConfigError, ValidationError
from plur.store.times import MAX_DURATION, parse_duration, parse_time, utcnow
from plur.values import parse_bool, parse_float, parse_int, parse_str

ANY = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-10**400, max_value=10**400),
                st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
                st.from_regex(r"\A\s*[+-]?[0-9]{0,30}(\.[0-9]{0,5})?([eE][+-]?[0-9]{1,4})?\s*\Z"),
                st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=1))
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and len(text) < 400, text
    return text


@FAST
@given(ANY, st.one_of(st.none(), st.integers(-100, 100)), st.one_of(st.none(), st.integers(-100, 10**6)))
def test_parse_int_gives_a_whole_number_in_range_or_one_line(value, lo, hi) -> None:
    try:
        out = parse_int(value, "n", source="test", lo=lo, hi=hi)
    except ValidationError as exc:
        assert "n=" in _one_line(exc) and "(from test)" in str(exc)
        return
    assert type(out) is int and not isinstance(value, (bool, float))
    assert out == (int(value.strip()) if isinstance(value, str) else value)
    assert (lo is None or out >= lo) and (hi is None or out <= hi)


@FAST
@given(ANY, st.one_of(st.none(), st.floats(-10, 10)), st.one_of(st.none(), st.floats(-10, 1e6)))
def test_parse_float_gives_a_finite_number_in_range_or_one_line(value, lo, hi) -> None:
    try:
        out = parse_float(value, "x", lo=lo, hi=hi)
    except ValidationError as exc:
        assert "x=" in _one_line(exc)
        return
    assert type(out) is float and math.isfinite(out) and not isinstance(value, bool)
    assert (lo is None or out >= lo) and (hi is None or out <= hi)


@FAST
@given(ANY)
def test_parse_bool_and_str_take_only_their_own_kind(value) -> None:
    try:
        flag = parse_bool(value, "f")
    except ValidationError as exc:
        _one_line(exc)
        assert not isinstance(value, bool)
    else:
        assert isinstance(value, (bool, str)) and flag in (True, False)
    try:
        word = parse_str(value, "w")
    except ValidationError as exc:
        _one_line(exc)
        assert not isinstance(value, str)
    else:
        assert word == value


def _toml(value) -> str | None:
    """``value`` as a TOML value, or None when TOML cannot write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if -2**63 <= value < 2**63 else None
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value == math.inf else "-inf" if value == -math.inf
                                                else repr(value))
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        try:
            tomllib.loads(f"x = {text}")
        except (tomllib.TOMLDecodeError, UnicodeEncodeError):
            return None
        return text
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.function_scoped_fixture])
@given(st.sampled_from(SETTINGS), st.one_of(st.booleans(), st.integers(-10**6, 10**7), st.floats(),
                                            st.text(max_size=20), st.sampled_from(["1.5", "2", "on", "1e400"])))
@example(next(s for s in SETTINGS if s.name == "relevance_floor"), 0)   # hypothesis found it: '0.0' == 0 failed
@example(next(s for s in SETTINGS if s.name == "relevance_floor"), 0.25)
def test_config_and_environment_are_parsed_alike_and_refusals_name_key_and_file(plur_home: Path, spec,
                                                                                 value) -> None:
    text = _toml(value)
    if text is None:
        return
    plur_home.mkdir(parents=True, exist_ok=True)
    cfg = plur_home / "config.toml"
    cfg.write_text(f"{spec.name} = {text}\n", encoding="utf-8")
    try:
        got = getattr(load_settings(plur_home), spec.name)
    except ConfigError as exc:
        msg = _one_line(exc)
        assert spec.name in msg and str(cfg) in msg
        got = None
    finally:
        cfg.unlink()
    if got is not None:   # accepted: of the setting's own type, never a silent coercion
        assert type(got) is spec.type
        if spec.type is int:   # a TOML integer, or digits in quotes (as the environment gives them)
            assert got == (int(value) if isinstance(value, str) else value) and type(value) in (int, str)
        elif spec.type is bool:
            assert type(value) is bool or (isinstance(value, str) and value.strip().lower() in
                                           {"1", "0", "true", "false", "yes", "no", "on", "off"})
        elif spec.type is str:   # relevance_floor also takes a TOML number (0.3), kept as its text (plur.config)
            number = spec.name == "relevance_floor" and isinstance(value, (int, float)) and not isinstance(value, bool)
            assert got == (repr(float(value)) if number else value)
        else:
            assert not isinstance(value, bool) and math.isfinite(got)
    if isinstance(value, str) and value.strip() and "\x00" not in value:   # the same text from the environment
        env = "PLUR_" + spec.name.upper()
        old = os.environ.get(env)
        os.environ[env] = value
        try:
            from_env = getattr(load_settings(plur_home), spec.name)
        except ConfigError as exc:
            assert env in _one_line(exc)
            from_env = None
        finally:
            os.environ.pop(env) if old is None else os.environ.__setitem__(env, old)
        if spec.type is str and got is not None:
            assert from_env == got


@FAST
@given(st.one_of(st.text(max_size=20), st.from_regex(r"\A[0-9]{1,15}(\.[0-9]{1,3})?[smhdwSMHDW]\Z"),
                 st.timedeltas(), st.integers(), st.none()))
def test_durations_are_bounded_and_never_overflow(value) -> None:
    try:
        td = parse_duration(value)
    except ValidationError as exc:
        _one_line(exc)
        return
    assert timedelta(0) < td <= MAX_DURATION
    assert utcnow() + td > utcnow()            # the expiry a ttl sets is always a date


@FAST
@given(st.one_of(st.text(max_size=30), st.datetimes(timezones=st.one_of(st.none(), st.timezones())),
                 st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}([+-][0-9]{2}:[0-9]{2}|Z)?)?\Z"),
                 st.integers(), st.floats()))
def test_timestamps_are_utc_or_one_line(value) -> None:
    try:
        dt = parse_time(value, "created")
    except ValidationError as exc:
        assert "created" in _one_line(exc)
        return
    assert dt.tzinfo is not None and dt.utcoffset() == timedelta(0)


# -- the cases found by hand, end to end ----------------------------------------------------
@pytest.fixture
def run(plur_home: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PLUR_MODEL", "none")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli, ["--home", str(plur_home), *args])

    return invoke


@pytest.mark.parametrize("args, needle", [
    (["--ttl", "99999999d"], "ttl '99999999d' is longer than 100 years"),
    (["--ttl", "1e400d"], "ttl '1e400d' is not a duration"),
    (["--ttl", "0d"], "not a positive duration"),
    (["--created", "0001-01-01T00:00+01:00"], "outside the years 1-9999"),
    (["--valid-until", "2025-01-01", "--created", "2025-06-01"], "valid_until 2025-01-01T00:00:00Z is not after created"),
])
def test_learn_refuses_bad_times_in_one_line_exit_2(run, args: list[str], needle: str) -> None:
    r = run("learn", "The locker code is 7731.", *args)
    assert r.exit_code == 2 and needle in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.output and run("list", "--json").stdout.strip() == "[]"


def test_learn_says_when_valid_until_is_already_past(run) -> None:
    r = run("learn", "The demo server was demo-3.", "--created", "2020-01-01", "--valid-until", "2021-05-01")
    assert r.exit_code == 0 and "already expired (valid_until 2021-05-01T00:00:00Z is in the past)" in r.stderr


@pytest.mark.parametrize("line, needle", [
    ("recall_k = 1e400", "recall_k=inf"), ("turn_chunk_tokens = 1.5", "turn_chunk_tokens=1.5"),
    ("date_mentions = 2", "date_mentions=2"), ("candidates = true", "candidates=True"),
    ("budget_tokens = 2.7", "budget_tokens=2.7"), ("model = 5", "model=5"),
])
def test_config_values_are_not_coerced(run, plur_home: Path, line: str, needle: str) -> None:
    plur_home.mkdir(parents=True, exist_ok=True)
    (plur_home / "config.toml").write_text(line + "\n", encoding="utf-8")
    r = run("list")
    assert r.exit_code == 2 and needle in r.stderr and str(plur_home / "config.toml") in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


def test_api_refuses_an_overflowing_ttl_and_k_as_bad_input(memory) -> None:
    from starlette.testclient import TestClient

    from plur.prompt.worker import RecallWorker
    from plur.service.api import create_api

    worker = RecallWorker(memory)
    try:
        with TestClient(create_api(memory, worker, "tok")) as c:
            auth = {"Authorization": "Bearer tok", "Content-Type": "application/json"}
            r = c.post("/api/v1/learn", json={"statement": "x", "ttl": "99999999d"}, headers=auth)
            assert r.status_code == 400 and "longer than 100 years" in r.json()["error"]["message"]
            r = c.post("/api/v1/recall", content=b'{"query": "x", "k": 1e400}', headers=auth)
            assert r.status_code == 400 and "'k'" in r.json()["error"]["message"]
            r = c.post("/api/v1/recall", json={"query": "x", "k": 10**6}, headers=auth)
            assert r.status_code == 400 and "k=1000000" in r.json()["error"]["message"]
    finally:
        worker.close()


def test_a_home_path_that_is_not_utf8_works(tmp_path: Path) -> None:
    home = os.fsdecode(os.fsencode(str(tmp_path)) + b"/home\xff")
    env = {**os.environ, "PLUR_HOME": home, "PLUR_MODEL": "none", "HF_HUB_OFFLINE": "1"}
    for args in (["learn", "The locker code is 7731."], ["list"], ["doctor", "--no-model"], ["recall", "locker"],
                 ["list"]):
        r = subprocess.run([sys.executable, "-m", "plur", *args], env=env, capture_output=True, timeout=120)
        assert r.returncode == 0 and b"Traceback" not in r.stderr and b"Error" not in r.stderr, (args, r.stderr)
    assert b"locker code" in r.stdout


WORDS = ["yesterday", "tomorrow", "today", "tonight", "last week", "next week", "last month", "next month",
         "last year", "next year", "two weeks ago", "3 days ago", "on monday", "last friday", "in march",
         "march 5", "5 march 2022", "the weekend", "this morning", "10 years ago", "in 9999", "in 0001"]


@FAST
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" and ".join),
       st.one_of(st.dates(), st.datetimes(timezones=st.one_of(st.none(), st.timezones()))))
def test_date_words_resolve_on_any_date_without_overflow(text: str, when) -> None:
    """An engram dated 9999-12-31 (or year 1) that says 'tomorrow' names no date: never an OverflowError."""
    from plur.index.dates import mentioned, resolve

    for ranges in (resolve(text, when), mentioned(text, when)):
        assert all(r.start <= r.end for r in ranges)
