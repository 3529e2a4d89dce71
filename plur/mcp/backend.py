"""The seam between the MCP tools and memory: :class:`Backend`, and :class:`LocalBackend` over a Memory.

Every tool of :mod:`plur.mcp.server` calls exactly these methods, which take and return plain
JSON-safe values (the shapes of the local service API v1, so a service client maps 1:1). Today's
backend, :class:`LocalBackend`, holds a :class:`~plur.memory.Memory` in the MCP process: BM25 opens in
milliseconds, the embedding model loads on the first dense recall. To make a server started per
client cheap, plug in a backend that forwards each call to a running plur service (``plur service
start``) instead; nothing above this module changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..memory import Memory
from ..prompt.selection import recall_block


class Backend(Protocol):
    """What the MCP tools need from memory. Errors are :class:`~plur.errors.PlurError` subclasses."""

    def status(self) -> dict[str, Any]: ...

    def quarantined(self) -> int: ...

    def recall(self, query: str, k: int, *, scope: str | None, types: Sequence[str] | None,
               tags: Sequence[str] | None, mode: str, agent: str | None) -> list[dict[str, Any]]: ...

    def block(self, query: str, *, scope: str | None, agent: str | None) -> dict[str, Any]: ...

    def get(self, engram_id: str) -> dict[str, Any]: ...

    def list(self, *, scope: str | None, type: str | None, tag: str | None, text: str | None,
             limit: int) -> list[dict[str, Any]]: ...

    def learn(self, statement: str, *, type: str, scope: str, tags: Sequence[str], pinned: bool,
              about: str | None = None) -> dict[str, Any]: ...

    def update(self, engram_id: str, **changes: Any) -> dict[str, Any]: ...

    def forget(self, engram_id: str) -> dict[str, Any]: ...

    def feedback(self, engram_id: str, useful: bool, *, agent: str | None, query: str | None) -> dict[str, Any]: ...

    def close(self) -> None: ...


class LocalBackend:
    """:class:`Backend` served by an in-process :class:`~plur.memory.Memory` (thread-safe; tools run in threads).

    Args:
        memory: the memory to serve; closed by :meth:`close`.
    """

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def status(self) -> dict[str, Any]:
        """``{"home", "engrams", "by_scope", "model"}``; the model is reported as requested (not loaded)."""
        report = self.memory.doctor(load_model=False)
        return {"home": report["home"], "engrams": report["engrams"]["total"],
                "by_scope": report["engrams"]["by_scope"], "model": report["model"],
                "quarantined": len(report["quarantined"])}

    def quarantined(self) -> int:
        """Store files that could not be loaded (``plur doctor`` lists them)."""
        return self.memory.store.quarantined_count()

    def recall(self, query: str, k: int, *, scope: str | None, types: Sequence[str] | None,
               tags: Sequence[str] | None, mode: str, agent: str | None) -> list[dict[str, Any]]:
        """Hits as ``{"rank", "score", "bm25_rank", "dense_rank", "below_floor", "earlier_than", "engram": {...}}``,
        best first (``below_floor``: why the relevance floor keeps the hit out of the memory block, '' when it clears
        it; ``earlier_than``: a newer hit that states this fact later, :mod:`plur.index.updates`)."""
        hits = self.memory.recall(query, k, scope=scope, types=types, tags=tags, mode=mode, agent=agent)
        return [{"rank": h.rank, "score": round(h.score, 6), "bm25_rank": h.bm25_rank, "dense_rank": h.dense_rank,
                 "below_floor": h.below_floor, "earlier_than": h.earlier_than, "engram": h.engram.to_dict()}
                for h in hits]

    def block(self, query: str, *, scope: str | None, agent: str | None, mode: str = "hybrid") -> dict[str, Any]:
        """The memory block for ``query`` now (the recall worker's selection: pinned first, then the hits
        above the relevance floor; :func:`plur.prompt.selection.recall_block`)."""
        block = recall_block(self.memory, query, scope=scope, agent=agent, mode=mode)
        return {"text": block.text, "hash": block.hash, "engram_ids": list(block.engram_ids), "tokens": block.tokens}

    def get(self, engram_id: str) -> dict[str, Any]:
        return self.memory.get(engram_id).to_dict()

    def list(self, *, scope: str | None, type: str | None, tag: str | None, text: str | None,
             limit: int) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self.memory.list(scope=scope, type=type, tag=tag, text=text)[:limit]]

    def learn(self, statement: str, *, type: str, scope: str, tags: Sequence[str], pinned: bool,
              about: str | None = None) -> dict[str, Any]:
        """``about="auto"``: a note about the user goes to global (:func:`plur.memory.turns.personal.route`)."""
        from ..memory.turns.personal import route

        scope = route(scope, about, statement, enabled=self.memory.settings.route_personal)
        engram, created = self.memory.learn_outcome(statement, type=type, scope=scope, tags=tags, pinned=pinned)
        return {"engram": engram.to_dict(), "created": created}

    def update(self, engram_id: str, **changes: Any) -> dict[str, Any]:
        return self.memory.update(engram_id, **changes).to_dict()

    def forget(self, engram_id: str) -> dict[str, Any]:
        return {"forgotten": self.memory.forget(engram_id).id}

    def feedback(self, engram_id: str, useful: bool, *, agent: str | None, query: str | None) -> dict[str, Any]:
        counts = self.memory.feedback(engram_id, useful, agent=agent, query=query)
        return {"id": engram_id, **counts}

    def close(self) -> None:
        self.memory.close()
