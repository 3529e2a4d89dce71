"""A Claude Code memory folder and plur, kept in step both ways (``plur link claude-code``).

:mod:`.records` (which folders are linked to which scope, and each link's state), :mod:`.memfile` (one
memory file <-> one engram, ``MEMORY.md`` lines), :mod:`.sync` (one two-way sync: :func:`reconcile`),
:mod:`.watch` (the service's thread: :class:`LinkWatcher`).
"""

from __future__ import annotations

import os
from pathlib import Path

from .records import Link, load_links, remove_link, save_link
from .sync import SyncReport, reconcile


def claude_memory_folder(project: str | os.PathLike[str]) -> Path:
    """Where Claude Code keeps a project's memory: ``<config>/projects/<encoded project path>/memory``.

    ``<config>`` is ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``; the project's path is encoded as Claude Code
    does (every character but a letter or digit becomes ``-``).
    """
    from ...formats.chats.sources import encode_project

    config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
    return config / "projects" / encode_project(project) / "memory"


__all__ = ["Link", "SyncReport", "claude_memory_folder", "load_links", "reconcile", "remove_link", "save_link"]
