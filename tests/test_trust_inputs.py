"""Hostile or damaged input ends in one clear error, never a hang, a traceback or a silent accept.

Settings out of range, YAML alias bombs everywhere YAML is read, engram files with empty required
fields (a truncated ``created:``), terminal control sequences in human output, invalid UTF-8 on
the command line and stdin.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from plur.config import SETTINGS, load_settings
from plur.errors import ConfigError, ValidationError
from plur.store.engram import Engram
from plur.store.safe_yaml import load_yaml
from plur.store.store import EngramStore
from plur.formats.transfer import read_engrams


# -- settings ---------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "value", "bounds"), [
    ("dense_weight", 7, "0 to 1"), ("bm25_b", 1.5, "0 to 1"), ("rrf_k", 0, "1 to"),
    ("hnsw_m", 1, "2 to"), ("embed_batch_size", 0, "1 to"), ("bm25_k1", "nan", "0 to"),
    ("recall_timeout_s", 0, "0.001 to"), ("max_embed_chunks", 0, "1 to"),
])
def test_every_setting_is_range_checked_at_load(plur_home: Path, name: str, value: object, bounds: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(plur_home, **{name: value})
    msg = str(err.value)
    assert name in msg and str(value) in msg and bounds in msg


def test_config_toml_out_of_range_names_the_file(plur_home: Path) -> None:
    plur_home.mkdir(parents=True)
    (plur_home / "config.toml").write_text("dense_weight = 7\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"dense_weight=7 \(from .*config.toml\) is out of range"):
        load_settings(plur_home)


def test_every_number_setting_has_a_range() -> None:
    assert [s.name for s in SETTINGS if s.type in (int, float) and s.range is None] == []


# -- YAML alias bombs -------------------------------------------------------------------
def _bomb(levels: int = 7, width: int = 9, indent: str = "") -> str:
    """A "billion laughs" document: ``width ** levels`` strings from a few hundred bytes."""
    lines = [f'{indent}a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        refs = ", ".join([f"*a{i - 1}"] * width)
        lines.append(f"{indent}a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


def test_safe_loader_refuses_an_alias_bomb_fast() -> None:
    text = _bomb(levels=3, width=9)  # 27 aliases: fine for a person's file
    assert len(load_yaml(text)["a3"]) == 9
    # The refusals are structural (aliases and nodes are counted before anything is expanded), so the
    # verdict never depends on the machine's speed; a real expansion of these would not finish at all.
    with pytest.raises(ValidationError, match="alias"):
        load_yaml(_bomb(levels=12, width=9))
    with pytest.raises(ValidationError, match="alias bomb"):
        load_yaml(_bomb(levels=6, width=16), max_aliases=1000)  # few aliases, 16**6 nodes
    with pytest.raises(ValidationError, match="recursive"):
        load_yaml("a: &a [*a]\n")
    with pytest.raises(ValidationError, match="over plur's limit"):
        load_yaml("x: " + "y" * 2000 + "\n", max_bytes=1000)


def test_alias_limit_counts_every_use_exactly_whatever_the_order() -> None:
    # The aliases are counted in the composed node graph (references minus distinct nodes), so an
    # alias written before its anchor's other uses, or inside a nested list, counts the same.
    def doc(uses: int) -> str:
        return "base: &b {x: 1}\nlater: [" + ", ".join(["*b"] * (uses - 1)) + "]\nfirst: *b\n"
    assert len(load_yaml(doc(100))["later"]) == 99
    with pytest.raises(ValidationError, match="101 aliases, more than 100"):
        load_yaml(doc(101))


@pytest.mark.parametrize("text", [
    "id: ENG-2025-01-01-aaaaaa\nstatement: 'It''s *bold* - and: colons'\ntags: [a, b]\ncreated: 2025-01-01\n",
    "a: 2025-01-01T10:00:00Z\nb: [1, 2.5, true, null, ~, '3']\nc: {d: [e, {f: g}]}\n",
    "k: |\n  line one\n  line two\nm: >\n  folded\n  text\n",
])
def test_load_yaml_agrees_with_pyyaml_safe_load(text: str) -> None:
    # load_yaml composes with libyaml when PyYAML has it; the values must be PyYAML's SafeLoader's.
    assert load_yaml(text) == yaml.load(text, Loader=yaml.SafeLoader)


def test_plur_yaml_import_refuses_an_alias_bomb(tmp_path: Path) -> None:
    path = tmp_path / "engrams.yaml"
    path.write_text(_bomb(levels=6, width=9) + 'engrams:\n  - {id: ENG-2025-01-01-aaaaaa, statement: "x",'
                    ' extra: *a6}\n', encoding="utf-8")
    with pytest.raises(ValidationError, match="alias"):
        read_engrams(path)


def test_claude_dir_frontmatter_refuses_an_alias_bomb(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    folder.mkdir()
    (folder / "x.md").write_text("---\n" + _bomb(levels=6, width=9) + "name: x\n---\n\nbody\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="alias"):
        read_engrams(folder, "claude-dir")


def test_an_engram_file_with_an_alias_bomb_is_quarantined(plur_home: Path) -> None:
    store = EngramStore(plur_home, fsync=False)
    good, _ = store.add(Engram.create("kept"))
    bad = "ENG-2025-01-01-bbbbbb"
    (store.root / f"{bad}.yaml").write_text(
        _bomb(levels=6, width=9) + f"id: {bad}\nstatement: x\nscope: global\ncreated: 2025-01-01\n"
        "extra: *a6\n", encoding="utf-8")
    fresh = EngramStore(plur_home, fsync=False)
    assert [e.id for e in fresh.all()] == [good.id]
    assert "alias" in fresh.quarantined()[0]["reason"]


# -- required fields --------------------------------------------------------------------
@pytest.mark.parametrize("tail", ["created:\n", "created: ''\n", "created: '   '\n"])
def test_an_empty_required_field_on_disk_is_quarantined(plur_home: Path, tail: str) -> None:
    store = EngramStore(plur_home, fsync=False)
    e, _ = store.add(Engram.create("The dog is Rex."))
    path = store.path_for(e.id)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.index("created:")] + tail, encoding="utf-8")  # truncated at created:
    fresh = EngramStore(plur_home, fsync=False)
    assert fresh.all() == []
    q = fresh.quarantined()
    assert len(q) == 1 and "created" in q[0]["reason"]


@pytest.mark.parametrize("field", ["id", "statement", "scope", "created"])
def test_from_dict_refuses_an_empty_required_field_as_on_write(field: str) -> None:
    data = Engram.create("x").to_dict()
    data[field] = None
    with pytest.raises(ValidationError, match=field):
        Engram.from_dict(data)


def test_jsonl_import_refuses_an_empty_created(tmp_path: Path) -> None:
    row = Engram.create("x").to_dict()
    row["created"] = None
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="created"):
        read_engrams(path)



# -- quarantine reasons name the fix (new-user trial) ------------------------------------
def _quarantine_reason(plur_home: Path, text: str, eid: str | None = None) -> tuple[str, str]:
    """Write ``text`` over the file of engram ``eid`` (default: a new one); (its id, the reason a fresh store
    quarantines it for)."""
    store = EngramStore(plur_home, fsync=False)
    if eid is None:
        eid = store.add(Engram.create("The dog is Rex."))[0].id
    store.path_for(eid).write_text(text, encoding="utf-8")
    fresh = EngramStore(plur_home, fsync=False)
    assert fresh.all() == []
    [q] = fresh.quarantined()
    return eid, q["reason"]


@pytest.mark.parametrize(("value", "fix"), [
    ("12345", 'statement must be text, got int 12345; put it in quotes so it is read as text, '
              'e.g. statement: "12345"'),
    ("1.5", 'got float 1.5; put it in quotes so it is read as text, e.g. statement: "1.5"'),
    ("yes", 'got bool True; put it in quotes so it is read as text (YAML reads yes/no'),
    ("[a, b]", "got list ['a', 'b']; write it as one text in quotes, e.g. statement: \"...\""),
])
def test_a_statement_yaml_reads_as_no_text_names_the_fix(value: str, fix: str) -> None:
    eid = "ENG-2025-01-01-abcdef"
    text = f"id: {eid}\nstatement: {value}\nscope: global\ncreated: 2025-01-01T00:00:00Z\n"
    with pytest.raises(ValidationError) as err:
        Engram.from_yaml(text)
    assert fix in str(err.value)


def test_a_number_statement_in_a_stored_file_is_quarantined_with_the_quoting_fix(plur_home: Path) -> None:
    store = EngramStore(plur_home, fsync=False)
    e, _ = store.add(Engram.create("The dog is Rex."))
    text = store.path_for(e.id).read_text(encoding="utf-8").replace("statement: The dog is Rex.", "statement: 12345")
    _, reason = _quarantine_reason(plur_home, text, e.id)
    assert reason == ('statement must be text, got int 12345; put it in quotes so it is read as text, '
                      'e.g. statement: "12345"')


@pytest.mark.parametrize(("text", "what"), [("", "0 bytes"), ("\n  \n", "4 bytes, whitespace only")])
def test_an_empty_engram_file_is_quarantined_saying_so_and_how_to_fix_it(plur_home: Path, text: str,
                                                                         what: str) -> None:
    eid, reason = _quarantine_reason(plur_home, text)
    assert reason == (f"the file is empty ({what}: a write cut short, or emptied by hand); write its fields back "
                      f"(id: {eid}, statement, scope, created, as in any engram file) and run "
                      f"`plur doctor --restore {eid}`, or delete it from {plur_home / 'quarantine'} "
                      "if the engram is not needed")


@pytest.mark.parametrize(("text", "says"), [
    ("# only a comment\n", "the engram is empty (no fields); write one 'field: value' per line"),
    ("- a list\n", "an engram must be a mapping of fields ('field: value' lines), got list ['a list']"),
])
def test_engram_text_that_is_no_mapping_says_what_to_write(text: str, says: str) -> None:
    with pytest.raises(ValidationError) as err:
        Engram.from_yaml(text)
    assert says in str(err.value) and "NoneType" not in str(err.value)


# -- CLI: invalid UTF-8, terminal control sequences -------------------------------------
def test_invalid_utf8_argument_is_one_line_exit_2(run) -> None:
    r = run("learn", "caf\udce9")  # what Python makes of the bytes caf\xe9 on argv (surrogateescape)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "not valid UTF-8" in r.stderr
    r = run("recall", "caf\udce9")
    assert r.exit_code == 2 and "not valid UTF-8" in r.stderr


def test_invalid_utf8_on_stdin_is_one_line_exit_2(run) -> None:
    r = run("learn", "-", input=b"caf\xe9")
    assert r.exit_code == 2 and "stdin is not valid UTF-8" in r.stderr and "Traceback" not in r.output


def test_invalid_utf8_argv_in_a_real_process(plur_home: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": "none"}
    r = subprocess.run([sys.executable.encode(), b"-m", b"plur", b"learn", b"caf\xe9"], env=env,
                       capture_output=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert b"Traceback" not in r.stderr and b"not valid UTF-8" in r.stderr


HOSTILE = "Title \x1b]0;pwned\x07 then \x1b[2J clear, C1 \x9b31m, bidi \u202eevil\u202c and \u2066iso\u2069 end"


def test_control_sequences_are_neutralised_in_human_output_and_kept_in_json(run) -> None:
    r = run("learn", HOSTILE, "--json")
    eid = json.loads(r.stdout)["engram"]["id"]
    for args in (("list",), ("recall", "Title clear"), ("recall", "Title", "--explain"), ("show", eid),
                 ("section", "--agent", "a", "Title clear")):
        out = run(*args).stdout
        assert "Title" in out, args
        for bad in ("\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\u2066", "\u2069"):
            assert bad not in out, (args, bad)
        if args[0] in ("list", "recall"):
            assert "\\x1b]0;pwned\\x07" in out and "\\u202e" in out
    assert json.loads(run("list", "--json").stdout)[0]["statement"] == HOSTILE
    assert json.loads(run("show", eid, "--json").stdout)["statement"] == HOSTILE


def test_a_hostile_file_name_in_doctor_is_neutralised(run, plur_home: Path) -> None:
    run("learn", "kept")
    (plur_home / "engrams" / "\x1b]0;x\x07.yaml").write_text("nope", encoding="utf-8")
    r = run("doctor", "--no-model")
    assert "\x1b" not in r.stdout and "\\x1b]0;x\\x07" in r.stdout
