"""A Claude Code memory folder and plur, kept in step both ways (``plur link claude-code``).

:mod:`.records` (which folders are linked to which scope, and each link's state), :mod:`.folders` (which
folder Claude Code uses for a project, and which projects share one), :mod:`.memfile` (one memory file <->
one engram, ``MEMORY.md`` lines), :mod:`.sync` (one two-way sync: :func:`reconcile`), :mod:`.watch` (the
service's thread: :class:`LinkWatcher`).
"""

from __future__ import annotations

from .folders import claude_memory_folder, give_own_folder, sharing
from .records import Link, load_links, remove_link, save_link
from .sync import SyncReport, reconcile

__all__ = ["Link", "SyncReport", "claude_memory_folder", "give_own_folder", "load_links", "reconcile",
           "remove_link", "save_link", "sharing"]
