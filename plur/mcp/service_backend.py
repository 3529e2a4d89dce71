"""The MCP server's backend in ``plur mcp``: the home's running service, started on first need.

:class:`ServiceBackend` forwards every tool call to the service (:mod:`plur.service.client`), so
the ``plur mcp`` process a client starts holds no model and never imports torch. When no service
runs it starts one in the background (:mod:`plur.service.autostart`) and answers meanwhile from
an in-process :class:`~plur.mcp.backend.LocalBackend` by keyword (BM25) only, with a note saying
so; once the service answers, the in-process memory is closed and every call goes to the service.
If the service stops later, the next call falls back the same way and starts it again.

With auto-start off (``autostart_service = false``) and no service, it serves in-process with
the full hybrid recall (the model then loads in this process, as before).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ServiceError
from ..service.autostart import KEYWORD_NOTE, door

if TYPE_CHECKING:  # pragma: no cover
    from ..service.client import Client
    from .backend import LocalBackend


class ServiceBackend:
    """:class:`~plur.mcp.backend.Backend` over the home's service, with an in-process fallback.

    Args:
        home: the plur home (``None``: ``$PLUR_HOME`` or ``~/.plur``).
        agent_id: the agent id the service records for blocks (``mcp``).

    Calls are serialised (one HTTP connection; MCP tools run in worker threads).
    """

    def __init__(self, home: str | Path | None, *, agent_id: str = "mcp") -> None:
        self.home = home
        self.agent_id = agent_id
        self._lock = threading.RLock()
        self._client: Client | None = None
        self._local: LocalBackend | None = None
        self._keyword = False
        self._note: str | None = None
        self.via = "none yet"

    # -- routing --------------------------------------------------------------------------
    def _route(self) -> "Client | None":
        """The service client for this call, or ``None`` (serve in-process; ``_keyword`` says how)."""
        if self._client is not None:
            return self._client
        found = door(self.home)
        self.via = found.note
        if found.client is not None:
            self._client = found.client
            self._keyword, self._note = False, None
            if self._local is not None:  # the service answers now: free the in-process memory
                self._local.close()
                self._local = None
            return self._client
        self._keyword = found.keyword_only
        self._note = KEYWORD_NOTE if self._keyword else None
        return None

    def _memory(self) -> "LocalBackend":
        if self._local is None:
            from ..memory import Memory
            from .backend import LocalBackend

            self._local = LocalBackend(Memory(self.home))
        return self._local

    def _call(self, remote: Any, local: Any) -> Any:
        """Run ``remote(client)`` on the service, else ``local(LocalBackend)``; a lost service falls back."""
        from ..service.client import Unreachable

        with self._lock:
            client = self._route()
            if client is not None:
                try:
                    return remote(client)
                except (Unreachable, ServiceError):  # the service went away: serve this call in-process
                    client.close()
                    self._client = None
                    self._route()
            return local(self._memory())

    def missing_home(self) -> Path | None:
        """The home's path while it does not exist (nothing learned there yet), else ``None``.

        A read must not create it (MCP clients start ``plur mcp`` with a minimal environment, so a dropped
        ``PLUR_HOME`` made reads create and serve an empty ``~/.plur``); a home on PostgreSQL counts as present.
        """
        import os

        from ..service.files import home_of

        home = home_of(self.home)
        if os.path.lexists(home) or os.environ.get("PLUR_STORE"):
            return None
        return home

    def _absent(self, empty: Any) -> Any:
        """``empty`` with a note naming the missing home, when there is none; else ``None``."""
        home = self.missing_home()
        if home is None:
            return None
        self._note = (f"no plur memory at {home} (the folder does not exist; the first learn creates it). If "
                      "your memory lives elsewhere, set PLUR_HOME in this MCP client's env for plur mcp")
        return empty

    def note(self) -> str | None:
        """A note for the last answer (keyword-only recall while the service starts), or ``None``."""
        return self._note

    # -- Backend ----------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        from ..service.files import home_of

        absent = self._absent({"home": str(home_of(self.home)), "engrams": 0, "by_scope": {}, "model": None,
                               "quarantined": 0, "service": None})
        if absent is not None:
            return {**absent, "note": self._note}

        def remote(c: "Client") -> dict[str, Any]:
            st = c.status()
            return {"home": st.get("home"), "engrams": st.get("engrams"), "by_scope": st.get("by_scope", {}),
                    "model": st.get("model"), "quarantined": st.get("quarantined", 0),
                    "service": {"pid": st.get("pid"), "url": st.get("url")}}

        def local(b: "LocalBackend") -> dict[str, Any]:
            out = b.status()
            out["service"] = None
            if self._note:
                out["note"] = self._note
            return out
        return self._call(remote, local)

    def quarantined(self) -> int:
        with self._lock:
            if self._client is not None:
                return self._client.quarantined or 0
            return self._local.quarantined() if self._local is not None else 0

    def recall(self, query: str, k: int, *, scope: str | None, types: Sequence[str] | None,
               tags: Sequence[str] | None, mode: str, agent: str | None) -> list[dict[str, Any]]:
        if self._absent([]) is not None:
            return []

        def remote(c: "Client") -> list[dict[str, Any]]:
            hits = c.recall(query, k, scope=scope, mode=mode, types=list(types) if types else None,
                            tags=list(tags) if tags else None, agent=agent)["hits"]
            return [{"rank": h["rank"], "score": round(h["score"], 6), "bm25_rank": h.get("bm25_rank"),
                     "dense_rank": h.get("dense_rank"), "below_floor": h.get("below_floor", ""),
                     "earlier_than": h.get("earlier_than", ""), "engram": h["engram"]} for h in hits]
        return self._call(remote, lambda b: b.recall(query, k, scope=scope, types=types, tags=tags,
                                                      mode="bm25" if self._keyword else mode, agent=agent))

    def block(self, query: str, *, scope: str | None, agent: str | None) -> dict[str, Any]:
        absent = self._absent({"text": "", "hash": "", "engram_ids": [], "tokens": 0})
        if absent is not None:
            return absent
        return self._call(lambda c: c.block(agent or self.agent_id, query, scope),
                          lambda b: b.block(query, scope=scope, agent=agent,
                                            mode="bm25" if self._keyword else "hybrid"))

    def get(self, engram_id: str) -> dict[str, Any]:
        self._no_such_engram(engram_id)
        return self._call(lambda c: c.engram(engram_id)["engram"], lambda b: b.get(engram_id))

    def list(self, *, scope: str | None, type: str | None, tag: str | None, text: str | None,
             limit: int) -> list[dict[str, Any]]:
        if self._absent([]) is not None:
            return []
        return self._call(lambda c: c.list_engrams(scope=scope, type=type, tag=tag, text=text, limit=limit)["engrams"],
                          lambda b: b.list(scope=scope, type=type, tag=tag, text=text, limit=limit))

    def learn(self, statement: str, *, type: str, scope: str, tags: Sequence[str], pinned: bool,
              about: str | None = None) -> dict[str, Any]:
        def remote(c: "Client") -> dict[str, Any]:
            extra = {"about": about} if about is not None else {}
            out = c.learn(statement, type=type, scope=scope, tags=list(tags), pinned=pinned, **extra)
            return {"engram": out["engram"], "created": out["created"]}
        return self._call(remote, lambda b: b.learn(statement, type=type, scope=scope, tags=tags, pinned=pinned,
                                                    about=about))

    def update(self, engram_id: str, **changes: Any) -> dict[str, Any]:
        self._no_such_engram(engram_id)
        return self._call(lambda c: c.update(engram_id, **changes)["engram"], lambda b: b.update(engram_id, **changes))

    def forget(self, engram_id: str) -> dict[str, Any]:
        self._no_such_engram(engram_id)
        return self._call(lambda c: {"forgotten": c.forget(engram_id)["forgotten"]}, lambda b: b.forget(engram_id))

    def feedback(self, engram_id: str, useful: bool, *, agent: str | None, query: str | None) -> dict[str, Any]:
        self._no_such_engram(engram_id)
        return self._call(lambda c: c.feedback(engram_id, useful, agent_id=agent, query=query),
                          lambda b: b.feedback(engram_id, useful, agent=agent, query=query))

    def _no_such_engram(self, engram_id: str) -> None:
        """Refuse a call about one engram, without creating the home, when there is no home."""
        home = self.missing_home()
        if home is not None:
            from ..errors import NotFoundError
            from ..store.engram import validate_id

            validate_id(engram_id)   # a malformed id is told so first, home or not

            raise NotFoundError(f"no engram {engram_id!r}: there is no plur memory at {home} (set PLUR_HOME in "
                                "this MCP client's env if your memory lives elsewhere)")

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
            if self._local is not None:
                try:
                    self._local.memory.store.close()  # saves the store manifest if it changed
                finally:
                    self._local.close()
                self._local = None
