"""`plur migrate`: a folder store to PostgreSQL and back, byte for byte; the PLUR_STORE setting; exit codes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.store.engram import Engram
from plur.store.store import EngramStore


def _invoke(home: Path, *args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["--home", str(home), *args], env={"PLUR_MODEL": "none", **(env or {})})


def _seed(home: Path) -> dict[str, bytes]:
    """A real folder store with unknown keys, provenance, a retired/superseding pair, pins and validity."""
    store = EngramStore(home)
    rows = [
        {"id": "ENG-2024-05-01-a1b2c3", "statement": "The user's dog is called Rex.", "scope": "global",
         "created": "2024-05-01T09:00:00Z", "tags": ["pets", "family"], "pinned": True,
         "x_team": {"owner": "ana", "weights": [0.25, 1, None, False]}, "x_nan": math.nan},
        {"id": "ENG-2024-05-02-d4e5f6", "statement": "I live in Lisbon.\nSince 2019.", "scope": "agent:coder",
         "created": "2024-05-02T10:00:00Z", "type": "user", "status": "retired",
         "valid_until": "2024-06-01T00:00:00Z",
         "source": {"kind": "conversation", "format": "messages", "session": "s-7", "turn": 4, "role": "user",
                    "speaker": "Ana", "date": "2024-05-02"}},
        {"id": "ENG-2024-06-01-0a0b0c", "statement": "I moved to Porto.", "scope": "agent:coder",
         "created": "2024-06-01T00:00:00Z", "supersedes": "ENG-2024-05-02-d4e5f6",
         "valid_from": "2024-06-01T00:00:00Z", "rationale": "moved", "domain": "life.home", "x_list": [{"a": 1}, "b"]},
        {"id": "ENG-2024-06-02-ffeedd", "statement": "Deploys need two approvals.", "scope": "project:plur",
         "created": "2024-06-02T12:30:00Z", "type": "procedure"},
    ]
    store.add_many([Engram.from_dict(r) for r in rows], dedupe=False)
    store.close()
    return {p.name: p.read_bytes() for p in (home / "engrams").rglob("*.yaml")}


def test_folder_to_database_and_back_is_lossless(tmp_path: Path, pg_uri: str):
    first, second = tmp_path / "first", tmp_path / "second"
    before = _seed(first)
    r = _invoke(first, "migrate", "--to", pg_uri, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"copied": 4, "skipped": 0, "quarantined": 0}
    r = _invoke(first, "migrate", "--to", pg_uri)                       # re-running skips
    assert r.exit_code == 0 and "migrated 0 engrams" in r.output and "4 already there" in r.output
    r = _invoke(second, "migrate", "--from", pg_uri, "--to", str(second))
    assert r.exit_code == 0, r.output
    assert "migrate:" not in r.output and "engram/s" not in r.output     # no progress bar for 4, nor into a pipe
    after = {p.name: p.read_bytes() for p in (second / "engrams").rglob("*.yaml")}
    assert after == before                                                # the same files, byte for byte


def test_plur_store_setting_serves_the_cli_from_the_database(tmp_path: Path, pg_uri: str):
    home = tmp_path / "h"
    _seed(home)
    assert _invoke(home, "migrate", "--to", pg_uri).exit_code == 0
    other = tmp_path / "elsewhere"                                        # a second machine's home
    r = _invoke(other, "list", "--json", env={"PLUR_STORE": pg_uri})
    assert r.exit_code == 0, r.output
    assert "Deploys need two approvals." in r.output
    r = _invoke(other, "learn", "Learned on the second machine.", env={"PLUR_STORE": pg_uri})
    assert r.exit_code == 0, r.output
    assert not (other / "engrams").exists()                               # nothing written as files
    r = _invoke(home, "list", env={"PLUR_STORE": pg_uri})
    assert "Learned on the second machine." in r.output


def test_conflicting_target_and_bad_settings(tmp_path: Path, pg_uri: str):
    home = tmp_path / "h"
    _seed(home)
    assert _invoke(home, "migrate", "--to", pg_uri).exit_code == 0
    store = EngramStore(home)
    e = store.get("ENG-2024-06-02-ffeedd")
    store.put(e.replace(statement="Deploys need three approvals."))
    store.close()
    r = _invoke(home, "migrate", "--to", pg_uri)
    assert r.exit_code == 8 and "other content" in r.output and r.output.count("\n") == 1
    r = _invoke(home, "list", env={"PLUR_STORE": "mysql://x"})
    assert r.exit_code == 2 and "not a PostgreSQL URI" in r.output
    r = _invoke(home, "list", env={"PLUR_STORE": "postgresql://plur:pw@127.0.0.1:1/none"})
    assert r.exit_code == 9 and "unreachable" in r.output and "pw@" not in r.output
    assert r.output.count("\n") == 1
