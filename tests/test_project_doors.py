"""Every door resolves a folder's project the same way: `plur project`, `--scope here`, the Claude Code hook's cwd."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import learn_id
from test_cli import SCOPED


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    """A CJK-named repository, a nested package folder of a monorepo, two clones named app, a back end folder."""
    out = {"cjk": tmp_path / "我的项目", "nested": tmp_path / "mono" / "packages" / "web",
           "one": tmp_path / "one" / "app", "two": tmp_path / "two" / "app", "api": tmp_path / "api"}
    for repo in (out["cjk"], tmp_path / "mono", out["one"], out["two"]):
        (repo / ".git").mkdir(parents=True)
    out["nested"].mkdir(parents=True)
    out["api"].mkdir()
    return out


def test_project_which_list_bind_unbind(run, home: Path, folders: dict[str, Path],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("project", "which", str(folders["nested"])).stdout.strip() == "project:mono"
    assert not home.exists(), "a pure read never creates the home"
    learn_id(run, "The build uses Bazel.")                                      # creates the home
    assert run("project", "which", str(folders["cjk"])).stdout.strip() == "project:我的项目"
    assert run("project", "which", str(folders["two"])).stdout.strip() == "project:app"
    assert run("project", "which", str(folders["one"])).stdout.strip() == "project:app"  # a read registers nothing
    for clone in ("two", "one"):  # the first write from a folder registers its root: first come keeps app
        monkeypatch.chdir(folders[clone])
        learn_id(run, f"The {clone} clone builds with make.", "--scope", "here")
    assert run("project", "which", str(folders["one"])).stdout.strip() == "project:app-2"
    monkeypatch.chdir(folders["one"])
    got = json.loads(run("project", "which", "--json").stdout)
    assert (got["scope"], got["how"], got["registered"]) == ("project:app-2", "git", True)
    r = run("project", "bind", str(folders["api"]), "--to", "project:我的项目")
    assert r.exit_code == 0, r.output
    assert run("project", "which", str(folders["api"])).stdout.strip() == "project:我的项目"
    learn_id(run, "Old notes filed under the basename.", "--scope", "project:web")
    listed = {row["scope"]: row for row in json.loads(run("project", "list", "--json").stdout)}
    assert listed["project:我的项目"]["bound"] == [str(folders["api"].resolve())]
    assert listed["project:app-2"]["roots"] == [str(folders["one"].resolve())]
    assert listed["project:web"] == {"scope": "project:web", "roots": [], "bound": [], "engrams": 1}
    text = run("project", "list").stdout
    assert "bound: " + str(folders["api"].resolve()) in text and "(no folder)" in text
    assert run("project", "unbind", str(folders["api"])).exit_code == 0
    assert run("project", "which", str(folders["api"])).stdout.strip() == "project:api"
    r = run("project", "unbind", str(folders["api"]))
    assert r.exit_code == 2 and "is not bound to a project" in r.stderr
    r = run("project", "bind", str(folders["api"]), "--to", "project:🚀")
    assert r.exit_code == 2 and "'🚀' (U+1F680, ROCKET) is not allowed" in r.stderr


def test_which_on_a_missing_folder_and_list_on_a_new_home_say_what_they_did(run, home: Path, tmp_path: Path) -> None:
    """A typo in `plur project which` printed a plausible scope and nothing else; `plur project list` on a home
    that does not exist yet said `plur project which` registers a folder, right after one that could not."""
    r = run("project", "which", str(tmp_path / "nowhere" / "app"))
    assert r.exit_code == 0 and r.stdout.strip() == "project:app"
    assert f"{tmp_path / 'nowhere' / 'app'} is no folder here" in r.stderr
    (tmp_path / "real").mkdir()
    assert run("project", "which", str(tmp_path / "real")).stderr == ""
    r = run("project", "list")
    assert r.exit_code == 0 and not home.exists() and f"once the home {home} exists" in r.stderr, r.stderr
    learn_id(run, "The build uses Bazel.")
    assert "once the home" not in run("project", "list").stderr


@pytest.mark.parametrize("command", sorted(set(SCOPED) - {"mcp"}))
def test_every_scope_option_takes_here(run, home: Path, tmp_path: Path, folders: dict[str, Path],
                                       monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """`--scope here` is the current folder's project at every command that takes --scope."""
    learn_id(run, "The 我的项目 build uses Bazel.", "--scope", "project:我的项目")
    learn_id(run, "The mono build uses Gradle.", "--scope", "project:mono")
    (tmp_path / "in.jsonl").write_text('{"statement": "The 我的项目 build uses Bazel."}\n', encoding="utf-8")
    monkeypatch.chdir(folders["cjk"])
    args = [a.replace("{tmp}", str(tmp_path)) for a in SCOPED[command]]
    if command in ("recall", "section"):
        args[1] = "which build tool?"
    if command == "ingest":
        chat = tmp_path / "chat.json"
        chat.write_text(json.dumps([{"role": "user", "content": "We build this project with Bazel 7."},
                                    {"role": "assistant", "content": "Noted."}]), encoding="utf-8")
        args = ["ingest", str(chat)]
    r = run(*args, "--scope", "here", *(["--json"] if command in ("list", "recall") else []))
    assert r.exit_code == 0, r.output
    if command == "list":
        assert [e["scope"] for e in json.loads(r.stdout)] == ["project:我的项目"]
    elif command in ("recall", "section"):
        assert "Bazel" in r.stdout and "Gradle" not in r.stdout
    elif command == "export":
        rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
        assert {x["scope"] for x in rows} == {"project:我的项目"}
    else:  # learn, import, ingest wrote into the project
        scopes = {e["scope"] for e in json.loads(run("list", "--json").stdout)}
        assert scopes <= {"project:我的项目", "project:mono"}, scopes


def _hook(home: Path, cwd: Path | None, prompt: str, *args: str) -> dict:
    event = {"session_id": f"s-{abs(hash((str(cwd), prompt, args)))}", "hook_event_name": "UserPromptSubmit",
             "prompt": prompt, **({"cwd": str(cwd)} if cwd is not None else {})}
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "0"}
    proc = subprocess.run([sys.executable, "-m", "plur", "hook", "claude-code", *args], input=json.dumps(event),
                          capture_output=True, text=True, env=env, timeout=120, cwd=cwd or home)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_the_hook_recalls_in_the_project_of_its_cwd(home: Path, folders: dict[str, Path]) -> None:
    """No --scope: the cwd in the hook's input picks the project (the README's first snippet leaked
    billing's note into web's prompt); --scope still wins."""
    from plur.memory import Memory
    from plur.project import resolve

    home.mkdir()
    scopes = {k: resolve(folders[k], home).scope for k in ("cjk", "nested", "one", "two")}
    assert scopes == {"cjk": "project:我的项目", "nested": "project:mono", "one": "project:app",
                      "two": "project:app-2"}
    with Memory(home, model="none") as mem:
        ids = {k: mem.learn(f"The {k} cache server runs on host cache-{k}.", scope=s).id for k, s in scopes.items()}
    for k in scopes:
        text = _hook(home, folders[k], "which host runs the cache server?")["hookSpecificOutput"]["additionalContext"]
        assert ids[k] in text, (k, text)
        assert not [o for o in ids if o != k and ids[o] in text], (k, text)
    forced = _hook(home, folders["cjk"], "which host runs the cache server?", "--scope", "project:mono")
    assert ids["nested"] in forced["hookSpecificOutput"]["additionalContext"]


def test_plur_mcp_files_under_the_clients_roots_else_its_folder(plur_home: Path, folders: dict[str, Path]) -> None:
    """An unpinned `plur mcp`: a call without a scope uses the project of the client's first MCP root, else of
    the folder the client started it in; a call may still name any scope; `--scope here` pins the folder's."""
    pytest.importorskip("mcp")
    import asyncio

    from test_mcp import _data, client

    from plur.memory import Memory

    with Memory(plur_home, model="none") as mem:
        other = mem.learn("The cache server of mono runs on host cache-mono.", scope="project:mono").id

    async def main() -> None:
        async with client(plur_home, roots=[folders["cjk"]], cwd=folders["nested"]) as c:
            got = _data(await c.call_tool("learn", {"statement": "The cache server of 我的项目 runs on cache-cjk."}))
            assert got["engram"]["scope"] == "project:我的项目"
            hits = _data(await c.call_tool("recall", {"query": "cache server host", "k": 5}))["hits"]
            assert [h["engram"]["id"] for h in hits] == [got["engram"]["id"]]
            assert _data(await c.call_tool("status", {}))["project"] == "project:我的项目"
            named = _data(await c.call_tool("recall", {"query": "cache server host", "scope": "project:mono"}))
            assert other in [h["engram"]["id"] for h in named["hits"]]
        async with client(plur_home, cwd=folders["nested"]) as c:   # no roots: the server's folder
            hits = _data(await c.call_tool("recall", {"query": "cache server host", "k": 5}))["hits"]
            assert [h["engram"]["id"] for h in hits] == [other]
        async with client(plur_home, "--scope", "here", cwd=folders["two"]) as c:
            assert _data(await c.call_tool("status", {}))["scope"] == "project:app"

    asyncio.run(main())


def test_an_upgraded_home_keeps_its_basename_notes_reachable(home: Path, tmp_path: Path) -> None:
    """Notes an older plur filed under a folder's last name (`project:web`, the old DSH rule) stay reachable:
    the first repository root named web adopts the name; a nested package folder named web (a `repo`
    project now) reaches them once bound to that scope."""
    from plur.memory import Memory

    with Memory(home, model="none") as mem:   # an existing home, no projects.json yet
        old = mem.learn("The web cache server runs on host cache-web.", scope="project:web").id
    assert not (home / "projects.json").exists()
    (tmp_path / "code" / "web" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "packages" / "web").mkdir(parents=True)
    prompt = "which host runs the cache server?"
    assert old in _hook(home, tmp_path / "code" / "web", prompt)["hookSpecificOutput"]["additionalContext"]
    nested = tmp_path / "repo" / "packages" / "web"
    shown = _hook(home, nested, prompt).get("hookSpecificOutput", {}).get("additionalContext", "")
    assert old not in shown                                        # project:repo now: not web's notes
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none"}
    subprocess.run([sys.executable, "-m", "plur", "project", "bind", str(nested), "--to", "project:web"], env=env,
                   check=True, capture_output=True, timeout=120)
    assert old in _hook(home, nested, prompt + " ")["hookSpecificOutput"]["additionalContext"]
