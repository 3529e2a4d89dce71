"""``plur link``: keep a Claude Code memory folder and plur in step, both ways, while the service runs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..errors import ValidationError
from ..service.session import Session as App
from .output import echo, emit_json, json_option
from .scopes import HERE_HELP, NonBlankPath, scope_value


@click.group()
def link() -> None:
    """Link a Claude Code memory folder to a scope: files and engrams stay in step while the service runs."""


@link.command("claude-code")
@click.argument("project_dir", required=False, type=NonBlankPath(path_type=Path, file_okay=False))
@click.option("--memory-dir", type=NonBlankPath(path_type=Path, file_okay=False), default=None,
              help="The memory folder; default Claude Code's for PROJECT_DIR (~/.claude/projects/<path>/memory).")
@click.option("--scope", default=None, callback=scope_value,
              help="The scope its memories live in; default PROJECT_DIR's project scope; " + HERE_HELP)
@click.option("--own-folder", is_flag=True,
              help="Give PROJECT_DIR a Claude Code memory folder no other project shares (sets autoMemoryDirectory "
                   "in PROJECT_DIR/.claude/settings.local.json), for a project whose folder another one uses.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def claude_code(app: App, project_dir: Path | None, memory_dir: Path | None, scope: str | None, own_folder: bool,
                as_json: bool) -> None:
    """Link PROJECT_DIR's Claude Code memory folder (default: the current folder's) to its project scope.

    Syncs once now; then the service keeps them in step (started in the background when none runs and
    auto-start is on; else `plur service start`): a memory file Claude Code writes, edits or deletes
    becomes, updates or forgets its engram within seconds, and an engram learned, changed or forgotten in
    the scope appears in, changes or leaves the folder and its MEMORY.md. Two edits that cross keep both
    texts, the conflict named.

    Claude Code gives two projects one folder when their paths differ only in characters other than ASCII
    letters and digits (/work/你好世界 and /work/我的项目): linking the second to another scope is refused,
    naming the first; --own-folder gives it a folder of its own.
    """
    from ..hosts.claude_link import Link, claude_memory_folder, give_own_folder, load_links, reconcile, \
        remove_link, save_link, sharing
    from ..project import resolve
    from ..service import autostart
    from ..store.scope import check_scope

    project = Path(os.path.realpath(project_dir or Path.cwd()))
    if memory_dir is None and not project.is_dir():  # a typo would link (and create) a folder nobody uses
        raise ValidationError(f"cannot link {str(project_dir)!r}: not an existing folder; give the project's "
                              "folder, or --memory-dir for a memory folder whose project is not on this machine")
    if own_folder and memory_dir is not None:
        raise ValidationError("--own-folder and --memory-dir both choose the memory folder; give one of them")
    mem = app.memory
    home = Path(mem.home)
    scope = check_scope(scope) if scope else resolve(project, mem.home).scope
    folder = Path(os.path.realpath(memory_dir)) if memory_dir is not None else claude_memory_folder(project)
    links = load_links(home)
    other = sharing(links, str(folder), scope)
    if other is not None and not own_folder:
        if other.project is None or other.project == str(project) or memory_dir is not None:
            raise ValidationError(f"cannot link {str(folder)!r} to {scope}: it is linked to {other.scope}; unlink "
                                  f"it first (plur link remove {other.folder}; the notes of {other.scope} stay)")
        raise ValidationError(
            f"cannot link {str(project)!r} to {scope}: Claude Code keeps its memory in {folder}, the folder it uses "
            f"for {other.project} too (in a path, every character but an ASCII letter or digit becomes '-'), "
            f"linked to {other.scope}; give it a folder of its own (--own-folder), share that memory "
            f"(--scope {other.scope}), or unlink the other first (plur link remove {other.folder})")
    if own_folder:
        folder = give_own_folder(project)
    new = Link("claude-code", str(folder), scope, str(project))
    new = next((x for x in links if x.folder == new.folder and x.scope == scope and x.project), new)  # shared: kept
    stale = [x for x in links if memory_dir is None and x.project == str(project) and x.folder != str(folder)]
    for x in stale:  # Claude Code uses one folder per project: the one it used before is no longer this project's
        remove_link(home, x.folder)
    save_link(home, new)
    report = reconcile(mem, new)
    door = autostart.door(mem.home)  # the service keeps them in step: start it, as any door does on first need
    if door.client is not None:
        door.client.close()
    if as_json:
        emit_json({**new.to_dict(), "to_engrams": report.to_engrams, "to_files": report.to_files,
                   "conflicts": report.conflicts, "problems": report.problems, "service": door.state,
                   "own_folder": own_folder, "unlinked": [x.folder for x in stale]})
        return
    if own_folder:
        echo(f"gave {project} a Claude Code memory folder of its own: autoMemoryDirectory in "
             f"{project / '.claude' / 'settings.local.json'}")
    for x in stale:
        echo(f"unlinked {x.folder}, the folder Claude Code used for {project} before (its files and engrams are kept)")
    echo(f"linked {folder} <-> {scope}: {len(report.to_engrams)} memory file(s) -> engrams, "
         f"{len(report.to_files)} engram(s) -> files")
    for problem in report.problems:
        echo(f"plur: {problem}", err=True)
    echo({"service": "the running service keeps them in step",
          "started": "started the plur service in the background: it keeps them in step while it runs",
          "starting": "the plur service is starting: it keeps them in step while it runs"}.get(
        door.state, f"start the service to keep them in step as they change: plur service start ({door.note})"))


@link.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def list_(app: App, as_json: bool) -> None:
    """The linked folders and their scopes."""
    from ..hosts.claude_link import load_links

    links = load_links(Path(app.memory.home))
    if as_json:
        emit_json([x.to_dict() for x in links])
        return
    for x in links:
        echo(f"{x.kind}  {x.folder}  <->  {x.scope}")
    if not links:
        echo("no linked folders (plur link claude-code [PROJECT_DIR])")


@link.command("remove")
@click.argument("folder", type=NonBlankPath(path_type=Path))
@json_option
@click.pass_obj
def remove(app: App, folder: Path, as_json: bool) -> None:
    """Stop syncing FOLDER (a memory folder, or a project folder whose memory folder is linked); nothing is deleted."""
    from ..hosts.claude_link import claude_memory_folder, load_links, remove_link

    home = Path(app.memory.home)
    real = os.path.realpath(folder)
    linked = {x.folder for x in load_links(home)}
    target = real if real in linked else str(claude_memory_folder(real))
    gone = remove_link(home, target if target in linked else real)
    if as_json:
        emit_json({"unlinked": gone.folder, "scope": gone.scope})
    else:
        echo(f"unlinked {gone.folder} (its files and engrams are kept)")
