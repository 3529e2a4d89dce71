"""plur link claude-code, the mapping side: plur's six types through Claude Code's four, MEMORY.md's line in step
with every change, names in any script, ``modified``, a captured note and a file of one text, and two projects
Claude Code maps to one memory folder. One sync at a time, in-process (tests/test_clients_link.py runs the real
``claude -p`` and service)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from plur.cli import cli
from plur.hosts.claude_link import Link, claude_memory_folder, reconcile, save_link
from plur.memory import Memory

SCOPE = "project:app"


@pytest.fixture
def mem(plur_home: Path) -> Any:
    m = Memory(plur_home, model="none")
    yield m
    m.close()


def linked(mem: Any, tmp_path: Path) -> tuple[Link, Path]:
    folder = tmp_path / "memory"
    folder.mkdir()
    link = Link("claude-code", str(folder), SCOPE, str(tmp_path))
    save_link(Path(mem.home), link)
    return link, folder


def front(text: str) -> dict[str, Any]:
    return yaml.safe_load(text.split("---\n", 2)[1])


def claude_edits(path: Path, old: str, new: str) -> None:
    """What Claude Code 2.1.328 does to a memory file its Edit tool changes (seen with the real CLI): the body
    edited, ``name`` re-spelled as an ASCII slug, ``type`` and every other key moved under ``metadata`` (a
    ``plur:`` block too), ``node_type``, ``originSessionId`` and a new ``modified`` added."""
    meta = front(path.read_text())
    body = path.read_text().split("---\n", 2)[2]
    nested = dict(meta.pop("metadata", None) or {})
    name = str(meta.pop("name"))
    description = meta.pop("description")
    rest = {**{k: v for k, v in meta.items()}, **nested}
    rest.pop("modified", None)
    out = {"name": name if re.fullmatch(r"[a-z0-9_-]+", name) else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"),
           "description": description,
           "metadata": {"node_type": "memory", **rest, "originSessionId": "0a1b2c3d-0000-4000-8000-000000000002"}}
    dump = yaml.safe_dump(out, allow_unicode=True, sort_keys=False)
    path.write_text(f"---\n{dump}  modified: 2026-12-07T10:36:53.282Z\n---\n{body.replace(old, new)}")


def index_lines(folder: Path) -> dict[str, str]:
    """file name -> its MEMORY.md line."""
    out = {}
    for line in (folder / "MEMORY.md").read_text().splitlines():
        m = re.match(r"- \[.*\]\((.+?)\) — ", line)
        if m:
            assert m[1] not in out, f"two lines for {m[1]}"
            out[m[1]] = line
    return out


def test_a_procedure_edited_in_claudes_folder_stays_a_procedure(mem: Any, tmp_path: Path) -> None:
    """Written as Claude's `feedback`, an edit on Claude's side made the engram a `feedback` note."""
    link, folder = linked(mem, tmp_path)
    e = mem.learn("To release, run make release and then tag the commit.", scope=SCOPE, type="procedure")
    fact = mem.learn("The staging database runs PostgreSQL 16.", scope=SCOPE, type="fact")
    reconcile(mem, link)
    (name,) = [n for n, x in json.loads(next((Path(mem.home) / "links").glob("*.json")).read_text())["files"].items()
               if x["id"] == e.id]
    written = front((folder / name).read_text())
    claude_edits(folder / name, "tag the commit.", "tag the commit and push the tag.")
    assert reconcile(mem, link).to_engrams == [name]
    got = mem.get(e.id)
    assert got.type == "procedure" and got.statement.endswith("push the tag.")
    assert written["metadata"]["type"] == "feedback" and written["metadata"]["plur"] == {"type": "procedure"}
    assert "plur" not in got.extra.get("metadata", {})                # the block is the file's, not a field

    text = (folder / name).read_text()                                # an editor that drops the block: still kept
    (folder / name).write_text(re.sub(r"\n  plur:\n    type: procedure", "", text).replace("push the tag", "push"))
    reconcile(mem, link)
    assert mem.get(e.id).type == "procedure" and mem.get(e.id).statement.endswith("and push.")

    (folder / name).write_text((folder / name).read_text().replace("type: feedback", "type: project"))
    reconcile(mem, link)
    assert mem.get(e.id).type == "project"                            # a type changed in the file wins
    fact_file = next(n for n in index_lines(folder) if "PostgreSQL" in (folder / n).read_text())
    assert front((folder / fact_file).read_text())["metadata"]["plur"] == {"type": "fact"}
    assert mem.get(fact.id).type == "fact"


def test_memory_md_lines_follow_update_supersede_type_change_and_forget(mem: Any, tmp_path: Path) -> None:
    """After `plur update` the file was rewritten but its MEMORY.md line kept the old text."""
    link, folder = linked(mem, tmp_path)
    (folder / "MEMORY.md").write_text("# Memory index\n\n- [Claude's own](user_own.md) — a line plur never wrote\n")
    e = mem.learn("Staging deploys go through Argo CD.", scope=SCOPE, type="project")
    reconcile(mem, link)
    (name,) = [n for n in index_lines(folder) if n != "user_own.md"]
    assert "Staging deploys go through Argo CD." in index_lines(folder)[name]

    mem.update(e.id, statement="Staging deploys go through Flux since May.")
    reconcile(mem, link)
    line = index_lines(folder)[name]
    assert "Flux since May" in line and "Argo" not in line
    assert front((folder / name).read_text())["name"] == "staging-deploys-go-through-flux-since"

    claude_edits(folder / name, "since May.", "since May 2026.")           # Claude Code re-spells name: and
    reconcile(mem, link)                                                    # description as they were
    mem.update(e.id, statement="Staging deploys go through Flux CD.")
    reconcile(mem, link)
    meta = front((folder / name).read_text())
    assert meta["name"] == "staging-deploys-go-through-flux-cd" and meta["description"].endswith("Flux CD.")
    assert "Flux CD." in index_lines(folder)[name] and "May" not in index_lines(folder)[name]

    mem.update(e.id, type="reference")
    reconcile(mem, link)
    assert front((folder / name).read_text())["metadata"]["type"] == "reference"
    assert list(index_lines(folder)) == ["user_own.md", name]             # one line each, in their order

    new = mem.supersede(e.id, "Staging deploys go through Flux CD, production through Argo CD.")
    reconcile(mem, link)
    lines = index_lines(folder)
    assert list(lines) == ["user_own.md", name] and "production through" in lines[name]
    assert "production through Argo CD" in (folder / name).read_text()      # the successor took over its file
    assert len(list(folder.glob("*.md"))) == 2 and not reconcile(mem, link).changed

    mem.forget(new.id)
    reconcile(mem, link)
    assert list(index_lines(folder)) == ["user_own.md"] and not (folder / name).exists()
    assert "[Claude's own](user_own.md) — a line plur never wrote" in (folder / "MEMORY.md").read_text()


def test_a_file_written_before_slugs_lets_its_derived_name_follow_the_text(mem: Any, tmp_path: Path) -> None:
    """A link made before: plur wrote `name:` as the text cut at 60 characters; once Claude Code edits the file
    (re-spelling that name), the name is still plur's derivation and follows a later `plur update`."""
    link, folder = linked(mem, tmp_path)
    e = mem.learn("Use the staging cluster for load tests, never production.", scope=SCOPE, type="feedback")
    name = reconcile(mem, link).to_files[0]
    old = (folder / name).read_text()
    meta = front(old)
    meta.pop("metadata")
    meta["name"], meta["type"] = "Use the staging cluster for load tests, never production.", "feedback"
    (folder / name).write_text(f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n\n{mem.get(e.id).statement}\n")
    state = next((Path(mem.home) / "links").glob("*.json"))
    data = json.loads(state.read_text())
    data["files"][name]["file"] = __import__("plur.hosts.claude_link.memfile", fromlist=["sha"]).sha(
        (folder / name).read_text())
    state.write_text(json.dumps(data))                                   # as the old link left it
    claude_edits(folder / name, "production.", "production (ask first).")
    reconcile(mem, link)
    mem.update(e.id, statement="Use the load cluster for load tests.")
    reconcile(mem, link)
    assert front((folder / name).read_text())["name"] == "use-the-load-cluster-for-load-tests"


def test_written_files_keep_the_names_letters_of_any_script_and_carry_modified(mem: Any, tmp_path: Path) -> None:
    """File names lost their CJK words, `name:` was the text cut with "…", and no `modified` was written."""
    link, folder = linked(mem, tmp_path)
    e = mem.learn("用户的妹妹住在维也纳，她每年十二月回家过节，通常会带礼物给全家人。", scope=SCOPE, type="user")
    long = mem.learn("Before merging, run the whole test suite including the slow browser tests and wait for a "
                     "green build on the integration branch.", scope=SCOPE, type="procedure")
    reconcile(mem, link)
    names = index_lines(folder)
    cjk = next(n for n in names if mem.get(e.id).statement in (folder / n).read_text())
    assert "用户的妹妹住在维也纳" in cjk and cjk.startswith("user_")
    meta = front((folder / cjk).read_text())
    assert "用户的妹妹住在维也纳" in meta["name"] and "…" not in meta["name"]
    assert meta["metadata"]["modified"] == mem.get(e.id).created       # unquoted, spelled as Claude Code does:
    assert re.search(r"\n  modified: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n", (folder / cjk).read_text())
    other = next(n for n in names if n != cjk)
    meta = front((folder / other).read_text())
    assert meta["name"] == "before-merging-run-the-whole-test-suite" and "…" not in meta["name"]
    assert all(len(line) <= 180 for line in names.values())
    assert not reconcile(mem, link).changed                                 # stable: nothing rewritten
    assert long.id in {x["id"] for x in json.loads(next((Path(mem.home) / "links").glob("*.json")).read_text())
                       ["files"].values()}


def test_a_file_with_a_captured_notes_text_is_that_note_and_is_kept(mem: Any, tmp_path: Path) -> None:
    """The second sync deleted such a file (its engram, a conversation turn, looked forgotten)."""
    link, folder = linked(mem, tmp_path)
    said = mem.capture("The deploy key rotates every Monday at noon.", session="s1", turn=0, scope=SCOPE,
                       mode="user").stored[0]
    (folder / "project_key.md").write_text("---\nname: key-rotation\ndescription: when the deploy key rotates\n"
                                           "type: project\n---\n\nThe deploy key rotates every Monday at noon.\n")
    reconcile(mem, link)
    assert not reconcile(mem, link).changed
    assert (folder / "project_key.md").exists()
    assert [x.id for x in mem.list(scope=SCOPE)] == [said.id]              # one note, not two
    assert mem.get(said.id).source["session"] == "s1"                      # the conversation keeps it
    (folder / "project_key.md").unlink()
    assert reconcile(mem, link).forgotten == [said.id]


def test_two_projects_claude_code_maps_to_one_folder_are_never_linked_silently(
        plur_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second `plur link` replaced the first without a word and left its notes orphaned."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    env = {"PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "0"}
    first, second = tmp_path / "work" / "你好世界", tmp_path / "work" / "我的项目"
    first.mkdir(parents=True)
    second.mkdir()
    assert claude_memory_folder(first) == claude_memory_folder(second)     # Claude Code's own encoding

    def link(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--home", str(plur_home), "link", "claude-code", *args], env=env)

    r = link(str(first), "--json")
    assert r.exit_code == 0, r.output
    one = json.loads(r.stdout)
    r = link(str(second))
    assert r.exit_code == 2, r.output
    assert f"for {first}" in r.stderr and one["scope"] in r.stderr and "--own-folder" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    links = json.loads((plur_home / "links.json").read_text())["links"]
    assert [x["scope"] for x in links] == [one["scope"]]                   # the first link stands

    r = link(str(second), "--scope", one["scope"], "--json")               # share it, knowingly
    assert r.exit_code == 0, r.output

    r = link(str(second), "--own-folder", "--json")                        # or a folder of its own
    assert r.exit_code == 0, r.output
    own = json.loads(r.stdout)
    assert own["folder"] != one["folder"] and own["unlinked"] == [] and own["scope"] != one["scope"]
    settings = json.loads((second / ".claude" / "settings.local.json").read_text())
    assert settings["autoMemoryDirectory"] == own["folder"]
    assert str(claude_memory_folder(second)) == own["folder"]             # what Claude Code reads now
    scopes = {x["folder"]: x["scope"] for x in json.loads((plur_home / "links.json").read_text())["links"]}
    assert scopes == {one["folder"]: one["scope"], own["folder"]: own["scope"]}


def test_a_moved_memory_folder_replaces_the_projects_old_link(plur_home: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    env = {"PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "0"}
    project = tmp_path / "app"
    project.mkdir()
    run = CliRunner()
    before = json.loads(run.invoke(cli, ["--home", str(plur_home), "link", "claude-code", str(project), "--json"],
                                   env=env).stdout)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": "~/elsewhere/memory"}))
    assert claude_memory_folder(project) == Path("~/elsewhere/memory").expanduser().resolve()
    r = run.invoke(cli, ["--home", str(plur_home), "link", "claude-code", str(project), "--json"], env=env)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["unlinked"] == [before["folder"]]
    assert [x["folder"] for x in json.loads((plur_home / "links.json").read_text())["links"]] == [
        str(claude_memory_folder(project))]
