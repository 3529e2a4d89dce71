"""One convention for every ``plur`` command (issue 41): ``--json`` wherever a command reports a result, and
every error one line on stderr with a documented exit code (click's own usage errors included).

The walk reads the commands from the click group itself (the lazy group loads each one), so a new command
is checked without being listed here; a command that reports a result and lacks ``--json`` fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from conftest import learn_id

#: Commands that report no result of their own, and why they need no ``--json``.
NO_RESULT = {
    "edit": "interactive: opens $EDITOR",
    "serve": "a foreground server (its JSON is the HTTP API)",
    "mcp": "an MCP server on stdio or HTTP",
    "hook": "speaks its host's own JSON hook protocol",
    "completion": "prints a shell script",
}
#: The commands that list things: their --json is an array, one object per item (docs/guide/cli.md).
LISTS = {"list", "recall", "sessions", "project list", "link list", "team list"}
#: Exit codes the docs' table lists (docs/guide/cli.md).
EXIT_CODES = set(range(0, 11))


def leaves() -> dict[str, click.Command]:
    """Every runnable command as ``"service start" -> command`` (groups walked, lazy commands loaded)."""
    from plur.cli import cli

    out: dict[str, click.Command] = {}

    def visit(path: list[str], cmd: click.Command) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                visit([*path, name], cmd.get_command(ctx, name))
        else:
            out[" ".join(path)] = cmd

    visit([], cli)
    return out


def has_json(cmd: click.Command) -> bool:
    return any("--json" in p.opts for p in cmd.params if isinstance(p, click.Option))


def test_every_command_that_reports_a_result_has_json() -> None:
    commands = leaves()
    assert len(commands) > 25 and "section" in commands and "service start" in commands
    missing = [name for name, cmd in commands.items() if name.split()[0] not in NO_RESULT and not has_json(cmd)]
    assert missing == [], f"commands without --json: {missing}"


def one_json(result) -> object:  # noqa: ANN001 - click's Result
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def test_json_of_every_command_parses(run, home: Path, tmp_path: Path) -> None:
    ran: set[str] = set()
    names = leaves()

    def j(*args: str) -> object:
        name = " ".join(args[:2]) if " ".join(args[:2]) in names else args[0]
        ran.add(name)
        doc = one_json(run(*args, "--json"))
        # the rule of docs/guide/cli.md: a command that lists prints an array, any other one object
        assert isinstance(doc, list if name in LISTS else dict), (name, doc)
        return doc

    assert j("init")["created"] is True
    eid = learn_id(run, "The user's dog is called Rex.", "--tag", "pets")
    ran.add("learn")
    assert [e["id"] for e in j("list")] == [eid]
    assert j("show", eid)["id"] == eid
    assert j("update", eid, "The user's dog is called Rex, a beagle.")["engram"]["statement"].endswith("beagle.")
    assert j("pin", eid)["engram"]["pinned"] is True
    assert j("unpin", eid)["engram"]["pinned"] is False
    new = j("supersede", eid, "The user's dog Rex died; the new dog is Ada.")
    assert new["supersedes"] == eid and new["engram"]["supersedes"] == eid
    assert j("recall", "dog", "--mode", "bm25")[0]["engram"]["id"] == new["id"]
    block = j("section", "the new dog Ada", "--agent", "a1")
    assert new["id"] in block["engram_ids"] and block["text"].startswith("<plur-memory>")
    out = tmp_path / "out.jsonl"
    assert j("export", str(out))["exported"] == 2
    assert j("import", str(out))["added"] == []
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "I live in Porto."},
                                {"role": "assistant", "content": "Noted."}]), encoding="utf-8")
    assert len(j("ingest", str(chat))["added"]) == 1
    assert [s["session"] for s in j("sessions")] != []  # the ingested chat
    assert "reindexed" in j("reindex")
    assert j("doctor", "--no-model")["engrams"]["total"] >= 3
    assert isinstance(j("migrate", "--to", str(tmp_path / "copy")), dict)
    assert j("forget", new["id"], "-y") == {"forgotten": new["id"], "quarantined": 0}
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    assert j("project", "which", str(repo))["scope"].startswith("project:")
    assert j("project", "bind", str(repo / "sub"), "--to", "project:web")["scope"] == "project:web"
    assert [row["scope"] for row in j("project", "list")] == ["project:web"]
    assert "unbound" in j("project", "unbind", str(repo / "sub"))
    memdir = tmp_path / "claude-memory"
    memdir.mkdir()
    assert j("link", "claude-code", str(repo), "--memory-dir", str(memdir), "--scope", "project:web")["scope"] \
        == "project:web"
    assert len(j("link", "list")) == 1
    assert "unlinked" in j("link", "remove", str(memdir))
    expected = {n for n, c in names.items() if has_json(c) and not n.startswith(("service", "team"))}
    assert expected <= ran, f"--json not exercised for: {sorted(expected - ran)}"


def test_service_commands_json(run, home: Path) -> None:
    run("init")
    started = one_json(run("service", "start", "--port", "0", "--json"))
    try:
        assert started["running"] is True and started["url"].startswith("http://127.0.0.1:")
        assert one_json(run("service", "status", "--json"))["pid"] == started["pid"]
        assert one_json(run("service", "url", "--json"))["url"].startswith(started["url"] + "/w/")
        learn_id(run, "The user's dog is called Rex.")
        # the console script answers recall and section through the thin client (plur.cli.fast), no click
        for args in (["recall", "dog", "--json"], ["section", "the dog Rex", "--agent", "a1", "--json"]):
            out = subprocess.run([sys.executable, "-m", "plur", "-v", *args], capture_output=True, text=True,
                                 timeout=120, env={**os.environ, "PLUR_HOME": str(home)})
            assert out.returncode == 0 and "via the service" in out.stderr, out.stderr
            doc = json.loads(out.stdout)
            assert (doc[0]["engram"]["statement"] if args[0] == "recall" else doc["text"]).count("Rex") == 1
    finally:
        stopped = one_json(run("service", "stop", "--json"))
    assert stopped["stopped"] == started["pid"]


def error_line(result, code: int | None = None) -> str:  # noqa: ANN001
    """The one stderr line of a failed command (asserts there is exactly one and nothing on stdout)."""
    lines = result.stderr.splitlines()
    assert result.exit_code != 0 and result.exit_code in EXIT_CODES, (result.exit_code, result.stderr)
    assert code is None or result.exit_code == code, (result.exit_code, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("plur: error: "), result.stderr
    assert result.stdout == "", result.stdout
    return lines[0]


@pytest.mark.parametrize("name", sorted(leaves()))
def test_a_usage_error_of_every_command_is_one_line(run, name: str) -> None:
    """click prints three lines (usage, 'Try ...', 'Error: ...') for these; plur prints one, exit 2."""
    line = error_line(run(*name.split(), "--no-such-option"), 2)
    assert "--no-such-option" in line and f"plur {name} --help" in line


@pytest.mark.parametrize("name", sorted(n for n, c in leaves().items()
                                        if any(p.required for p in c.params)))
def test_a_missing_argument_of_every_command_is_one_line(run, name: str) -> None:
    error_line(run(*name.split()), 2)


def test_plur_errors_are_one_line_with_their_documented_code(run, home: Path) -> None:
    error_line(run("show", "ENG-2026-01-01-abcdef"), 3)       # not found
    error_line(run("learn", "   "), 2)                          # a blank statement
    error_line(run("recall", "dog", "--scope", "nope"), 2)      # a bad scope
    error_line(run("list", "--type", "nonsense"), 2)            # a bad choice (click)
    error_line(run("forget", "ENG-2026-01-01-abcdef", "-y"), 3)
    error_line(run("service", "status"), 7)                     # no service running
    error_line(run("nosuchcommand"), 2)


def test_the_console_script_prints_one_line_too(home: Path) -> None:
    """Through ``plur.cli.main`` (the console script's path), not click's test runner."""
    code = "import sys; from plur.cli import main; sys.exit(main(sys.argv[1:]))"
    out = subprocess.run([sys.executable, "-c", code, "learn"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == ["plur: error: Missing argument 'STATEMENT' "
                                       "(usage: plur learn [OPTIONS] STATEMENT; more: plur learn --help)"]


def test_an_empty_section_is_empty_on_stdout_with_the_reason_on_stderr(run, home: Path) -> None:
    """No block to show (here: no memory at that home): '' on stdout, what a shell hook injects, and why on
    stderr (it printed '(empty memory block: ...)' on stdout, which a hook would have injected)."""
    assert not home.exists()
    r = run("section", "quantum chromodynamics lecture", "--agent", "a1")
    assert r.exit_code == 0 and r.stdout == ""
    from plur.cli.fast import EMPTY_SECTION

    assert r.stderr.splitlines()[-1] == EMPTY_SECTION and EMPTY_SECTION.startswith("plur: empty memory block")
    assert one_json(run("section", "quantum chromodynamics lecture", "--agent", "a1", "--json"))["text"] == ""


def test_completion_scripts(run) -> None:
    for shell, mark in (("bash", "_PLUR_COMPLETE=bash_complete"), ("zsh", "#compdef plur"),
                        ("fish", "_PLUR_COMPLETE=fish_complete")):
        r = run("completion", shell)
        assert r.exit_code == 0 and mark in r.stdout, (shell, r.stdout[:200])
    env = {"COMP_WORDS": "plur rec", "COMP_CWORD": "1", "_PLUR_COMPLETE": "bash_complete"}
    from click.testing import CliRunner

    from plur.cli import cli

    r = CliRunner().invoke(cli, [], env=env, prog_name="plur")
    assert "plain,recall" in r.stdout.splitlines()


def test_service_start_takes_a_free_port_when_7777_is_busy_and_says_which(run, home: Path) -> None:
    import socket

    holder = socket.socket()
    try:
        try:
            holder.bind(("127.0.0.1", 7777))
            holder.listen(1)
        except OSError:
            pass  # another program holds it already: the same situation
        run("init")
        r = run("service", "start", "--json")
        try:
            assert r.exit_code == 0, r.stderr
            url = json.loads(r.stdout)["url"]
            assert not url.endswith(":7777") and url.startswith("http://127.0.0.1:")
            assert f"plur: port 7777 is in use by another program; listening on a free port instead: {url}" \
                in r.stderr.splitlines()
        finally:
            run("service", "stop")
    finally:
        holder.close()


def test_the_model_fallback_is_said_once_per_process(tmp_path: Path) -> None:
    """It printed twice in a Python process (a log line and a ModelFallbackWarning) and once per model load
    in the command line; now once: the warning in Python, the ``plur:`` line in the CLI."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    env.update(PLUR_HOME=str(tmp_path / "home"), PLUR_MODEL="BAAI/bge-small-en-v1.5", HF_HUB_OFFLINE="1",
               HF_HOME=str(tmp_path / "hf"), PLUR_AUTOSTART_SERVICE="0")
    code = ("from plur import Memory\n"
            "for _ in range(2):\n"
            "    with Memory() as m:\n"
            "        m.learn('The dog is Rex.')\n"
            "        m.recall('dog', k=1)\n")
    py = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert py.returncode == 0, py.stderr
    assert py.stderr.count("could not be loaded") == 1 and "ModelFallbackWarning" in py.stderr, py.stderr
    cli = subprocess.run([sys.executable, "-m", "plur", "recall", "dog"], env=env, capture_output=True, text=True,
                         timeout=600)
    assert cli.returncode == 0, cli.stderr
    fallback = [ln for ln in cli.stderr.splitlines() if "could not be loaded" in ln]
    assert len(fallback) == 1 and fallback[0].startswith("plur: embedding model"), cli.stderr
