"""Which settings a running service answers with, and whether a caller's differ (stdlib ``os`` + ``zlib`` only).

A service reads ``config.toml`` and the ``PLUR_*`` setting variables once, when it starts. A caller
whose settings differ must not be answered with the service's: an edited ``config.toml`` would be
ignored until the service exits (an auto-started one lives up to ``service_idle_exit_s``, 3 hours),
and ``PLUR_FUSION=rrf plur recall ...`` would silently recall with the service's fusion.

So the service writes a stamp into ``service.json`` (``"settings"``: ``config.toml``'s size and CRC-32,
or ``null`` without one; the setting variables it saw; the names it looked at) and every door compares
its own with :func:`drift` before it talks to the service. This module imports nothing heavy: the
thin CLI client and the Claude Code hook call it on every prompt.
"""

from __future__ import annotations

import os
from pathlib import Path
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is ~2 ms of a cold CLI recall
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable
    from typing import Any

CONFIG_FILE = "config.toml"
#: Setting variables that do not change what a service answers (whether one starts, when it exits).
UNSTAMPED = ("PLUR_AUTOSTART_SERVICE", "PLUR_SERVICE_IDLE_EXIT_S")
#: :func:`drift`'s kinds.
CONFIG, ENV = "config", "env"


def config_mark(home: str | os.PathLike[str]) -> list[int] | None:
    """``[size, crc32]`` of ``<home>/config.toml`` (bytes), ``None`` when there is none or it cannot be read."""
    try:
        with open(os.path.join(home, CONFIG_FILE), "rb") as fh:
            data = fh.read(1 << 20)
    except OSError:
        return None
    import zlib  # only with a config.toml (an extension module: ~0.5 ms of a cold CLI recall otherwise)

    return [len(data), zlib.crc32(data)]


def stamp(home: str | os.PathLike[str], setting_names: Iterable[str]) -> dict[str, Any]:
    """The service's stamp: ``{"config": config_mark, "env": {name: value set}, "names": [names looked at]}``.

    Args:
        home: the service's home.
        setting_names: every setting's name (``plur.config.SETTINGS``); their ``PLUR_<NAME>`` variables
            other than :data:`UNSTAMPED` are looked at.
    """
    names = sorted(n for n in (f"PLUR_{s.upper()}" for s in setting_names) if n not in UNSTAMPED)
    return {"config": config_mark(home), "env": {n: os.environ[n] for n in names if os.environ.get(n)},
            "names": names}


def drift(home: str | os.PathLike[str], info: dict[str, Any] | None) -> tuple[str, str]:
    """How this process's settings differ from those of the service ``info`` (``service.json``) describes.

    Returns:
        ``("", "")`` when they agree (or the service wrote no stamp: an older plur); ``(CONFIG, words)``
        when ``config.toml`` changed since the service started (every caller differs: the service is
        stale); ``(ENV, words)`` when this process sets a ``PLUR_*`` setting variable to another value
        than the service saw (only this caller asks for other settings). A variable the service saw and
        this process lacks is no drift: a service started with ``PLUR_MODEL=x plur service start`` serves
        later calls made without it, and MCP clients that pass a bare environment.
    """
    s = info.get("settings") if isinstance(info, dict) else None
    if not isinstance(s, dict):
        return "", ""
    if config_mark(home) != s.get("config"):
        return CONFIG, f"{Path(home) / CONFIG_FILE} changed since the service started"
    theirs = s.get("env") if isinstance(s.get("env"), dict) else {}
    for name in s.get("names") or ():
        mine = os.environ.get(name) or None
        if mine is not None and mine != theirs.get(name):
            shown = "unset" if theirs.get(name) is None else repr(theirs.get(name))
            return ENV, f"{name} is {mine!r} here and {shown} in the service"
    return "", ""


__all__ = ["CONFIG", "ENV", "UNSTAMPED", "config_mark", "drift", "stamp"]
