"""What a conversation's transcript already holds of plur's blocks: the ids of the notes shown in it.

A resumed-and-forked session has a new ``session_id`` over a copy of an older history, blocks included
(issue 38), so the hook reads what that history already shows instead of starting from nothing:

* Claude Code (``claude --resume ID --fork-session``) copies the history into the new session's JSONL
  (``transcript_path``).
* Codex (``codex exec fork ID``, ``codex fork``; its ``SessionStart`` has ``source`` ``fork``) does not copy:
  the new rollout's first line, ``session_meta``, names the history it continues, ``history_base``
  (``thread_id``, ``end_byte_offset``), the parent's rollout ``rollout-<time>-<thread_id>.jsonl`` under the
  same ``sessions`` folder. That history is read up to that offset, and its own ``history_base`` in turn
  (a fork of a fork).

Imports only ``json``, ``os`` and ``re`` (the hook's fast path).
"""

from __future__ import annotations

import json
import os
import re

#: A line of plur's block: ``- [ENG-2026-12-06-940678 | user | global | 2026-12-06] ...`` (plur.prompt.block).
_BLOCK_LINE = re.compile(r"\[(ENG-\d{4}-\d{2}-\d{2}-[0-9a-f]{6}) \|")
#: Most transcript bytes read for it (the newest; a copied history is read once per forked session).
TRANSCRIPT_MAX_BYTES = 32 * 1024 * 1024
#: Most bytes of a Codex rollout's first line (``session_meta`` holds the base instructions: ~20 KiB).
META_MAX_BYTES = 1024 * 1024
#: Most forks of forks followed back.
MAX_DEPTH = 16
_THREAD_ID = re.compile(r"[0-9A-Za-z-]{1,64}")


def _read(path: str, end: int | None) -> tuple[str, bytes]:
    """The newest ``TRANSCRIPT_MAX_BYTES`` of ``path`` up to byte ``end`` (text), and its first line (bytes)."""
    with open(path, "rb") as fh:
        first = fh.readline(META_MAX_BYTES)
        size = os.fstat(fh.fileno()).st_size
        stop = size if end is None else max(0, min(end, size))
        start = max(0, stop - TRANSCRIPT_MAX_BYTES)
        fh.seek(start)
        return fh.read(stop - start).decode("utf-8", "replace"), first


def _history_base(first: bytes) -> tuple[str, int] | None:
    """``(thread_id, end_byte_offset)`` of the history a Codex rollout continues (``None``: it starts new)."""
    try:
        meta = json.loads(first)
        base = meta["payload"]["history_base"] if meta.get("type") == "session_meta" else None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if not isinstance(base, dict):
        return None
    thread, end = base.get("thread_id"), base.get("end_byte_offset")
    if not isinstance(thread, str) or not _THREAD_ID.fullmatch(thread) or not isinstance(end, int) or end < 0:
        return None
    return thread, end


def _rollout(near: str, thread: str) -> str | None:
    """The rollout of ``thread`` in the ``sessions`` folder that holds ``near`` (Codex: sessions/YYYY/MM/DD/)."""
    folder = os.path.dirname(os.path.abspath(near))
    for _ in range(4):
        if os.path.basename(folder) == "sessions":
            break
        folder = os.path.dirname(folder)
    else:
        return None
    suffix = f"-{thread}.jsonl"
    for root, _dirs, files in os.walk(folder):
        for name in files:
            if name.startswith("rollout-") and name.endswith(suffix):
                return os.path.join(root, name)
    return None


def shown_in_transcript(transcript: object) -> list[str]:
    """Ids of the notes plur's blocks already put into a conversation's transcript and the history it continues.

    Unreadable, missing or not a file: ``[]`` (the session then starts from nothing, as before).
    """
    if not isinstance(transcript, str) or not transcript:
        return []
    found: list[str] = []
    path, end, seen = transcript, None, set()
    for _ in range(MAX_DEPTH):
        try:
            data, first = _read(path, end)
        except OSError:
            break
        found += _BLOCK_LINE.findall(data)
        seen.add(os.path.abspath(path))
        base = _history_base(first)
        parent = _rollout(path, base[0]) if base is not None else None
        if parent is None or os.path.abspath(parent) in seen:
            break
        path, end = parent, base[1]
    return list(dict.fromkeys(found))
