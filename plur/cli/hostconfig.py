"""What another program's config needs to run plur: the absolute command, for configs that work outside the venv.

Claude Code, Codex and MCP clients start ``plur`` with their own ``PATH``, which seldom holds the virtualenv
plur was installed in: a bare ``plur`` there is ``command not found`` and the host runs with no memory and no
sign. ``plur hook claude-code --print-config`` and ``plur mcp --print-config`` print a config naming the
absolute path of this installation's ``plur`` (:func:`plur_argv`) and the home it serves, ready to paste.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

#: Seconds Claude Code and Codex give the hook command (their default is 60; the hook answers in < 1 s warm).
HOOK_TIMEOUT_S = 30


def plur_argv() -> list[str]:
    """The absolute command that runs this plur: the ``plur`` console script beside the running interpreter
    (a venv's or pipx's ``bin/``), else ``<python> -m plur``. Never a bare name looked up in ``PATH``."""
    exe = Path(sys.executable)
    for name in ("plur", "plur.exe"):
        script = exe.with_name(name)
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script.absolute())]
    return [str(exe.absolute()), "-m", "plur"]


def home_args(home: Path | None) -> list[str]:
    """``["--home", <absolute home>]`` when the home was chosen (``--home`` or ``$PLUR_HOME``), else ``[]``: a
    config that names its home serves the same memory whatever environment the host passes."""
    chosen = home if home is not None else (os.environ.get("PLUR_HOME") or None)
    return ["--home", str(Path(chosen).expanduser().absolute())] if chosen else []


def hook_config(home: Path | None, options: list[str], events: tuple[str, ...]) -> dict[str, Any]:
    """The ``hooks`` block of Claude Code's ``settings.json`` (and Codex's ``hooks.json``) for ``events``."""
    # the home after ``claude-code``: ``plur hook claude-code ...`` is answered without importing the CLI
    command = shlex.join([*plur_argv(), "hook", "claude-code", *home_args(home), *options])
    entry = [{"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}]
    return {"hooks": {event: entry for event in events}}


def mcp_config(home: Path | None, options: list[str]) -> dict[str, Any]:
    """The ``mcpServers`` entry of Claude Desktop, Cursor, Windsurf, Cline (and a project's ``.mcp.json``)."""
    argv = plur_argv()
    return {"mcpServers": {"plur": {"command": argv[0], "args": [*argv[1:], *home_args(home), "mcp", *options]}}}


def install(path: Path, config: dict[str, Any], mine: Any) -> list[str]:
    """Merge ``config`` into the JSON file at ``path`` (made, with its folder, when missing), written atomically.

    Each top-level key of ``config`` (``hooks``, ``mcpServers``) is a mapping merged into the file's: for every
    name in it, the entries ``mine(entry)`` recognises as an earlier plur's are replaced by ``config``'s, every
    other entry and every other setting is kept.

    Returns:
        The names written (``["UserPromptSubmit", "SessionStart"]``, ``["plur"]``).

    Raises:
        ValidationError: the file is not a JSON object (it is left as it was).
    """
    import json

    from ..errors import ValidationError
    from ..store.atomic import atomic_write

    path = path.expanduser()
    try:
        current = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError) as exc:
        raise ValidationError(f"{str(path)!r} is not a JSON file plur can read ({exc}); fix it or give another "
                              "path (nothing was written)") from None
    if not isinstance(current, dict):
        raise ValidationError(f"{str(path)!r} holds JSON that is not an object; nothing was written")
    names: list[str] = []
    for key, wanted in config.items():
        held = current.get(key) if isinstance(current.get(key), dict) else {}
        for name, value in wanted.items():
            old = held.get(name)
            if isinstance(value, list):  # hooks: a list of matcher groups per event; keep the others'
                kept = [g for g in old if not mine(g)] if isinstance(old, list) else []
                held[name] = [*kept, *value]
            else:
                held[name] = value
            names.append(name)
        current[key] = held
    atomic_write(path, (json.dumps(current, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return names


def is_plur_hook(group: Any) -> bool:
    """Is this hooks group (``{"hooks": [{"type": "command", "command": ...}]}``) plur's own?"""
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(isinstance(h, dict) and " hook claude-code" in str(h.get("command", ""))
                                           for h in hooks)


__all__ = ["HOOK_TIMEOUT_S", "home_args", "hook_config", "install", "is_plur_hook", "mcp_config", "plur_argv"]
