"""plur as the backend of Anthropic's memory tool: each verb and its documented errors over real engrams, and the
README example driven by the SDK's tool runner against the recording fake Anthropic endpoint."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from plur.memory import Memory

if os.environ.get("PLUR_REQUIRE_CLIENTS") == "1":   # scripts/test: the extra is installed (scripts/setup --dev)
    import anthropic  # noqa: F401
else:
    pytest.importorskip("anthropic")
sys.path.insert(0, str(Path(__file__).resolve().parent / "clients"))
PAGE = Path(__file__).resolve().parents[1] / "docs" / "hosts" / "anthropic-memory.md"
NOTE = "Staging deploys go through Argo CD; production needs two approvals."


@pytest.fixture
def tool(plur_home: Path) -> Any:
    from plur.hosts.anthropic_memory import PlurMemoryTool

    mem = Memory(plur_home, model="none")
    yield PlurMemoryTool(mem, scope="project:web")
    mem.close()


def call(tool: Any, **command: Any) -> tuple[bool, str]:
    """``(ok, text)`` of one memory command, as the SDK's tool runner would run it."""
    from anthropic.lib.tools import ToolError

    try:
        return True, tool.call(command)
    except ToolError as exc:
        return False, str(exc.content if hasattr(exc, "content") else exc)


def test_every_verb_round_trips_through_engrams_of_the_scope(tool: Any, plur_home: Path) -> None:
    assert call(tool, command="create", path="/memories/ops/deploy.md", file_text=NOTE + "\nRollbacks: argo undo.")[0]
    engram = next(e for e in tool.files.memory.list(scope="project:web"))
    assert engram.statement.startswith(NOTE) and engram.extra["memory_path"] == "/memories/ops/deploy.md"
    ok, text = call(tool, command="view", path="/memories")
    assert ok and "/memories/ops/" in text and "/memories/ops/deploy.md" in text
    ok, text = call(tool, command="view", path="/memories/ops/deploy.md", view_range=[2, -1])
    assert ok and "     2\tRollbacks: argo undo." in text and NOTE not in text
    assert call(tool, command="str_replace", path="/memories/ops/deploy.md", old_str="two approvals",
                new_str="three approvals")[0]
    assert call(tool, command="insert", path="/memories/ops/deploy.md", insert_line=0, insert_text="# Deploys")[0]
    assert call(tool, command="rename", old_path="/memories/ops", new_path="/memories/runbooks")[0]
    ok, text = call(tool, command="view", path="/memories/runbooks/deploy.md")
    assert ok and "     1\t# Deploys" in text and "three approvals" in text
    tool.files.memory.learn("The web app's CDN is Fastly.", scope="project:web")   # learned elsewhere: in the tree
    ok, text = call(tool, command="view", path="/memories")
    assert ok and re.search(r"/memories/plur/the_web_app_s_cdn_is_[0-9a-f]{6}\.md", text), text
    assert call(tool, command="delete", path="/memories/runbooks")[0]
    assert [e.statement for e in tool.files.memory.list(scope="project:web")] == ["The web app's CDN is Fastly."]


@pytest.mark.parametrize("command, error", [
    ({"command": "view", "path": "/etc/passwd"}, "Path must start with /memories"),
    ({"command": "view", "path": "/memories/../etc/passwd"}, "would escape /memories"),
    ({"command": "create", "path": "/memories/%2e%2e/x.md", "file_text": "x"}, "would escape /memories"),
    ({"command": "create", "path": "/memoriesX/a.md", "file_text": "x"}, "Path must start with /memories"),
    ({"command": "create", "path": "/memories/a.md", "file_text": "again"}, "File /memories/a.md already exists"),
    ({"command": "str_replace", "path": "/memories/a.md", "old_str": "zebra", "new_str": "y"},
     "did not appear verbatim"),
    ({"command": "str_replace", "path": "/memories/a.md", "old_str": "alpha", "new_str": "y"},
     "Multiple occurrences of old_str `alpha` in lines: 1, 2"),
    ({"command": "str_replace", "path": "/memories/none.md", "old_str": "a", "new_str": "b"}, "does not exist"),
    ({"command": "insert", "path": "/memories/a.md", "insert_line": 9, "insert_text": "x"},
     "Invalid `insert_line` parameter: 9"),
    ({"command": "delete", "path": "/memories"}, "Cannot delete the /memories directory itself"),
    ({"command": "delete", "path": "/memories/none.md"}, "The path /memories/none.md does not exist"),
    ({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"},
     "The destination /memories/b.md already exists"),
    ({"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}, "Cannot rename the /memories"),
    ({"command": "rename", "old_path": "/memories/a.md", "new_path": "/tmp/a.md"}, "Path must start with /memories"),
])
def test_each_refusal_is_the_tools_error_and_changes_nothing(tool: Any, command: dict, error: str) -> None:
    assert call(tool, command="create", path="/memories/a.md", file_text="alpha one\nalpha two")[0]
    assert call(tool, command="create", path="/memories/b.md", file_text="beta")[0]
    before = sorted((e.statement, e.extra.get("memory_path")) for e in tool.files.memory.list())
    ok, text = call(tool, **command)
    assert not ok and error in text, text
    assert sorted((e.statement, e.extra.get("memory_path")) for e in tool.files.memory.list()) == before


def readme_example() -> str:
    blocks = re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.S | re.M)
    return next(b for b in blocks if "PlurMemoryTool" in b)


def script(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The fake model: create a memory file, then view it, then answer (keyed by the tool result it was sent;
    the SDK may keep the conversation on the server and send only the new tool result)."""
    last = (body.get("messages") or [{}])[-1].get("content")
    answered = {b.get("tool_use_id") for b in last if b.get("type") == "tool_result"} if isinstance(last, list) else set()
    if "toolu_view" in answered:
        return [{"type": "text", "text": "Saved: staging goes through Argo CD."}]
    if "toolu_create" in answered:
        return [{"type": "tool_use", "id": "toolu_view", "name": "memory",
                 "input": {"command": "view", "path": "/memories/deploys.md"}}]
    if any(t.get("name") == "memory" for t in body.get("tools", [])):
        return [{"type": "tool_use", "id": "toolu_create", "name": "memory",
                 "input": {"command": "create", "path": "/memories/deploys.md", "file_text": NOTE}}]
    return None


def test_the_readme_example_runs_create_then_view_against_the_fake_endpoint_and_plur_recall_finds_it(
        plur_home: Path) -> None:
    from anthropic_recorder import Recorder

    env = {**os.environ, "PLUR_HOME": str(plur_home), "PLUR_MODEL": "none", "ANTHROPIC_API_KEY": "sk-local-test",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with Recorder(script=script) as rec:
        env["ANTHROPIC_BASE_URL"] = rec.url
        out = subprocess.run([sys.executable, "-c", readme_example()], capture_output=True, text=True, env=env,
                             timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Saved: staging goes through Argo CD." in out.stdout
    bodies = [r["body"] for r in rec.requests if r["path"].startswith("/v1/messages")]
    assert len(bodies) == 3 and {"type": "memory_20250818", "name": "memory"} in bodies[0]["tools"]
    view = json.dumps(bodies[2]["messages"][-1])
    assert "File created successfully at: /memories/deploys.md" in json.dumps(bodies[1]["messages"][-1])
    assert "Here's the content of /memories/deploys.md with line numbers:" in view and "Argo CD" in view
    recall = subprocess.run([sys.executable, "-m", "plur", "recall", "how do staging deploys work", "--json"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert recall.returncode == 0, recall.stderr
    hits = json.loads(recall.stdout)
    assert hits and hits[0]["engram"]["statement"] == NOTE and hits[0]["engram"]["scope"] == "project:web"


def test_a_key_the_model_writes_is_redacted_and_counted(tool: Any, plur_home: Path) -> None:
    key = "sk-ant-api03-" + "Wq4" * 30
    assert call(tool, command="create", path="/memories/keys.md", file_text=f"The deploy key is {key}.")[0]
    ok, text = call(tool, command="view", path="/memories/keys.md")
    assert ok and key not in text and "[redacted" in text
    assert tool.files.memory.stats.screened_counts()
    assert not [p for p in plur_home.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]


def test_an_example_saved_as_anthropic_py_is_told_its_file_hides_the_sdk(tmp_path: Path, plur_home: Path) -> None:
    """The docs' example saved as anthropic.py imports itself for `import anthropic`: plur said the SDK "is not
    installed" and to pip install the extra (which changes nothing); it names the file instead."""
    script = tmp_path / "anthropic.py"
    script.write_text("import anthropic\nfrom plur.hosts.anthropic_memory import PlurMemoryTool\n")
    env = {**os.environ, "PLUR_HOME": str(plur_home), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert f"'anthropic' is {script}, a file that hides the installed package" in last, out.stderr[-2000:]
    assert "pip install" not in last
