"""What ``plur ingest`` reads when given folders: every session of a Claude Code project, or of all of them.

Claude Code keeps one transcript per session in ``~/.claude/projects/<project>/<session>.jsonl``; the
``<project>`` folder's name is the project's path with every character other than a letter or digit
turned into ``-`` (``/home/u/app`` -> ``-home-u-app``). :func:`ingest_sources` expands folders into
files, each with the project folder it belongs to (:func:`project_folder`), so each project's turns can
land in that project's scope. Pure apart from reading the file system.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ...errors import ValidationError
from .. import capped
from ..inside import keep_inside
from . import dsh

#: Conversation files a folder is read for.
CHAT_SUFFIXES = (".jsonl", ".ndjson", ".json", ".zip", ".zstd")


@dataclass(frozen=True)
class Source:
    """One conversation file to ingest.

    Attributes:
        path: the file.
        project: the project folder of a Claude Code transcript (the session's ``cwd``, else the folder
            name decoded), ``None`` for any other file. It need not exist on this machine.
        encoded: the Claude Code project folder's name (``-home-u-app``), ``None`` for other files.
    """

    path: Path
    project: Path | None = None
    encoded: str | None = None


def _encoded(name: str) -> bool:
    return name.startswith("-") and len(name) > 1


def ingest_sources(paths: Iterable[str | os.PathLike[str]], skipped: list[str] | None = None) -> list[Source]:
    """The conversation files ``paths`` name.

    A file is itself (a DSH session log with the workspace its header names). A DeepSeek Harness home, its
    ``sessions`` folder, one workspace's or one session's folder gives those DSH sessions, each with its
    workspace (:func:`plur.formats.chats.dsh.sessions`). A folder holding ``*.jsonl`` is one Claude Code project (its sessions, in name order);
    a folder whose subfolders hold them is Claude Code's ``projects`` folder (each project's sessions);
    any other folder gives its conversation files (:data:`CHAT_SUFFIXES`), recursively. A file in a folder that
    leads out of it (a symlink to ``../x`` or ``/etc/...``) is never read (:mod:`plur.formats.inside`): a line
    saying so is appended to ``skipped``.

    Raises:
        ValidationError: a path that does not exist, or a folder with no conversation file.
    """
    out: list[Source] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if not p.exists():
            raise ValidationError(f"no file or folder {str(p)!r}; check the path")
        if p.is_file():
            head = dsh.header(p) if p.name in dsh.FILE_NAMES else None
            cwd = head.get("cwd") if head is not None else None
            out.append(Source(p, Path(cwd)) if isinstance(cwd, str) and cwd else
                       _source(p) if _encoded(p.parent.name) else Source(p))
            continue

        def inside(files: Iterable[Path], folder: Path = p) -> list[Path]:
            return keep_inside(folder, files, skipped)

        found_dsh = dsh.sessions(p)  # a DSH home, its sessions folder, a workspace's or a session's folder
        if found_dsh:
            kept = set(inside(f for f, _ in found_dsh))
            out += [Source(f, Path(cwd) if cwd else None) for f, cwd in found_dsh if f in kept]
            continue
        sessions = inside(sorted(p.glob("*.jsonl")))
        if sessions:
            out += [_source(f) for f in sessions] if _encoded(p.name) or _has_cwd(sessions[0]) else \
                [Source(f) for f in sessions]
            continue
        projects = [d for d in sorted(p.iterdir()) if d.is_dir() and any(d.glob("*.jsonl"))]
        if projects:
            out += [_source(f) for d in projects for f in inside(sorted(d.glob("*.jsonl")))]
            continue
        found = inside(sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in CHAT_SUFFIXES
                              and not any(part.startswith(".") for part in f.relative_to(p).parts)))
        if not found:
            raise ValidationError(f"{str(p)!r} holds no conversation files ({', '.join(CHAT_SUFFIXES)}); a Claude "
                                  "Code projects folder is ~/.claude/projects")
        out += [Source(f) for f in found]
    return out


def _source(f: Path) -> Source:
    cwd = _first_cwd(f)
    name = f.parent.name
    project = Path(cwd) if cwd else project_folder(name) if _encoded(name) else None
    return Source(f, project, name if _encoded(name) else None)


def _has_cwd(f: Path) -> bool:
    return _first_cwd(f) is not None


def _first_cwd(f: Path, lines: int = 50) -> str | None:
    """The ``cwd`` of the first events of a Claude Code transcript (where the session ran), if any."""
    try:
        with f.open("rb") as fh:
            for _ in range(lines):  # a line of at most HEAD_BYTES each: a long tool result is no cwd
                line = fh.readline(capped.HEAD_BYTES)
                if not line:
                    break
                try:
                    event = json.loads(line.decode("utf-8", errors="replace"))
                except (ValueError, RecursionError):
                    continue
                if isinstance(event, dict) and isinstance(event.get("cwd"), str) and event["cwd"].startswith("/"):
                    return event["cwd"]
    except OSError:
        return None
    return None


def project_folder(encoded: str, root: Path = Path("/")) -> Path:
    """Decode a Claude Code project folder name into the path it stands for.

    Each ``-`` was a ``/`` or another character (``-``, ``.``, ``_``, a space); folders that exist here
    decide, longest name first. Where none exists, each remaining ``-`` is read as ``/``.
    """
    parts = encoded.strip("-").split("-")
    here = root
    i = 0
    while i < len(parts):
        for j in range(len(parts), i, -1):
            chunk = parts[i:j]
            hit = next((here / name for name in _joins(chunk) if (here / name).is_dir()), None)
            if hit is not None:
                here, i = hit, j
                break
        else:
            return here.joinpath(*parts[i:])
    return here


def _joins(chunk: list[str]) -> list[str]:
    if len(chunk) == 1:
        return chunk
    return [sep.join(chunk) for sep in ("-", ".", "_", " ")] + ["." + "-".join(chunk[1:])] * (chunk[0] == "")


def encode_project(folder: str | os.PathLike[str]) -> str:
    """The name Claude Code gives a project's folder under ``~/.claude/projects``.

    ``/home/u/app`` -> ``-home-u-app``: every character but an ASCII letter or digit becomes ``-``.
    """
    return re.sub(r"[^A-Za-z0-9]", "-", str(Path(folder).expanduser().resolve()))
