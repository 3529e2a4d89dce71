"""The `plur` command, run in-process with click's CliRunner (and once as a real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.store.engram import Engram
from plur.store.store import EngramStore

from conftest import learn_id

REPO = Path(__file__).resolve().parents[1]
BAD_IDS = ["../../x", "/etc/passwd", "..\\x", "x\0y", ""]


def test_learn_list_show_forget_round_trip(run, home: Path) -> None:
    assert run("init").exit_code == 0
    r = run("learn", "The user's dog is Rex.", "--type", "user", "--tag", "pets", "--scope", "project:home")
    assert r.exit_code == 0
    eid = r.stdout.strip()
    assert eid.startswith("ENG-") and (home / "engrams" / eid[4:11] / f"{eid}.yaml").is_file()
    again = run("learn", "The user's dog is Rex.", "--scope", "project:home")
    assert again.exit_code == 0 and again.stdout.strip() == f"already known: {eid}"

    listed = json.loads(run("list", "--json").stdout)
    assert [(d["id"], d["type"], d["tags"], d["scope"]) for d in listed] == [(eid, "user", ["pets"], "project:home")]
    human = run("list")
    assert eid in human.stdout and "The user's dog is Rex." in human.stdout and "1 engram" in human.stderr
    assert json.loads(run("list", "--scope", "global", "--json").stdout) == []
    assert len(json.loads(run("list", "--tag", "pets", "--json").stdout)) == 1

    shown = run("show", eid)
    assert shown.exit_code == 0
    assert Engram.from_yaml(shown.stdout).statement == "The user's dog is Rex."
    assert shown.stdout == (home / "engrams" / eid[4:11] / f"{eid}.yaml").read_text(encoding="utf-8")

    refused = run("forget", eid, input="n\n")
    assert refused.exit_code != 0 and (home / "engrams" / eid[4:11] / f"{eid}.yaml").exists()
    gone = run("forget", eid, "--yes")
    assert gone.exit_code == 0 and gone.stdout.strip() == f"forgotten: {eid}"
    assert not (home / "engrams" / eid[4:11] / f"{eid}.yaml").exists()
    missing = run("show", eid)
    assert missing.exit_code == 3 and missing.stderr.startswith("plur: error: no engram")


def test_list_newest_first_with_limit(run, home: Path) -> None:
    ids = [learn_id(run, f"fact {i}") for i in range(3)]
    store = EngramStore(home)
    for i, eid in enumerate(ids):  # make creation order explicit
        store.put(store.get(eid).replace(created=f"2025-01-0{i + 1}T00:00:00Z"))
    out = json.loads(run("list", "--limit", "2", "--json").stdout)
    assert [d["id"] for d in out] == [ids[2], ids[1]]
    assert "(showing 2)" in run("list", "--limit", "2").stderr


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("command", ["show", "forget", "edit"])
def test_bad_ids_give_one_line_and_exit_2(run, command: str, bad: str) -> None:
    learn_id(run, "keep me")
    r = run(command, bad, "--yes") if command == "forget" else run(command, bad)
    assert r.exit_code == 2
    assert r.stderr.startswith("plur: error: invalid engram id") and r.stderr.count("\n") == 1
    assert "Traceback" not in r.output


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_blank_statement_is_refused(run, home: Path, blank: str) -> None:
    r = run("learn", blank)
    assert r.exit_code == 2 and "empty or whitespace" in r.stderr
    assert not list((home / "engrams").rglob("*.yaml"))


def test_statement_over_the_limit_is_refused_from_stdin(run) -> None:
    r = run("learn", "-", input="x" * ((1 << 20) + 1))
    assert r.exit_code == 2
    assert "1048577 bytes, over the limit of 1048576 bytes" in r.stderr and r.stderr.count("\n") == 1
    ok = run("learn", "-", input="y" * (1 << 20))
    assert ok.exit_code == 0 and ok.stdout.startswith("ENG-")


def test_doctor_reports_a_quarantined_file_and_the_rest_loads(run, home: Path) -> None:
    keep = learn_id(run, "healthy engram")
    broken = learn_id(run, "soon broken")
    (home / "engrams" / broken[4:11] / f"{broken}.yaml").write_text("statement: [unclosed\n", encoding="utf-8")
    r = run("doctor")
    assert r.exit_code == 0, r.output
    assert "quarantined  1 file" in r.stdout and f"{broken}.yaml" in r.stdout and "not valid YAML" in r.stdout
    assert "engrams      1" in r.stdout and "lock         free" in r.stdout and "model" in r.stdout
    report = json.loads(run("doctor", "--json").stdout)
    assert report["engrams"]["total"] == 1 and len(report["quarantined"]) == 1
    assert report["quarantined"][0]["original"].endswith(f"{broken}.yaml")
    assert report["model"]["source"] == "none" and report["lock"]["locked"] is False
    assert [d["id"] for d in json.loads(run("list", "--json").stdout)] == [keep]


def test_doctor_reports_invalid_settings_and_the_rest_of_the_home(run, home: Path) -> None:
    """Every other command refuses to run on an invalid setting; doctor names each and still reports."""
    learn_id(run, "healthy engram")
    (home / "config.toml").write_text("embed_precision = 'fp8'\nfusion = 'RRF'\n", encoding="utf-8")
    assert run("list").exit_code == 2
    r = run("doctor", "--no-model")
    assert r.exit_code == 2, r.output
    assert "settings     1 invalid" in r.stdout and "embed_precision='fp8'" in r.stdout and "float32, int8" in r.stdout
    assert "engrams      1" in r.stdout and "quarantined  0 files" in r.stdout
    report = json.loads(run("doctor", "--json", "--no-model").stdout)
    assert len(report["settings_problems"]) == 1 and report["engrams"]["total"] == 1
    assert report["settings"]["embed_precision"] == "float32" and report["settings"]["bm25_k1"] == 1.5
    (home / "config.toml").write_text("fusion = 'RRF'\n", encoding="utf-8")
    fine = run("doctor", "--no-model")
    assert fine.exit_code == 0 and "settings" not in fine.stdout
    fine_report = json.loads(run("doctor", "--json", "--no-model").stdout)
    assert fine_report["settings_problems"] == [] and fine_report["settings"]["fusion"] == "rrf"
    assert fine_report["settings"]["recall_k"] == 12 and fine_report["settings"]["fsync"] is True



def test_two_processes_learning_the_same_text_at_once_one_is_told_it_is_new(home: Path) -> None:
    """The in-process path checked for a duplicate before taking the store's lock: both racers said 'new'."""
    import threading

    env = {**os.environ, "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "0", "HF_HUB_OFFLINE": "1"}
    assert subprocess.run([sys.executable, "-m", "plur", "--home", str(home), "init"], env=env).returncode == 0
    outs: list[str] = []
    go = threading.Barrier(4)

    def racer() -> None:
        go.wait()
        p = subprocess.run([sys.executable, "-m", "plur", "--home", str(home), "learn", "The fridge is on floor 2."],
                           capture_output=True, text=True, env=env, timeout=240)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout.strip())

    threads = [threading.Thread(target=racer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outs) == 4 and len(list((home / "engrams").rglob("*.yaml"))) == 1
    assert sum(not o.startswith("already known: ") for o in outs) == 1, outs
    assert len({o.removeprefix("already known: ") for o in outs}) == 1, outs


def test_learn_outcome_is_decided_under_the_lock_across_memories(home: Path) -> None:
    from plur.memory import Memory

    with Memory(home, model="none") as a, Memory(home, model="none") as b:
        assert b.list() == []                                   # b has read the store before a writes
        first, new_a = a.learn_outcome("The fridge is on floor 2.", tags=["office"])
        again, new_b = b.learn_outcome("The fridge is on floor 2.", tags=["kitchen"])
        assert (new_a, new_b) == (True, False) and again.id == first.id
        assert set(again.tags) == {"office", "kitchen"}          # the duplicate still merges its tags


def test_a_blank_recall_query_is_refused_like_a_blank_statement(run, home: Path) -> None:
    learn_id(run, "The user's dog is called Rex.")
    for q in ("", "   "):
        r = run("recall", q)
        assert r.exit_code == 2 and "is blank: give the words to look for" in r.stderr, r.output
    assert run("learn", "  ").exit_code == 2


def test_learn_notes_a_created_date_in_the_future(run, home: Path) -> None:
    r = run("learn", "The launch is planned.", "--created", "2099-01-01T00:00Z")
    assert r.exit_code == 0 and "is dated in the future (created 2099-01-01T00:00:00Z)" in r.stderr, r.output
    assert "plur edit " in r.stderr
    now = run("learn", "The launch happened.", "--created", "2020-01-01T00:00Z")
    assert now.exit_code == 0 and "future" not in now.stderr


def test_list_marks_retired_and_expired_engrams(run, home: Path) -> None:
    live = learn_id(run, "The user's dog is called Rex.")
    gone = learn_id(run, "The office is on floor 2.", "--valid-until", "2020-01-01T00:00Z")
    old = learn_id(run, "Deploys go out on Tuesdays.")
    assert run("supersede", old, "Deploys go out on Thursdays.").exit_code == 0
    flags = {line.split()[0]: line[len(live) + 1:len(live) + 3] for line in run("list").stdout.splitlines()}
    assert (flags[live], flags[gone], flags[old]) == ("  ", " x", " r"), flags


def test_reads_on_a_home_that_does_not_exist_say_so_and_create_nothing(run, home: Path) -> None:
    """A mistyped --home / PLUR_HOME looked like an empty memory and was created by the first read."""
    assert not home.exists()
    note = f"plur: no memory at {home} (the folder does not exist"
    r = run("recall", "dog")
    assert r.exit_code == 0 and note in r.stderr and "no engrams recalled" in r.stderr and r.stdout == ""
    assert json.loads(run("recall", "dog", "--json").stdout) == []
    s = run("section", "dog", "--agent", "a")
    assert s.exit_code == 0 and note in s.stderr and "empty memory block" in s.stderr and s.stdout == ""
    d = run("doctor")
    assert d.exit_code == 0 and "does not exist" in d.stdout
    assert json.loads(run("doctor", "--json").stdout)["exists"] is False
    assert not home.exists()
    assert run("learn", "The user's dog is called Rex.").exit_code == 0    # a write creates it
    assert "Rex" in run("recall", "dog").stdout and "no memory at" not in run("recall", "dog").stderr



# -- edit -------------------------------------------------------------------------------
def editor(tmp_path: Path, body: str) -> str:
    """An $EDITOR command: a Python script that rewrites the file it is given."""
    script = tmp_path / "editor.py"
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    return f'"{sys.executable}" "{script}"'


def test_edit_validates_and_saves(run, home: Path, tmp_path: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    cmd = editor(tmp_path, """
        import sys, pathlib
        p = pathlib.Path(sys.argv[1]); p.write_text(p.read_text().replace("Rex", "Max") + "mood: happy\\n")
    """)
    r = run("edit", eid, env={"EDITOR": cmd, "VISUAL": cmd})
    assert r.exit_code == 0, r.output
    assert "updated" in r.stdout and "statement" in r.stdout
    e = EngramStore(home).get(eid)
    assert e.statement == "The dog is Max." and e.extra == {"mood": "happy"} and e.updated is not None


def test_the_file_being_edited_lives_in_the_home_and_is_removed(run, home: Path, tmp_path: Path) -> None:
    """The statement must not land in a shared temp folder (nor the editor's swap file beside it)."""
    eid = learn_id(run, "The safe code is 4321.")
    seen = tmp_path / "seen.txt"
    cmd = editor(tmp_path, f"""
        import os, stat, sys, pathlib
        p = pathlib.Path(sys.argv[1])
        mode = stat.S_IMODE(os.stat(p).st_mode), stat.S_IMODE(os.stat(p.parent).st_mode)
        pathlib.Path({str(seen)!r}).write_text(f"{{p}}\\n{{mode[0]:o}} {{mode[1]:o}}")
        p.write_text(p.read_text().replace("4321", "8765"))
    """)
    r = run("edit", eid, env={"EDITOR": cmd, "VISUAL": cmd})
    assert r.exit_code == 0, r.output
    path, modes = seen.read_text().splitlines()
    assert Path(path).parent == home / "edit" and modes == "600 700"
    assert not Path(path).exists() and list((home / "edit").iterdir()) == []
    assert EngramStore(home).get(eid).statement == "The safe code is 8765."
    cmd = editor(tmp_path, "pass\n")  # the editor quits without saving: nothing changes
    r = run("edit", eid, env={"EDITOR": cmd, "VISUAL": cmd})
    assert r.exit_code == 0 and "no changes" in r.stdout and list((home / "edit").iterdir()) == []


def test_invalid_edit_is_refused_and_the_file_is_untouched(run, home: Path, tmp_path: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    path = home / "engrams" / eid[4:11] / f"{eid}.yaml"
    before = path.read_bytes()
    cmd = editor(tmp_path, """
        import sys, pathlib
        pathlib.Path(sys.argv[1]).write_text("statement: [this is not yaml\\n")
    """)
    r = run("edit", eid, input="n\n", env={"EDITOR": cmd, "VISUAL": cmd})
    assert r.exit_code == 2
    assert "invalid engram" in r.stderr and "abandoned" in r.stderr
    assert path.read_bytes() == before
    kept = list((home / "edit").glob(f"kept-{eid}-*.yaml"))  # the abandoned text is not lost (new-user trial)
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == "statement: [this is not yaml\n"
    assert r.stderr.rstrip("\n").endswith(f"; your edited text is kept in {kept[0]}")


def test_invalid_edit_can_be_reopened_and_fixed(run, home: Path, tmp_path: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    counter = tmp_path / "calls"
    cmd = editor(tmp_path, f"""
        import sys, pathlib
        c = pathlib.Path({str(counter)!r}); n = int(c.read_text()) if c.exists() else 0; c.write_text(str(n + 1))
        p = pathlib.Path(sys.argv[1])
        if n == 0:
            p.write_text(p.read_text().replace("type: fact", "type: nonsense"))
        else:
            p.write_text(p.read_text().replace("type: nonsense", "type: user"))
    """)
    r = run("edit", eid, input="y\n", env={"EDITOR": cmd, "VISUAL": cmd})
    assert r.exit_code == 0, r.output
    assert "invalid type 'nonsense'" in r.stderr and counter.read_text() == "2"
    assert EngramStore(home).get(eid).type == "user"


def test_edit_cannot_change_the_id(run, home: Path, tmp_path: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    cmd = editor(tmp_path, f"""
        import sys, pathlib
        p = pathlib.Path(sys.argv[1]); p.write_text(p.read_text().replace({eid!r}, "ENG-2020-01-01-000000"))
    """)
    r = run("edit", eid, input="n\n", env={"EDITOR": cmd, "VISUAL": cmd})
    assert r.exit_code == 2 and "the id cannot change" in r.stderr
    assert EngramStore(home).get(eid).statement == "The dog is Rex."


# -- import / export --------------------------------------------------------------------
@pytest.mark.parametrize("fmt, name", [("jsonl", "out.jsonl"), ("plur-yaml", "engrams.yaml"),
                                       ("claude-dir", "memory")])
def test_export_then_import_into_another_home(run, home: Path, tmp_path: Path, fmt: str, name: str) -> None:
    learn_id(run, 'Gov: Root "x"', "--tag", "a")
    learn_id(run, "multi\nline\n", "--scope", "project:p", "--type", "procedure")
    learn_id(run, "今天玩成语接龙游戏", "--pin")
    target = tmp_path / name
    r = run("export", str(target), "--format", fmt)
    assert r.exit_code == 0 and "exported 3 engrams" in r.stdout
    again = run("export", str(target), "--format", fmt)
    assert again.exit_code == 2 and "--force" in again.stderr
    other = tmp_path / "other-home"
    r = CliRunner().invoke(cli, ["--home", str(other), "import", str(target), "--format", fmt])
    assert r.exit_code == 0 and "imported 3 new engrams, 0 already known" in r.stdout
    r = CliRunner().invoke(cli, ["--home", str(other), "import", str(target)])
    assert r.exit_code == 0 and "imported 0 new engrams, 3 already known" in r.stdout
    mine = {e.id: e.to_dict() for e in EngramStore(home).all()}
    theirs = {e.id: e.to_dict() for e in EngramStore(other).all()}
    assert mine == theirs


def test_import_of_invalid_file_writes_nothing(run, home: Path, tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    good = Engram.create("fine").to_dict()
    src.write_text(json.dumps(good) + "\n{broken\n", encoding="utf-8")
    r = run("import", str(src))
    assert r.exit_code == 2 and f"{src}:2" in r.stderr
    assert EngramStore(home).count() == 0


# -- recall side ------------------------------------------------------------------------
def test_recall_explain_json_and_section_bm25_only(run) -> None:
    rex = learn_id(run, "The user's dog is called Rex.")
    learn_id(run, "The office is in Leeds.", "--scope", "project:work")
    r = run("recall", "what is the dog called", "--json")
    assert r.exit_code == 0, r.output
    hits = json.loads(r.stdout)
    assert hits[0]["engram"]["id"] == rex and hits[0]["rank"] == 1 and hits[0]["bm25_rank"] == 1
    explained = run("recall", "dog", "--explain")
    assert "bm25#" in explained.stdout and rex in explained.stdout
    scoped = json.loads(run("recall", "office Leeds", "--scope", "project:other", "--json").stdout)
    assert scoped == []  # project:work is not visible from project:other
    block = run("section", "--agent", "a1", "tell me about the dog")
    assert block.exit_code == 0 and "Rex" in block.stdout
    assert run("recall", "x", "--mode", "nonsense").exit_code == 2
    assert "reindexed" in run("reindex").stdout


@pytest.mark.slow
def test_recall_with_the_real_model_shows_both_legs(run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUR_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    monkeypatch.setenv("PLUR_DEVICE", "cpu")
    rex = learn_id(run, "The user's dog is called Rex.")
    learn_id(run, "Quarterly taxes are due in April.")
    hits = json.loads(run("recall", "name of my puppy", "--json").stdout)
    assert hits[0]["engram"]["id"] == rex and hits[0]["dense_rank"] == 1 and hits[0]["dense_score"] > 0.3
    report = json.loads(run("doctor", "--json").stdout)
    assert report["model"]["dims"] == 384


# -- process level ----------------------------------------------------------------------
def test_python_dash_m_plur_and_error_exit_codes(home: Path) -> None:
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none"}
    ok = subprocess.run([sys.executable, "-m", "plur", "--help"], capture_output=True, text=True, env=env,
                        cwd=REPO, timeout=60)
    assert ok.returncode == 0 and "learn" in ok.stdout and "recall" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "plur", "show", "../../etc/passwd"], capture_output=True,
                         text=True, env=env, cwd=REPO, timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("plur: error: invalid engram id") and bad.stderr.count("\n") == 1


def test_store_error_gives_one_line_and_exit_4(run, home: Path) -> None:
    home.mkdir(parents=True)
    (home / "engrams").write_text("a file where the engram folder should be", encoding="utf-8")
    r = run("list")
    assert r.exit_code == 4
    assert r.stderr.startswith("plur: error: cannot read the engram folder") and r.stderr.count("\n") == 1


def test_doctor_shows_a_lock_held_by_another_process(run, home: Path) -> None:
    import filelock

    learn_id(run, "exists")
    with filelock.FileLock(str(home / ".lock"), thread_local=False, preserve_lock_file=True):
        report = json.loads(run("doctor", "--json").stdout)
        assert report["lock"]["locked"] is True and report["lock"]["held_here"] is False
        assert "lock         held" in run("doctor").stdout
    assert json.loads(run("doctor", "--json").stdout)["lock"]["locked"] is False


# -- an empty --home (new-user trial) -----------------------------------------------------
@pytest.mark.parametrize("args", [["--home", ""], ["--home="]])
@pytest.mark.parametrize("command", [["learn", "x"], ["doctor", "--fix"], ["list"], ["recall", "x"]])
def test_an_empty_home_is_a_usage_error_and_the_cwd_is_untouched(home: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   args: list[str], command: list[str]) -> None:
    from plur.cli import main

    cwd = tmp_path / "cwd"
    cwd.mkdir(mode=0o755)
    cwd.chmod(0o755)
    monkeypatch.chdir(cwd)
    r = CliRunner().invoke(cli, [*args, *command])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == ("plur: error: --home is empty ('' would be the current directory); pass a folder, "
                        "or leave it out for $PLUR_HOME / ~/.plur\n")
    assert main([*args, *command]) == 2  # the console entry (thin client first for recall) says the same
    assert list(cwd.iterdir()) == [] and (cwd.stat().st_mode & 0o777) == 0o755 and not home.exists()


def test_the_thin_client_leaves_an_empty_home_to_click() -> None:
    from plur.cli.fast import run as fast_run

    assert fast_run(["--home", "", "recall", "x"]) is None
    assert fast_run(["--home=", "section", "x", "--agent", "a"]) is None


def test_library_refuses_an_empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from plur.errors import ConfigError
    from plur.memory import Memory
    from plur.service.files import home_of

    monkeypatch.chdir(tmp_path)
    for make in (lambda: Memory(home=""), lambda: home_of("")):
        with pytest.raises(ConfigError, match=r"home is empty \(''"):
            make()
    assert list(tmp_path.iterdir()) == []


# -- every --scope is checked (new-user trial) ---------------------------------------------
def _scope_commands() -> set[str]:
    """The names of the commands (``group sub`` for a group's) that take a ``--scope`` option."""
    from plur.cli import COMMANDS

    found, ctx = set(), click.Context(cli)

    def walk(name: str, command: click.Command) -> None:
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                walk(f"{name} {sub}", command.get_command(ctx, sub))
        elif any("--scope" in getattr(p, "opts", ()) for p in command.params):
            found.add(name)

    for name in COMMANDS:
        walk(name, cli.get_command(ctx, name))
    return found


#: command -> its arguments without --scope ({tmp}: the test's temporary folder)
SCOPED = {"learn": ["learn", "x"], "list": ["list"], "recall": ["recall", "x"],
          "section": ["section", "x", "--agent", "a"], "export": ["export", "{tmp}/out.jsonl"], "import": ["import", "{tmp}/in.jsonl"],
          "ingest": ["ingest", "{tmp}/in.jsonl"], "mcp": ["mcp"], "sessions": ["sessions"],
          "link claude-code": ["link", "claude-code", "{tmp}"],
          "hook claude-code": ["hook", "claude-code", "--print-config"]}


def test_the_scope_table_names_every_command_with_a_scope_option() -> None:
    assert _scope_commands() == set(SCOPED)


@pytest.mark.parametrize("bad", ["projct:atlas", "project"])
@pytest.mark.parametrize("command", sorted(SCOPED))
def test_every_scope_option_refuses_an_invalid_scope(run, home: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch, command: str, bad: str) -> None:
    import plur.service.autostart as autostart

    learn_id(run, "The atlas project ships in May.", "--scope", "project:atlas")
    (tmp_path / "in.jsonl").write_text('{"statement": "Standups are at 9:30."}\n', encoding="utf-8")
    started: list[object] = []
    monkeypatch.setattr(autostart, "door", lambda *a, **k: started.append(a))  # must not be reached
    args = [a.replace("{tmp}", str(tmp_path)) for a in SCOPED[command]]
    r = run(*args, "--scope", bad)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith((f"plur: error: invalid scope {bad!r}: ", f"plur: error: invalid --scope {bad!r}: "))
    assert "use 'global', 'project:<name>'" in r.stderr
    assert not (tmp_path / "out.jsonl").exists() and started == []
    assert len(json.loads(run("list", "--json").stdout)) == 1  # nothing imported or ingested
