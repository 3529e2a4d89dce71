"""The ``/memories`` file tree of Anthropic's memory tool (``memory_20250818``) over the engrams of one scope.

Each file under ``/memories`` is one engram of the scope: the file's text is the engram's statement and
its path is kept on the engram (``memory_path``). Folders are implied by the paths. Active engrams of the
scope written elsewhere (``plur learn``, another host) show as ``/memories/plur/<slug>_<id>.md``, so a
model that views ``/memories`` sees what plur holds (conversation turns stored by ingest or capture are
left out of the tree). Text passes the secret screen (:mod:`plur.screen.text`) before it is stored. Every verb checks the path first and
answers with the tool's documented errors
(:class:`MemoryToolError`); the texts follow the Anthropic SDK's local-filesystem backend, so a model
reads the same words whichever backend answers.

:mod:`plur.hosts.anthropic_memory` is the SDK class around it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import Any

from ..errors import PlurError

ROOT = "/memories"
PATH_KEY = "memory_path"
#: Where engrams without a ``memory_path`` appear.
PLUR_DIR = ROOT + "/plur"
LINE_NUMBER_WIDTH = 6


class MemoryToolError(PlurError):
    """A memory-tool command that cannot be carried out; the message is what the model is told."""


def check_path(path: Any) -> str:
    """The normalised path of a ``/memories`` path.

    Raises:
        MemoryToolError: not a string, not under ``/memories``, a ``..`` or ``.`` segment, a backslash,
            a control character, or an encoded traversal (``%2e%2e``).
    """
    if not isinstance(path, str) or not path:
        raise MemoryToolError(f"Path must start with /memories, got: {path!r}")
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise MemoryToolError(f"Path must start with /memories, got: {path}")
    segments = path[len(ROOT):].split("/")
    if any(s in (".", "..") for s in segments) or "\\" in path or re.search(r"[\x00-\x1f\x7f]", path) \
            or re.search(r"%2e|%2f|%5c", path, re.I):
        raise MemoryToolError(f"Path {path} would escape /memories directory")
    return posixpath.normpath(path) if path != ROOT else ROOT


def _slug(text: str) -> str:
    return "_".join(re.findall(r"\w+", text.lower())[:6])[:40] or "memory"


class MemoryFiles:
    """The verbs of the memory tool over :class:`plur.memory.Memory` ``memory``'s engrams in ``scope``.

    Args:
        memory: an open :class:`~plur.memory.Memory`.
        scope: the scope whose engrams are the files (``global``, ``project:x``, ``agent:y``).
        type: the type of engrams created through the tool.
    """

    def __init__(self, memory: Any, scope: str = "global", type: str = "fact") -> None:
        from ..store.scope import check_scope

        self.memory = memory
        self.scope = check_scope(scope)
        self.type = type

    # -- the tree --------------------------------------------------------------------------
    def files(self) -> dict[str, Any]:
        """path -> engram, for every file of the tree."""
        out: dict[str, Any] = {}
        for e in self.memory.list(scope=self.scope, status="active"):
            path = e.extra.get(PATH_KEY)
            if isinstance(path, str) and path.startswith(ROOT + "/"):
                out.setdefault(path, e)
            elif (e.source or {}).get("kind") != "conversation":
                out.setdefault(f"{PLUR_DIR}/{_slug(e.statement)}_{e.id[-6:]}.md", e)
        return out

    def _file(self, path: str) -> Any:
        engram = self.files().get(path)
        if engram is None:
            if self._is_dir(path):
                raise MemoryToolError(f"The path {path} is not a file.")
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid path.")
        return engram

    def _is_dir(self, path: str, files: Sequence[str] | None = None) -> bool:
        return path == ROOT or any(p.startswith(path + "/") for p in (files if files is not None else self.files()))

    def _write(self, engram: Any, **changes: Any) -> Any:
        return self.memory.update(engram.id, **changes)

    # -- verbs -----------------------------------------------------------------------------
    def view(self, path: str, view_range: Sequence[int] | None = None) -> str:
        """A folder's listing (two levels, sizes) or a file's numbered lines (optionally ``view_range``)."""
        path = check_path(path)
        files = self.files()
        if path in files:
            lines = files[path].statement.split("\n")
            start = 1
            if view_range and len(view_range) == 2:
                first = max(1, int(view_range[0]))
                last = len(lines) if int(view_range[1]) == -1 else int(view_range[1])
                if first > len(lines) or (last != -1 and last < first):
                    raise MemoryToolError(f"Invalid `view_range` parameter: {list(view_range)}. The file has "
                                          f"{len(lines)} lines.")
                lines, start = lines[first - 1:last], first
            numbered = [f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines)]
            return f"Here's the content of {path} with line numbers:\n" + "\n".join(numbered)
        if not self._is_dir(path, list(files)):
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid path.")
        rows: dict[str, int] = {}  # relative path (a folder ends in /) -> bytes of the files in or under it
        total = 0
        for p, e in files.items():
            if not p.startswith(path + "/"):
                continue
            parts = p[len(path) + 1:].split("/")
            size = len(e.statement.encode("utf-8"))
            total += size
            for depth in range(1, min(len(parts), 2) + 1):
                rel = "/".join(parts[:depth]) + ("" if depth == len(parts) else "/")
                rows[rel] = rows.get(rel, 0) + size
        lines = [f"{_size(total)}\t{path}"]
        lines += [f"{_size(size)}\t{path}/{rel}" for rel, size in sorted(rows.items())]
        return (f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:\n"
                + "\n".join(lines))

    def create(self, path: str, file_text: str) -> str:
        """A new file: a new engram of the scope with ``memory_path`` = ``path``."""
        path = check_path(path)
        files = self.files()
        if path in files:
            raise MemoryToolError(f"File {path} already exists")
        if path == ROOT or self._is_dir(path, list(files)):
            raise MemoryToolError(f"The path {path} is a directory")
        if not file_text.strip():
            raise MemoryToolError(f"Cannot create {path}: plur keeps no empty memory file; give file_text")
        file_text = self._screened(file_text)
        engram, created = self.memory.learn_outcome(file_text, scope=self.scope, type=self.type,
                                                    source={"kind": "memory-tool", "path": path})
        if not created:
            other = next((p for p, e in files.items() if e.id == engram.id), None)
            if other is not None and other != f"{PLUR_DIR}/{_slug(engram.statement)}_{engram.id[-6:]}.md":
                raise MemoryToolError(f"File {path} was not created: the same text is already stored in {other}")
        self._write(engram, extra={**dict(engram.extra), PATH_KEY: path})
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        """Replace the one occurrence of ``old_str`` (zero or several: an error naming the lines)."""
        path = check_path(path)
        engram = self._file(path)
        content = engram.statement
        count = content.count(old_str) if old_str else 0
        if count == 0:
            raise MemoryToolError(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in "
                                  f"{path}.")
        if count > 1:
            lines, start = [], 0
            while (pos := content.find(old_str, start)) != -1:
                lines.append(content[:pos].count("\n") + 1)
                start = pos + 1
            raise MemoryToolError(f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in "
                                  f"lines: {', '.join(map(str, lines))}. Please ensure it is unique")
        changed_line = content[:content.find(old_str)].count("\n")
        new = content.replace(old_str, new_str)
        self._set_text(engram, path, new)
        new_lines = new.split("\n")
        lo, hi = max(0, changed_line - 2), min(len(new_lines), changed_line + 3)
        snippet = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[n - 1]}" for n in range(lo + 1, hi + 1)]
        return ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                + "\n".join(snippet))

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        """Insert ``insert_text`` after line ``insert_line`` (0 = at the top)."""
        path = check_path(path)
        engram = self._file(path)
        lines = engram.statement.split("\n")
        if not isinstance(insert_line, int) or insert_line < 0 or insert_line > len(lines):
            raise MemoryToolError(f"Invalid `insert_line` parameter: {insert_line}. It should be within the range "
                                  f"[0, {len(lines)}].")
        lines.insert(insert_line, insert_text.rstrip("\n"))
        self._set_text(engram, path, "\n".join(lines))
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        """Forget the file's engram, or every engram under a folder."""
        path = check_path(path)
        if path == ROOT:
            raise MemoryToolError("Cannot delete the /memories directory itself")
        files = self.files()
        doomed = [e for p, e in files.items() if p == path or p.startswith(path + "/")]
        if not doomed:
            raise MemoryToolError(f"The path {path} does not exist")
        for e in doomed:
            self.memory.forget(e.id)
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        """Move a file or a folder (every file under it) to ``new_path``."""
        old_path, new_path = check_path(old_path), check_path(new_path)
        if old_path == ROOT:
            raise MemoryToolError("Cannot rename the /memories directory itself")
        files = self.files()
        if new_path in files or self._is_dir(new_path, list(files)):
            raise MemoryToolError(f"The destination {new_path} already exists")
        moving = {p: e for p, e in files.items() if p == old_path or p.startswith(old_path + "/")}
        if not moving:
            raise MemoryToolError(f"The path {old_path} does not exist")
        if new_path.startswith(old_path + "/"):
            raise MemoryToolError(f"Cannot move {old_path} into itself ({new_path})")
        for p, e in moving.items():
            self._write(e, extra={**dict(e.extra), PATH_KEY: new_path + p[len(old_path):]})
        return f"Successfully renamed {old_path} to {new_path}"

    def _set_text(self, engram: Any, path: str, text: str) -> None:
        if not text.strip():
            raise MemoryToolError(f"No change made: {path} would be empty; delete it instead")
        self._write(engram, statement=self._screened(text), extra={**dict(engram.extra), PATH_KEY: path})

    def _screened(self, text: str) -> str:
        """``text`` with credentials redacted (capture's screen, :mod:`plur.screen.text`); they are counted, never kept."""
        from ..screen.text import screen

        shown = screen(text, keep_ids=getattr(getattr(self.memory, "settings", None), "keep_identity_numbers", False))
        if shown.kinds:
            self.memory.stats.record_screened(shown.kinds, "memory-tool")
        return shown.text


def _size(n: int) -> str:
    if n < 1024:
        return f"{n}B"
    return f"{n / 1024:.1f}K" if n < 1 << 20 else f"{n / (1 << 20):.1f}M"
