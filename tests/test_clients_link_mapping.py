"""The real Claude Code CLI (`claude -p`, pinned in tests/clients) and `plur link claude-code` with the service
running, on the mapping side: a procedure note Claude edits in its folder stays a procedure, MEMORY.md shows the
text of a `plur update`, and two projects Claude Code gives one memory folder (/work/你好世界, /work/我的项目) are
never linked to it silently: the second is refused, then given a folder of its own that Claude Code uses. The
model is the recording fake endpoint, whose reply calls Claude Code's Edit or Write tool."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from plur.service import daemon
from service_env import start_service
from test_clients import NODE_MODULES, _node_env
from test_clients_link import plur, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parent / "clients"))


def tools(*calls: dict[str, Any]) -> Callable[[dict[str, Any]], list[dict[str, Any]] | None]:
    """The fake model: in the session's main request (the one offering the tools) make ``calls`` one after the
    other (each after the previous one's result), then answer."""
    def script(body: dict[str, Any]) -> list[dict[str, Any]] | None:
        if not any(t.get("name") == calls[0]["name"] for t in body.get("tools", [])):
            return None
        done = json.dumps(body.get("messages", [])).count('"tool_result"')
        if done >= len(calls):
            return [{"type": "text", "text": "Done."}]
        return [{"type": "tool_use", "id": f"toolu_link_{done}", **calls[done]}]
    return script


def claude(env: dict[str, str], cwd: Path, prompt: str, folder: Path, *calls: dict[str, Any]) -> list[dict[str, Any]]:
    """``claude -p prompt`` in ``cwd``; the requests the fake model got."""
    from anthropic_recorder import Recorder

    with Recorder(script=tools(*calls)) as rec:
        proc = subprocess.run([str(NODE_MODULES / ".bin" / "claude"), "-p", prompt, "--permission-mode", "acceptEdits",
                               "--add-dir", str(folder)], cwd=cwd, capture_output=True, text=True, timeout=300,
                              env={**env, "ANTHROPIC_BASE_URL": rec.url, "ANTHROPIC_API_KEY": "sk-local-test",
                                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return list(rec.requests)


def setup(plur_home: Path, tmp_path: Path) -> dict[str, str]:
    scratch = tmp_path / "claude-home"
    scratch.mkdir()
    return {**_node_env(plur_home), "HOME": str(scratch), "CLAUDE_CONFIG_DIR": str(scratch / ".claude")}


def index_line(folder: Path, text: str) -> Any:
    index = folder / "MEMORY.md"
    return index.is_file() and next((x for x in index.read_text().splitlines() if text in x), None)


def test_a_procedure_claude_edits_stays_a_procedure_and_memory_md_follows_plur_update(
        plur_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    env = setup(plur_home, tmp_path)
    linked = plur(env, "link", "claude-code", str(project), "--json")
    assert linked.returncode == 0, linked.stderr
    link = json.loads(linked.stdout)
    folder, scope = Path(link["folder"]), link["scope"]
    start_service(plur_home, env)
    try:
        learned = plur(env, "learn", "To release, run make release, then tag the commit.", "--scope", scope,
                       "--type", "procedure", "--json")
        assert learned.returncode == 0, learned.stderr
        eid = json.loads(learned.stdout)["engram"]["id"]
        line = wait_for("the procedure in MEMORY.md", lambda: index_line(folder, "make release"))
        name = line.split("](", 1)[1].split(")", 1)[0]

        updated = plur(env, "update", eid, "To release, run make release-all, then tag the commit.")
        assert updated.returncode == 0, updated.stderr
        line = wait_for("the updated text in MEMORY.md", lambda: index_line(folder, "make release-all"))
        assert f"]({name})" in line and "make release-all" in (folder / name).read_text()

        claude(env, project, "Add to the release memory that the tag is pushed too.", folder,
               {"name": "Read", "input": {"file_path": str(folder / name)}},
               {"name": "Edit", "input": {"file_path": str(folder / name),    # the body's text, not the description's
                                          "old_string": "\n\nTo release, run make release-all, then tag the commit.",
                                          "new_string": "\n\nTo release, run make release-all, then tag the commit "
                                                        "and push the tag."}})
        written = (folder / name).read_text()
        assert "push the tag." in written and "originSessionId" in written     # Claude Code rewrote the file

        def shown() -> dict[str, Any]:
            got = plur(env, "show", eid)
            return yaml.safe_load(got.stdout) if got.returncode == 0 else {}

        edited = wait_for("Claude's edit in the engram", lambda: (e := shown()) and "push the tag" in e["statement"]
                          and e)
        assert edited["type"] == "procedure"
        assert index_line(folder, "make release-all")                           # its line is still there, once
    finally:
        daemon.stop(plur_home)


def test_two_cjk_projects_claude_code_gives_one_folder_are_not_linked_silently(plur_home: Path,
                                                                              tmp_path: Path) -> None:
    first, second = tmp_path / "work" / "你好世界", tmp_path / "work" / "我的项目"
    first.mkdir(parents=True)
    second.mkdir()
    env = setup(plur_home, tmp_path)
    one = plur(env, "link", "claude-code", str(first), "--json")
    assert one.returncode == 0, one.stderr
    shared = json.loads(one.stdout)
    refused = plur(env, "link", "claude-code", str(second))
    assert refused.returncode == 2 and str(first) in refused.stderr and shared["scope"] in refused.stderr
    own = plur(env, "link", "claude-code", str(second), "--own-folder", "--json")
    assert own.returncode == 0, own.stderr
    mine = json.loads(own.stdout)
    folder = Path(mine["folder"])
    assert folder != Path(shared["folder"])
    start_service(plur_home, env)
    try:
        requests = claude(env, second, "Remember that this project ships on Fridays.", folder,
                          {"name": "Write", "input": {"file_path": str(folder / "project_fridays.md"), "content":
                           "---\nname: ships-on-fridays\ndescription: release day\nmetadata:\n  type: project\n"
                           "---\n\n我的项目 ships on Fridays.\n"}})
        told = json.dumps([r["body"].get("system") for r in requests], ensure_ascii=False)
        assert str(folder) in told and shared["folder"] not in told          # Claude Code uses the folder of its own

        def recalled(scope: str) -> list[Any]:
            r = plur(env, "recall", "when does it ship?", "--scope", scope, "--json")
            return [h for h in (json.loads(r.stdout) if r.returncode == 0 else []) if "Fridays" in h["engram"]["statement"]]

        wait_for("the memory in 我的项目's scope", lambda: recalled(mine["scope"]))
        assert not recalled(shared["scope"])
    finally:
        daemon.stop(plur_home)
