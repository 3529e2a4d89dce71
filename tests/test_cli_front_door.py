"""The front door of the CLI as a new user meets it (issue 48): help for a bare group, ``--help`` on every command
(the hook included), empty input refused alike everywhere, ``plur export -`` on stdout, a missing folder refused
unless asked, one JSON shape for lists, and warnings of a ``--json`` run as JSON lines.
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
from test_cli_conventions import leaves

GROUPS = ["", "service", "link", "project", "team", "hook"]


def plur(*args: str, env: dict[str, str] | None = None, input: str | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m plur ARGS`` as the console script runs it (``plur.__main__``: the hook dispatch first)."""
    return subprocess.run([sys.executable, "-m", "plur", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, input=input, cwd=cwd)


@pytest.mark.parametrize("group", GROUPS)
def test_a_bare_group_prints_its_help_as_click_does(group: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`plur` alone (and `plur service`, ...) printed its whole help squashed into one 500-1,000-character
    `plur: error:` line."""
    from plur.cli import main

    assert main(group.split()) == 2
    out = capsys.readouterr()
    lines = out.err.splitlines()
    assert out.out == "" and lines[0].startswith("Usage: plur") and "Commands:" in lines, out.err
    assert len(lines) > 8 and not any(line.startswith("plur: error") for line in lines)


def groups_and_leaves() -> list[str]:
    from plur.cli import cli

    names = [""]

    def visit(path: list[str], cmd: click.Command) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                names.append(" ".join([*path, name]))
                visit([*path, name], cmd.get_command(ctx, name))

    visit([], cli)
    return names


@pytest.mark.parametrize("name", groups_and_leaves())
def test_every_command_answers_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from plur.cli import main

    assert main([*name.split(), "--help"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith(f"Usage: plur {name}".rstrip()) and out.err == "", out


def test_the_hook_answers_help_and_prints_its_config_through_the_console_script(tmp_path: Path) -> None:
    """`plur hook claude-code --help` went to the hook (dispatched before click) and failed with exit 1."""
    r = plur("hook", "claude-code", "--help")
    assert r.returncode == 0 and r.stdout.startswith("Usage: plur hook claude-code") and "--print-config" in r.stdout
    r = plur("hook", "claude-code", "--print-config", "--max-engrams", "6", env={"PLUR_HOME": str(tmp_path / "h")})
    assert r.returncode == 0, r.stderr
    config = json.loads(r.stdout)
    assert sorted(config["hooks"]) == ["SessionStart", "UserPromptSubmit"]
    command = config["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    exe = command.split()[0]
    assert os.path.isabs(exe) and os.access(exe, os.X_OK), command      # never a bare `plur` looked up in PATH
    assert command.endswith(f"hook claude-code --home {tmp_path / 'h'} --max-engrams 6"), command
    assert "Stop" in json.loads(plur("hook", "claude-code", "--print-config", "--with-stop").stdout)["hooks"]
    mcp = json.loads(plur("mcp", "--print-config", env={"PLUR_HOME": str(tmp_path / "h")}).stdout)["mcpServers"]
    assert os.path.isabs(mcp["plur"]["command"]) and mcp["plur"]["args"][-1] == "mcp"
    assert not (tmp_path / "h").exists()  # printing a config creates nothing


# -- empty input, refused alike ------------------------------------------------------------------------------
#: command -> a valid call of it ({tmp}: the test's folder, {id}: an engram's id); each string argument and
#: string option is then given '' (and '   ') in turn.
BASE = {
    "learn": ["learn", "Standups are at 9:30."], "list": ["list"], "show": ["show", "{id}"],
    "recall": ["recall", "standups"], "section": ["section", "standups", "--agent", "a1"],
    "update": ["update", "{id}", "Standups are at 9:45."], "supersede": ["supersede", "{id}", "Standups moved."],
    "pin": ["pin", "{id}"], "unpin": ["unpin", "{id}"], "forget": ["forget", "{id}", "-y"],
    "sessions": ["sessions"], "export": ["export", "{tmp}/out.jsonl"], "import": ["import", "{tmp}/in.jsonl"],
    "ingest": ["ingest", "{tmp}/chat.json"], "doctor": ["doctor", "--no-model"], "init": ["init"],
    "reindex": ["reindex"], "migrate": ["migrate", "--to", "{tmp}/copy"],
    "link claude-code": ["link", "claude-code", "{tmp}/repo", "--memory-dir", "{tmp}/memdir"],
    "link remove": ["link", "remove", "{tmp}/memdir"], "project which": ["project", "which", "{tmp}/repo"],
    "project bind": ["project", "bind", "{tmp}/repo", "--to", "project:web"],
    "project unbind": ["project", "unbind", "{tmp}/repo"],
    "hook claude-code": ["hook", "claude-code", "--print-config"], "mcp": ["mcp", "--print-config"],
    "serve": ["serve", "--port", "1"], "service start": ["service", "start", "--port", "1"],
    "completion": ["completion", "bash"], "edit": ["edit", "{id}"],
}
#: Options whose blank value is not input but a choice or a number (click checks those itself).
CHECKED_BY_TYPE = (click.Choice, click.types.IntParamType, click.types.FloatParamType, click.types.BoolParamType)


def blank_cases() -> list[tuple[str, str]]:
    cases = []
    for name, cmd in sorted(leaves().items()):
        if name.startswith("team ") or name in ("service stop", "service status", "service url", "link list",
                                                 "project list"):
            continue  # team: a PostgreSQL store first (its NAME refuses '' too); the others take no text
        for p in cmd.params:
            if isinstance(p.type, CHECKED_BY_TYPE) or getattr(p, "is_flag", False) or p.name == "home":
                continue
            cases.append((name, p.opts[-1] if isinstance(p, click.Option) else p.human_readable_name))
    return cases


def test_every_command_with_text_input_has_a_valid_call() -> None:
    assert {name for name, _ in blank_cases()} <= set(BASE)


@pytest.mark.parametrize("blank", ["", "   "])
@pytest.mark.parametrize("name,param", blank_cases())
def test_empty_input_is_refused_alike_everywhere(run, home: Path, tmp_path: Path, name: str, param: str,
                                                 blank: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`plur section ""` answered exit 0 with an overview where `plur recall ""` is exit 2; `plur export ""`,
    `plur link claude-code ""`, `plur migrate --to ""` worked on the current folder. Every command now refuses
    a blank argument or option with one line, exit 2, before it does anything."""
    monkeypatch.setenv("HOME", str(tmp_path / "you"))
    eid = learn_id(run, "Standups are at 9:30.")
    (tmp_path / "in.jsonl").write_text('{"statement": "Lunch is at noon."}\n', encoding="utf-8")
    (tmp_path / "chat.json").write_text(json.dumps([{"role": "user", "content": "I live in Porto."}]))
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "memdir").mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    args = [a.replace("{tmp}", str(tmp_path)).replace("{id}", eid) for a in BASE[name]]
    cmd = leaves()[name]
    param_obj = next(p for p in cmd.params
                     if (p.opts[-1] if isinstance(p, click.Option) else p.human_readable_name) == param)
    if isinstance(param_obj, click.Option):
        args += [param, blank]
    else:  # the argument's place in the valid call
        position = [p for p in cmd.params if isinstance(p, click.Argument)].index(param_obj)
        words = len(name.split())
        rest = args[words:]
        positional = [i for i, a in enumerate(rest) if not a.startswith("-")
                      and (i == 0 or not rest[i - 1].startswith("--"))]
        if position < len(positional):
            rest[positional[position]] = blank
        else:
            rest.insert(len(positional), blank)
        args = args[:words] + rest
    before = sorted(p.name for p in home.rglob("*.yaml"))
    r = run(*args)
    lines = r.stderr.splitlines()
    assert r.exit_code == 2 and r.stdout == "", (args, r.exit_code, r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("plur: error: ") and repr(blank) in lines[0], (args, lines)
    assert list(cwd.iterdir()) == [] and sorted(p.name for p in home.rglob("*.yaml")) == before


def test_the_thin_client_leaves_a_blank_section_to_click() -> None:
    from plur.cli.fast import run as fast_run

    assert fast_run(["section", "", "--agent", "a"]) is None
    assert fast_run(["section", "   ", "--agent", "a"]) is None
    assert fast_run(["recall", "x", "--agent", "  "]) is None


def test_the_hook_refuses_a_blank_option(tmp_path: Path) -> None:
    r = plur("hook", "claude-code", "--scope", "", input="{}", env={"PLUR_HOME": str(tmp_path / "h")})
    assert r.returncode == 1 and "--scope is empty" in r.stderr and r.stdout == ""


# -- export -------------------------------------------------------------------------------------------------
def test_export_dash_writes_to_stdout(run, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`plur export -` made a folder named `-` (a Claude memory folder) in the current folder."""
    monkeypatch.chdir(tmp_path)
    eid = learn_id(run, "Standups are at 9:30.")
    r = run("export", "-")
    assert r.exit_code == 0 and [json.loads(line)["id"] for line in r.stdout.splitlines()] == [eid]
    assert not (tmp_path / "-").exists() and list(tmp_path.iterdir()) == [home]
    r = run("export", "-", "--format", "plur-yaml")
    assert r.exit_code == 0 and eid in r.stdout and r.stdout.startswith("engrams:")
    assert run("export", "-", "--format", "claude-dir").exit_code == 2
    assert run("export", "-", "--json").exit_code == 2


def test_export_into_a_missing_folder_is_an_error_unless_asked(run, home: Path, tmp_path: Path) -> None:
    """`plur export /missing/dir/x.jsonl` created the folders silently, beside a hidden manifest."""
    learn_id(run, "Standups are at 9:30.")
    target = tmp_path / "missing" / "dir" / "x.jsonl"
    r = run("export", str(target))
    assert r.exit_code == 2 and "does not exist" in r.stderr and "--parents" in r.stderr
    assert not (tmp_path / "missing").exists()
    r = run("export", str(tmp_path / "gone" / "mem"), "--format", "claude-dir")
    assert r.exit_code == 2 and not (tmp_path / "gone").exists()
    assert run("export", str(target), "--parents").exit_code == 0 and target.is_file()


# -- JSON ---------------------------------------------------------------------------------------------------
def test_json_warnings_of_a_json_run_are_json_lines(tmp_path: Path) -> None:
    """A `--json` run printed the model's fallback warning as plain text on stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    env.update(PLUR_HOME=str(tmp_path / "h"), PLUR_AUTOSTART_SERVICE="0", HF_HUB_OFFLINE="1",
               PLUR_MODEL="BAAI/bge-small-en-v1.5")  # not on this machine, offline: the packaged model instead
    subprocess.run([sys.executable, "-m", "plur", "learn", "The cat is called Tom."], env=env, check=True,
                   capture_output=True, timeout=300)
    out = subprocess.run([sys.executable, "-m", "plur", "recall", "cat", "--mode", "dense", "--json"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["engram"]["statement"] == "The cat is called Tom."
    said = [json.loads(line) for line in out.stderr.splitlines()]
    assert said and said[0]["warning"] == "model-fallback" and "FALLING BACK" in said[0]["message"], out.stderr
    plain = subprocess.run([sys.executable, "-m", "plur", "recall", "cat", "--mode", "dense"], env=env,
                           capture_output=True, text=True, timeout=300)
    assert plain.stderr.startswith("plur: embedding model") and "FALLING BACK" in plain.stderr


@pytest.mark.slow
def test_a_command_the_service_answers_says_its_model_fell_back(tmp_path: Path) -> None:
    """In-process, a fallback is a `plur:` line; through the service nothing said the model fell back."""
    import time

    from plur.service import autostart, daemon
    from service_env import start_service

    home = tmp_path / "h"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    env.update(PLUR_HOME=str(home), PLUR_AUTOSTART_SERVICE="0", HF_HUB_OFFLINE="1", PLUR_CAPTURE="off",
               PLUR_MODEL="BAAI/bge-small-en-v1.5", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    subprocess.run([sys.executable, "-m", "plur", "learn", "The cat is called Tom."], env=env, check=True,
                   capture_output=True, timeout=300)
    start_service(home, env)
    try:
        client = autostart.wait(home, 300.0)
        assert client is not None
        deadline = time.monotonic() + 300  # the model resolves in the background: wait for that event
        while client.status()["model"].get("source") != "packaged-fallback" and time.monotonic() < deadline:
            time.sleep(0.2)
        client.close()
        # the thin client (plur.cli.fast) answers the first and the last; --include-expired goes through click
        for args in (["recall", "cat"], ["recall", "cat", "--explain"], ["section", "cat", "--agent", "a"]):
            out = subprocess.run([sys.executable, "-m", "plur", "-v", *args], env=env, capture_output=True,
                                 text=True, timeout=300)
            assert out.returncode == 0 and "via the service" in out.stderr, out.stderr
            assert "FALLING BACK to the packaged" in out.stderr, (args, out.stderr)
            out = subprocess.run([sys.executable, "-m", "plur", *args, "--json"], env=env, capture_output=True,
                                 text=True, timeout=300)
            said = [json.loads(line) for line in out.stderr.splitlines()]
            assert [w["warning"] for w in said] == ["model-fallback"], (args, out.stderr)
    finally:
        daemon.stop(home)


def test_lists_print_a_json_array_and_the_rest_one_object(run, home: Path) -> None:
    """`plur sessions --json` and `plur team list --json` wrapped their list in an object where `list`, `recall`,
    `link list` and `project list` print an array; import and ingest gave `source` as a string or a list."""
    from plur.memory import Memory

    with Memory(home, model="none", capture="user") as m:
        m.capture("The cat is called Miso.", session="chat-a", turn=0)
    got = json.loads(run("sessions", "--json").stdout)
    assert isinstance(got, list) and got[0]["session"] == "chat-a"
    src = home.parent / "in.jsonl"
    src.write_text('{"statement": "Lunch is at noon."}\n', encoding="utf-8")
    assert json.loads(run("import", str(src), "--json").stdout)["sources"] == [str(src)]


# -- project which ------------------------------------------------------------------------------------------
def test_project_which_registers_nothing(run, home: Path, tmp_path: Path) -> None:
    """`plur project which /not/there` registered the name it printed: the repository cloned there later got
    `app-2`."""
    learn_id(run, "The build uses Bazel.")  # the home exists
    missing = tmp_path / "not" / "there" / "app"
    assert run("project", "which", str(missing)).stdout.strip() == "project:app"
    real = tmp_path / "elsewhere" / "app"
    (real / ".git").mkdir(parents=True)
    assert run("project", "which", str(real)).stdout.strip() == "project:app"
    assert json.loads(run("project", "which", str(real), "--json").stdout)["registered"] is False
    assert not (home / "projects.json").exists() or str(missing) not in (home / "projects.json").read_text()
    from plur.project import resolve

    assert resolve(missing, home).registered is False  # no door registers a folder that does not exist
    assert resolve(real, home).scope == "project:app"  # the first write from the real clone: the plain name


def test_install_merges_plur_into_a_config_and_keeps_the_rest(tmp_path: Path) -> None:
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus", "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "plur hook claude-code"}]},
                             {"hooks": [{"type": "command", "command": "lint-prompt"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}))
    r = plur("hook", "claude-code", "--install", str(settings), "--scope", "project:web")
    assert r.returncode == 0, r.stderr
    got = json.loads(settings.read_text())
    assert got["model"] == "opus" and got["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "notify"}]}]
    prompt = [h["command"] for g in got["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert prompt[0] == "lint-prompt" and len(prompt) == 2 and os.path.isabs(prompt[1].split()[0])  # the bare one went
    assert prompt[1].endswith(f"hook claude-code --home {os.environ['PLUR_HOME']} --scope project:web")
    assert "SessionStart" in got["hooks"]
    cursor = tmp_path / "cursor" / "mcp.json"
    assert plur("mcp", "--install", str(cursor)).returncode == 0
    cursor.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    assert plur("mcp", "--install", str(cursor)).returncode == 0
    assert set(json.loads(cursor.read_text())["mcpServers"]) == {"other", "plur"}
    cursor.write_text("[1, 2]")
    r = plur("mcp", "--install", str(cursor))
    assert r.returncode == 2 and "not an object" in r.stderr and cursor.read_text() == "[1, 2]"
