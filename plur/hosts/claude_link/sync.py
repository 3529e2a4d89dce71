"""Keep one Claude Code memory folder and the engrams of one scope in step, both ways (:func:`reconcile`).

Each run compares the folder's memory files and the scope's engrams with what they were when they last
agreed (:class:`~.records.LinkState`):

* a file that is new or changed becomes or updates its engram; an engram that is new or changed becomes
  or rewrites its file (``<type>_<slug>.md``, :mod:`.memfile`) and its line in ``MEMORY.md``;
* a file deleted forgets its engram, an engram forgotten (or retired) deletes its file and its
  ``MEMORY.md`` line -- unless the other side changed meanwhile: then the change wins and is restored;
  an engram superseded hands its file and line to the engram that replaced it;
* both changed at once (two edits that cross): no text is lost. The file's text comes first, then a line
  naming the conflict, then plur's text; both sides get that text and the engram the tag ``conflict``.

Which files are read, and when, is :mod:`.reading`'s job: only files inside the folder (no link out is followed),
no larger than a memory can be, and only once they have stopped changing; a file not read this time is neither new
nor deleted. Text from a file passes the secret screen (:mod:`plur.screen.text`) before it becomes an engram (the file itself
is left as Claude Code wrote it). Conversation turns of the scope (ingest, capture) are not memory files; a memory
file whose text is a captured turn's is linked to that note instead of adding a second. A run writes nothing when
nothing changed, and holds a lock per link (``<home>/links/<key>.lock``), so the service's watcher and a
``plur link`` in another process never sync one folder at once.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...errors import PlurError
from ...formats.claude_dir import CLAUDE_TYPE_OUT
from . import memfile
from .reading import Looks, file_limit, memory_files
from .records import Link, LinkState

SOURCE_KIND = "claude-code-memory"


@dataclass
class SyncReport:
    """What one :func:`reconcile` did (file names and engram ids)."""

    to_engrams: list[str] = field(default_factory=list)
    to_files: list[str] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: files not read yet because they are still changing (read at a later pass, once they hold still)
    waiting: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.to_engrams or self.to_files or self.deleted_files or self.forgotten or self.conflicts)


def _write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".plur-", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _is_memory(e: Any, filed: set[str]) -> bool:
    """A note the folder holds: not a conversation turn (ingest, capture), unless a file is linked to it
    (a memory file whose text is a captured turn's text is that note, not a second one)."""
    return (e.source or {}).get("kind") != "conversation" or e.id in filed


def reconcile(memory: Any, link: Link, looks: Looks | None = None) -> SyncReport:
    """One sync of ``link``'s folder and scope (see the module doc); under the link's lock.

    Args:
        looks: what earlier passes saw of the folder's files (the service's watcher keeps one per link); ``None``
            for a one-time sync (:func:`.reading.memory_files`).
    """
    from filelock import FileLock

    from ...store.atomic import private_dirs

    home = Path(memory.home)
    lock_path = home / "links" / f"{link.key}.lock"
    private_dirs(lock_path.parent)  # owner-only, like every folder and file of the home, whatever the umask
    with FileLock(str(lock_path), timeout=60, mode=0o600):
        return _reconcile(memory, link, LinkState.load(home, link), looks)


def _reconcile(memory: Any, link: Link, state: LinkState, looks: Looks | None) -> SyncReport:
    folder = Path(link.folder)
    folder.mkdir(parents=True, exist_ok=True)
    report = SyncReport()
    settings = memory.settings
    seen = memory_files(folder, file_limit(settings.max_statement_bytes, settings.max_input_bytes), looks)
    report.problems += seen.problems
    report.waiting += seen.waiting
    files = seen.texts
    filed = {was["id"] for was in state.files.values()}
    engrams = {e.id: e for e in memory.list(scope=link.scope, status="active") if _is_memory(e, filed)}
    new_state: dict[str, dict[str, str]] = {}
    mapped: dict[str, Any] = {}  # file name -> engram, for MEMORY.md
    gone: set[str] = set()
    if any(was["id"] not in engrams for was in state.files.values()):
        memory._scan(force=True)  # an engram looks gone: make sure it is, not only unseen yet by this process
        engrams = {e.id: e for e in memory.list(scope=link.scope, status="active") if _is_memory(e, filed)}
    successors = {e.supersedes: e for e in engrams.values() if e.supersedes and e.id not in filed}
    still_filed = {was["id"] for name, was in state.files.items() if name in files or name in seen.unread}
    for name, was in state.files.items():
        e, text = engrams.get(was["id"]), files.get(name)
        if name in seen.unread:  # there, but not read this time: as it was
            new_state[name] = was
            if e is not None:
                mapped[name] = e
            continue
        file_changed = text is not None and memfile.sha(text) != was["file"]
        engram_changed = e is not None and memfile.engram_hash(e) != was["engram"]
        try:
            if text is None and e is None:
                gone.add(name)
            elif text is None and e.id in still_filed:  # another file holds the same text: its engram stays
                gone.add(name)
            elif text is None:
                if engram_changed:  # deleted here, edited there: the edit is kept
                    new_state[name] = _to_file(folder, name, e, report)
                    mapped[name] = e
                else:
                    memory.forget(e.id)
                    report.forgotten.append(e.id)
                    gone.add(name)
            elif e is None:
                if file_changed:  # forgotten there, edited here: the edit is kept
                    e, new_state[name] = _to_engram(memory, link, name, text, None, report)
                    mapped[name] = e
                elif was["id"] in successors:  # superseded: the new engram takes over its file and line
                    e = successors.pop(was["id"])
                    new_state[name], mapped[name] = _to_file(folder, name, e, report), e
                else:
                    (folder / name).unlink(missing_ok=True)
                    report.deleted_files.append(name)
                    gone.add(name)
            elif file_changed and engram_changed:
                e, new_state[name] = _conflict(memory, link, folder, name, text, e, report)
                mapped[name] = e
            elif file_changed:
                e, new_state[name] = _to_engram(memory, link, name, text, e, report)
                mapped[name] = e
            elif engram_changed:
                new_state[name] = _to_file(folder, name, e, report)
                mapped[name] = e
            else:
                new_state[name], mapped[name] = was, e
        except PlurError as exc:
            report.problems.append(f"{name}: {exc}")
            new_state[name] = was
    known_ids = {v["id"] for v in new_state.values()} | set(report.forgotten)
    for name, text in files.items():
        if name in new_state or name in state.files:
            continue
        try:
            e, entry = _to_engram(memory, link, name, text, None, report)
        except PlurError as exc:
            report.problems.append(f"{name}: {exc}")
            continue
        new_state[name], mapped[name] = entry, e
        known_ids.add(e.id)
    for e in engrams.values():
        if e.id in known_ids:
            continue
        name = memfile.file_name(e, set(files) | set(new_state) | seen.unread)
        new_state[name], mapped[name] = _to_file(folder, name, e, report), e
    index = folder / memfile.INDEX
    current = index.read_text(encoding="utf-8") if index.is_file() else ""
    text = memfile.index_text(current, mapped, gone, set(report.to_files))
    if text != current and (mapped or current):
        _write(index, text)
    if new_state != state.files:
        state.files = new_state
        state.save()
    return report


def _to_file(folder: Path, name: str, e: Any, report: SyncReport) -> dict[str, str]:
    text = memfile.render(e)
    _write(folder / name, text)
    report.to_files.append(name)
    return {"id": e.id, "file": memfile.sha(text), "engram": memfile.engram_hash(e)}


def _to_engram(memory: Any, link: Link, name: str, text: str, e: Any, report: SyncReport,
               tags: tuple[str, ...] = ()) -> tuple[Any, dict[str, str]]:
    body, kind, fields = memfile.parse(text, str(Path(link.folder) / name))
    if not body:
        raise PlurError("the memory file has no text; it is left until it has some")
    body = _screened(memory, body)
    if e is None:
        e, _ = memory.learn_outcome(body, scope=link.scope, type=kind or "reference", tags=tags,
                                    source={"kind": SOURCE_KIND, "file": name}, created=memfile.dated(fields))
        extra = {**dict(e.extra), **fields}
        e = memory.update(e.id, extra=extra)
    else:
        extra = {**{k: v for k, v in e.extra.items() if k in memfile.NOT_FRONTMATTER}, **memfile.own_fields(fields, e)}
        if kind == CLAUDE_TYPE_OUT.get(e.type):  # a fact or procedure, as Claude's four types write it
            kind = e.type
        e = memory.update(e.id, statement=body, type=kind or e.type, extra=extra,
                          tags=tuple(dict.fromkeys((*e.tags, *tags))))
    report.to_engrams.append(name)
    return e, {"id": e.id, "file": memfile.sha(text), "engram": memfile.engram_hash(e)}


def _screened(memory: Any, text: str) -> str:
    """``text`` through the secret screen (capture's): a key in a memory file is not stored in plur (counted)."""
    from ...screen.text import screen

    shown = screen(text, keep_ids=getattr(getattr(memory, "settings", None), "keep_identity_numbers", False))
    if shown.kinds:
        memory.stats.record_screened(shown.kinds, "link")
    return shown.text


def _conflict(memory: Any, link: Link, folder: Path, name: str, text: str, e: Any,
              report: SyncReport) -> tuple[Any, dict[str, str]]:
    body, _, _ = memfile.parse(text, str(folder / name))
    body = _screened(memory, body)
    if body == e.statement:
        return e, {"id": e.id, "file": memfile.sha(text), "engram": memfile.engram_hash(e)}
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    merged = (f"{body}\n\n[conflict {when}: Claude Code's file (above) and plur (below) were edited at the same "
              f"time; both kept]\n\n{e.statement}")
    e = memory.update(e.id, statement=merged, tags=tuple(dict.fromkeys((*e.tags, memfile.CONFLICT_TAG))))
    report.conflicts.append(name)
    return e, _to_file(folder, name, e, report)
