"""Every file plur creates is 0600 and every folder 0700, whatever the umask; `plur doctor --fix` repairs an old home.

Other accounts on the machine must not read statements, recall queries (stats.db and its -wal/-shm),
embeddings, index vocabularies, the service's pid file, log and tokens, even when the home folder's
own 0700 is lost (a home copied elsewhere, or made by an older plur).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.memory import Memory
from plur.store import modes


def _modes(root: Path) -> dict[str, str]:
    """``relative path -> octal mode`` of every entry under ``root`` (links not followed), root included."""
    out = {".": f"{stat.S_IMODE(root.stat().st_mode):04o}"}
    for dirpath, dirs, names in os.walk(root):
        for name in dirs + names:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = f"{stat.S_IMODE(p.lstat().st_mode):04o}"
    return out


def _too_open(root: Path) -> dict[str, str]:
    return {k: v for k, v in _modes(root).items() if int(v, 8) & 0o077}


def _plur(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "plur", "--home", str(home), *args], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}, timeout=240)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)  # the usual default: new files 0644, new folders 0755
    try:
        yield
    finally:
        os.umask(old)


def test_everything_a_home_holds_is_owner_only_under_umask_022(memory: Memory, umask_022, tmp_path: Path) -> None:
    """In-process (a host embedding plur) and through the CLI and the service: nothing for group or others."""
    home = memory.home
    a = memory.learn("The locker code is 7731.", tags=["secret"])
    memory.learn("The user's dog is called Rex.", created="2025-01-01")
    memory.learn_many([{"statement": f"Routine note {i} about the weekly report"} for i in range(20)])
    assert memory.recall("locker code", k=3, mode="hybrid", agent="t")  # embeddings cache, stats.db, indexes
    memory.feedback(a.id, useful=True, agent="t")
    memory.reindex()
    memory.forget(memory.learn("Forget me soon.").id)
    memory.close()
    svc_home = Path(tempfile.mkdtemp(prefix="plur-modes-", dir="/tmp")) / "home"  # a short unix socket path
    try:
        shutil.copytree(home, svc_home)
        os.chmod(svc_home, 0o700)
        env = {"PLUR_MODEL": "none"}
        assert _plur(home, "learn", "Learned by the CLI.", env=env).returncode == 0
        assert _plur(home, "recall", "locker", env=env).returncode == 0
        assert _plur(home, "export", str(tmp_path / "out.jsonl"), env=env).returncode == 0
        assert _plur(home, "export", str(tmp_path / "claude"), "--format", "claude-dir", env=env).returncode == 0
        started = _plur(svc_home, "service", "start", "--port", "0", env=env)
        assert started.returncode == 0, started.stderr
        assert _plur(svc_home, "learn", "Learned through the service.", env=env).returncode == 0
        running = _too_open(svc_home)                        # service.json, service.pid, plur.sock, log
        assert _plur(svc_home, "service", "stop").returncode == 0
        from plur.mcp.auth import ensure_token
        ensure_token(home)
        assert running == {}, running
        assert _too_open(home) == {}, _too_open(home)
        assert _too_open(svc_home) == {}, _too_open(svc_home)
        assert {"stats.db", "service.log", "mcp.token", "index", "cache"} <= set(_modes(home)) | set(_modes(svc_home))
        assert any(k.startswith("cache/embeddings.sqlite") for k in _modes(home)), _modes(home)
        out = tmp_path / "out.jsonl"
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        assert _too_open(tmp_path / "claude") == {}
    finally:
        shutil.rmtree(svc_home.parent, ignore_errors=True)


def test_doctor_fix_repairs_an_older_home(plur_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home made by an older plur: 0755 folders, 0644 files. doctor names it; --fix makes it owner-only."""
    monkeypatch.setenv("PLUR_MODEL", "none")
    mem = Memory(plur_home, model="none")
    mem.learn("The locker code is 7731.")
    mem.recall("locker", k=1, agent="t")
    mem.close()
    for dirpath, dirs, names in os.walk(plur_home):
        os.chmod(dirpath, 0o755)
        for name in names:
            os.chmod(Path(dirpath) / name, 0o644)
    runner = CliRunner()
    r = runner.invoke(cli, ["--home", str(plur_home), "doctor", "--no-model"], catch_exceptions=False)
    assert r.exit_code == 0 and "other users can read" in r.stdout and "plur doctor --fix" in r.stdout, r.stdout
    report = json.loads(runner.invoke(cli, ["--home", str(plur_home), "doctor", "--no-model", "--json"]).stdout)
    assert report["home_private"] is False and "stats.db" in " ".join(report["too_open"])
    r = runner.invoke(cli, ["--home", str(plur_home), "doctor", "--no-model", "--fix"], catch_exceptions=False)
    assert r.exit_code == 0 and "made owner-only" in r.stdout, r.stdout
    assert _too_open(plur_home) == {}
    assert _modes(plur_home)["."] == "0700" and _modes(plur_home)["stats.db"] == "0600"
    r = runner.invoke(cli, ["--home", str(plur_home), "doctor", "--no-model"], catch_exceptions=False)
    assert "other users can read" not in r.stdout
    assert runner.invoke(cli, ["--home", str(plur_home), "list"]).exit_code == 0   # still a working home


def test_modes_helpers(tmp_path: Path, umask_022) -> None:
    with modes.open_private(tmp_path / "a.log", "ab") as fh:
        fh.write(b"x")
    modes.touch_private(tmp_path / "b.db")
    (tmp_path / "c").write_text("old")
    os.chmod(tmp_path / "c", 0o644)
    with modes.open_private(tmp_path / "c", "w", encoding="utf-8") as fh:   # an existing file is narrowed
        fh.write("new")
    assert {k: v for k, v in _modes(tmp_path).items() if k != "."} == {"a.log": "0600", "b.db": "0600", "c": "0600"}
    (tmp_path / "d").mkdir()
    changed = modes.repair(tmp_path)
    assert {(p.name, f"{o:04o}", f"{n:04o}") for p, o, n in changed} >= {("d", "0755", "0700")}
    assert _too_open(tmp_path) == {}


REPO = Path(__file__).resolve().parents[1]


def leaf_commands() -> set[str]:
    """Every runnable command of ``plur``, as its words (``"link claude-code"``)."""
    from plur.cli.root import cli

    out: set[str] = set()

    def walk(cmd: click.Command, words: list[str], ctx: click.Context) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*words, name], ctx)
        else:
            out.add(" ".join(words))

    walk(cli, [], click.Context(cli))
    return out


def _umask_022() -> None:
    os.umask(0o022)


class Runner:
    """``plur --home HOME ...`` in a fresh process with umask 022 and $HOME in a temporary folder."""

    def __init__(self, home: Path, tmp: Path) -> None:
        self.home, self.tmp, self.ran = home, tmp, []
        (tmp / "user").mkdir()
        self.env = {**os.environ, "HOME": str(tmp / "user"), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "0",
                    "HF_HUB_OFFLINE": "1", "EDITOR": "true", "VISUAL": "true", "PYTHONPATH": str(REPO)}
        self.env.pop("PLUR_HOME", None)

    def __call__(self, words: str, *args: str, stdin: str = "", env: dict[str, str] | None = None,
                 ok: bool = True) -> subprocess.CompletedProcess:
        got = subprocess.run([sys.executable, "-m", "plur", "--home", str(self.home), *words.split(), *args],
                             input=stdin, capture_output=True, text=True, env={**self.env, **(env or {})},
                             cwd=self.tmp, timeout=240, preexec_fn=_umask_022)
        assert not ok or got.returncode == 0, (words, args, got.stdout, got.stderr)
        self.ran.append(words)
        return got


def _open_to_others(home: Path) -> list[str]:
    found = subprocess.run(["find", str(home), "-perm", "/077"], capture_output=True, text=True, check=True)
    return sorted(found.stdout.split())


def test_every_command_leaves_the_home_owner_only_under_umask_022(pg_base: str) -> None:
    """Issue 47: every command of the CLI (a walk of the click command tree: a new command fails here until it is
    given arguments below) runs once, in a real process with umask 022 and its minimal valid arguments; then
    ``find <home> -perm /077`` is empty. Before, ``<home>/hooks`` and ``<home>/links`` were 0755 and
    ``links/*.lock`` 0644."""
    from pg_server import fresh_database

    tmp = Path(tempfile.mkdtemp(prefix="plur-modes-", dir="/tmp"))  # short: the service's unix socket path
    try:
        home = tmp / "home"
        plur = Runner(home, tmp)
        (tmp / "proj" / ".git").mkdir(parents=True)
        (tmp / "notes").mkdir()
        (tmp / "notes" / "deploys.md").write_text("# Deploys\n\nDeploys happen on Tuesdays.\n", encoding="utf-8")
        (tmp / "chat.json").write_text(json.dumps([{"role": "user", "content": "My cat is called Tom."}]),
                                       encoding="utf-8")
        plur("init")
        first = plur("learn", "The user's dog is called Rex.").stdout.split()[0]
        second = plur("learn", "The staging server is called blue7.").stdout.split()[0]
        plur("list")
        plur("show", first)
        plur("recall", "dog")
        plur("section", "What is my dog called?", "--agent", "a")
        plur("pin", first)
        plur("unpin", first)
        plur("update", first, "The user's dog is called Rex, a beagle.")
        plur("edit", first)
        plur("supersede", second, "The staging server is called green3.")
        plur("export", str(tmp / "export.jsonl"))
        plur("import", str(tmp / "notes"))
        plur("ingest", str(tmp / "chat.json"))
        plur("sessions")
        plur("forget", first, "-y")
        plur("reindex")
        plur("project which", str(tmp / "proj"))
        plur("project bind", str(tmp / "notes"), "--to", "project:proj")
        plur("project list")
        plur("project unbind", str(tmp / "notes"))
        plur("link claude-code", str(tmp / "proj"))
        plur("link list")
        plur("link remove", str(tmp / "proj"))
        hook_input = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(tmp / "proj"),
                      "prompt": "What is my dog called?", "transcript_path": str(tmp / "none.jsonl")}
        plur("hook claude-code", stdin=json.dumps(hook_input))  # a group since issue 48 (--help, --install)
        plur("completion", "bash")
        plur("doctor")
        plur("mcp")  # stdio, its input ends at once
        uri = fresh_database(pg_base)
        plur("migrate", "--from", str(home), "--to", uri)
        team = {"PLUR_STORE": uri}
        plur("team add", "alice", "--read", "project:proj", env=team)
        plur("team grant", "alice", "--write", "project:web", env=team)
        plur("team revoke", "alice", "project:web", env=team)
        plur("team rotate", "alice", env=team)
        plur("team list", env=team)
        plur("team remove", "alice", env=team)
        plur("service start", "--port", "0")
        plur("service status")
        plur("service url")
        plur("service stop")
        serve = subprocess.Popen([sys.executable, "-m", "plur", "--home", str(home), "serve", "--port", "0"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=plur.env, cwd=tmp,
                                 preexec_fn=_umask_022)
        try:
            _wait_for_service(home, serve)
            plur.ran.append("serve")
        finally:
            plur("service stop", ok=False)
            serve.wait(timeout=60)
        assert set(plur.ran) == leaf_commands(), "a command of the CLI is not run here: give it its arguments"
        assert _open_to_others(home) == [], _open_to_others(home)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _wait_for_service(home: Path, proc: subprocess.Popen) -> None:
    """Until ``plur serve`` wrote its ``service.json`` (the event), or it exited."""
    import time

    deadline = time.monotonic() + 120
    while not (home / "service.json").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "plur serve did not start"
        time.sleep(0.05)
