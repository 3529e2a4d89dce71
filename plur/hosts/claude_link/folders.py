"""Which Claude Code memory folder a project has, and which projects share one.

Claude Code keeps a project's memory in ``<config>/projects/<encoded path>/memory`` (``<config>``:
``$CLAUDE_CONFIG_DIR``, else ``~/.claude``), the path encoded with every character but an ASCII letter or digit
as ``-``: ``/work/你好世界`` and ``/work/我的项目`` (or ``/work/a.b`` and ``/work/a-b``) get one folder, and
Claude Code reads and writes the same memory in both. A setting ``autoMemoryDirectory`` (in the project's
``.claude/settings.local.json`` or ``.claude/settings.json``, or the user's ``<config>/settings.json``, first found
wins, as Claude Code 2.1.328 reads them) puts it elsewhere: :func:`claude_memory_folder` follows it, and
:func:`give_own_folder` writes it to give a project a folder of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from ...errors import ValidationError
from .records import Link

SETTING = "autoMemoryDirectory"
LOCAL_SETTINGS = Path(".claude") / "settings.local.json"


def claude_config() -> Path:
    """Claude Code's configuration folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()


def _settings(path: Path, strict: bool = False) -> dict[str, Any]:
    """A Claude Code settings file (``{}`` when absent; when not an object too, unless ``strict``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ValidationError(f"cannot read Claude Code's settings {path} ({exc}); fix the file") from None
    if not isinstance(data, dict) and strict:
        raise ValidationError(f"Claude Code's settings {path} are not a JSON object; fix the file")
    return data if isinstance(data, dict) else {}


def claude_memory_folder(project: str | os.PathLike[str]) -> Path:
    """Where Claude Code keeps ``project``'s memory: its ``autoMemoryDirectory`` setting where one is set,
    else ``<config>/projects/<encoded project path>/memory``.

    Raises:
        ValidationError: a settings file that is not JSON.
    """
    from ...formats.chats.sources import encode_project

    root = Path(project)
    for path in (root / LOCAL_SETTINGS, root / ".claude" / "settings.json", claude_config() / "settings.json"):
        chosen = _settings(path).get(SETTING)
        if isinstance(chosen, str) and chosen.strip():
            where = Path(chosen.strip()).expanduser()
            return Path(os.path.realpath(where if where.is_absolute() else root / where))
    return claude_config() / "projects" / encode_project(project) / "memory"


def sharing(links: list[Link], folder: str, scope: str) -> Link | None:
    """The link that already keeps ``folder`` in step with a scope other than ``scope`` (``None``: none)."""
    return next((x for x in links if x.folder == folder and x.scope != scope), None)


def give_own_folder(project: str | os.PathLike[str]) -> Path:
    """Give ``project`` a Claude Code memory folder no other project maps to, and return it.

    Writes ``autoMemoryDirectory`` = ``<config>/projects/<encoded path>-<8 hex of the path>/memory`` into the
    project's ``.claude/settings.local.json`` (Claude Code's settings of this machine, not checked in), the
    file's other settings kept.

    Raises:
        ValidationError: the settings file is not a JSON object.
    """
    from ...formats.chats.sources import encode_project

    root = Path(project)
    path = root / LOCAL_SETTINGS
    settings = _settings(path, strict=True)
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:8]
    folder = claude_config() / "projects" / f"{encode_project(root)}-{digest}" / "memory"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({**settings, SETTING: str(folder)}, ensure_ascii=False, indent=2) + "\n",
                   encoding="utf-8")
    if path.exists():
        shutil.copymode(path, tmp)
    os.replace(tmp, path)
    return folder
