"""The project an unpinned ``plur mcp`` files and recalls under: the client's MCP roots, else the server's folder.

``plur mcp --scope X`` pins the server (:mod:`plur.mcp.scope`). Without it, a tool call that names no scope
uses the project of the client's first ``file://`` root (the folder the user opened; the client declares the
``roots`` capability and answers ``roots/list``, which needs a connection with a back-channel: the
handshake protocol versions every client speaks today; roots are deprecated from 2026-07-28), else of the folder the client started the server in, as
every door resolves a folder (:mod:`plur.project`). A call may still name any scope: the project is a
default, not a boundary.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


def root_folder(uri: str) -> str | None:
    """The local folder of a ``file://`` root URI (``None`` for any other scheme or host)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = unquote(parsed.path)
    return path if os.path.isabs(path) else None


class ClientProject:
    """The default scope of an unpinned server, per client session (roots asked once per session).

    Args:
        home: the plur home (its ``projects.json``).
        folder: the server's own folder, used when the client gives no root (default: the current one).
    """

    def __init__(self, home: Path, folder: str | None = None) -> None:
        self.home = home
        self.folder = folder or os.getcwd()
        self._by_session: dict[int, str] = {}
        self._lock = threading.Lock()

    def _roots(self, ctx: Any) -> list[str]:
        import anyio.from_thread
        import mcp.types as types

        session = ctx.session
        if not getattr(session, "can_send_request", True):  # 2026-07-28 stateless requests: no roots/list
            return []
        if not session.check_client_capability(types.ClientCapabilities(roots=types.RootsCapability())):
            return []
        with warnings.catch_warnings():  # roots are deprecated as of 2026-07-28 (SEP-2577), still answered
            warnings.simplefilter("ignore")
            result = anyio.from_thread.run(session.list_roots)
        return [f for f in (root_folder(str(r.uri)) for r in result.roots) if f is not None]

    def scope(self, ctx: Any = None) -> str:
        """``project:<name>`` for this call's client (its first root, else the server's folder)."""
        from ..project import resolve

        try:
            key = id(ctx.session) if ctx is not None else 0
        except ValueError:  # no request: the server's own folder
            ctx, key = None, 0
        with self._lock:
            if key in self._by_session:
                return self._by_session[key]
        folder = self.folder
        if ctx is not None:
            try:
                roots = self._roots(ctx)
            except Exception:  # noqa: BLE001 - a client that fails roots/list still gets its folder's project
                roots = []
            if roots:
                folder = roots[0]
        scope = resolve(folder, self.home).scope
        with self._lock:
            self._by_session[key] = scope
        return scope
