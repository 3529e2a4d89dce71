"""Questions with no one to answer them and editors that fail end in plur's one-line errors naming the fix,
and no edited text is lost on the way (plur.cli.ask; found by a new-user trial).

click's CliRunner gives the command a stdin that is not a terminal: ``input=""`` is ``</dev/null``.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from plur.store.store import EngramStore

from conftest import learn_id

FIX = "set $VISUAL or $EDITOR to an installed editor, e.g. export EDITOR=nano"


def editor(tmp_path: Path, body: str) -> str:
    """An $EDITOR command: a Python script run on the file it is given."""
    script = tmp_path / "editor.py"
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    return f'"{sys.executable}" "{script}"'


def _kept(home: Path, eid: str) -> list[Path]:
    return sorted((home / "edit").glob(f"kept-{eid}-*.yaml")) if (home / "edit").is_dir() else []


# -- forget ------------------------------------------------------------------------------
def test_forget_without_a_terminal_or_yes_names_the_fix(run, home: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    r = run("forget", eid, input="")
    assert r.exit_code == 2 and r.stdout == "" and "Aborted!" not in r.stderr
    assert r.stderr.splitlines()[-1] == "plur: error: forget needs a confirmation: run it in a terminal or pass -y"
    assert EngramStore(home).get(eid).statement == "The dog is Rex."
    no = run("forget", eid, input="n\n")  # an answer, no: exit 1, said in words (was click's "Aborted!")
    assert no.exit_code == 1 and EngramStore(home).count() == 1
    assert no.stderr.splitlines()[-1] == f"not forgotten: {eid} (answered no)" and "Aborted!" not in no.stderr
    assert run("forget", eid, input="y\n").exit_code == 0 and EngramStore(home).count() == 0


# -- edit --------------------------------------------------------------------------------
def test_edit_without_a_terminal_after_an_invalid_edit_keeps_the_text(run, home: Path, tmp_path: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    cmd = editor(tmp_path, """
        import sys, pathlib
        pathlib.Path(sys.argv[1]).write_text("statement: [this is not yaml\\n")
    """)
    r = run("edit", eid, input="", env={"EDITOR": cmd, "VISUAL": cmd})
    assert r.exit_code == 2 and "Aborted!" not in r.stderr
    [kept] = _kept(home, eid)
    assert kept.read_text(encoding="utf-8") == "statement: [this is not yaml\n"
    last = r.stderr.splitlines()[-1]
    assert last.startswith(f"plur: error: edit of {eid} needs an answer to 'Re-open the editor?' after an invalid edit")
    assert last.endswith(f": run it in a terminal; your edited text is kept in {kept}")
    assert EngramStore(home).get(eid).statement == "The dog is Rex."


@pytest.mark.parametrize(("command", "says"), [
    ("nonexistent-editor", "cannot start the editor 'nonexistent-editor' (from $VISUAL): No such file or directory"),
    ('"unclosed', "the editor command '\"unclosed' (from $VISUAL) cannot be read (No closing quotation)"),
    ("   ", "the editor command '   ' (from $VISUAL) is blank"),
])
def test_an_editor_that_cannot_start_names_the_fix(run, home: Path, command: str, says: str) -> None:
    eid = learn_id(run, "The dog is Rex.")
    r = run("edit", eid, env={"VISUAL": command, "EDITOR": "ignored"})
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == f"plur: error: {says}; {FIX}\n"
    assert _kept(home, eid) == [] and list((home / "edit").iterdir()) == []  # nothing edited: nothing to keep


def test_an_editor_that_fails_on_reopening_keeps_the_text(run, home: Path, tmp_path: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    counter = tmp_path / "calls"
    cmd = editor(tmp_path, f"""
        import sys, pathlib
        c = pathlib.Path({str(counter)!r}); n = int(c.read_text()) if c.exists() else 0; c.write_text(str(n + 1))
        if n:
            sys.exit(3)  # the second time the editor fails (vim's :cq)
        p = pathlib.Path(sys.argv[1]); p.write_text(p.read_text().replace("type: fact", "type: nonsense"))
    """)
    r = run("edit", eid, input="y\n", env={"EDITOR": cmd, "VISUAL": ""})
    assert r.exit_code == 1 and counter.read_text() == "2"
    [kept] = _kept(home, eid)
    assert "type: nonsense" in kept.read_text(encoding="utf-8")
    assert r.stderr.splitlines()[-1] == (f"plur: error: the editor {cmd!r} (from $EDITOR) exited with status 3; "
                                         f"save and quit it normally, or {FIX}; your edited text is kept in {kept}")
    assert EngramStore(home).get(eid).type == "fact"
