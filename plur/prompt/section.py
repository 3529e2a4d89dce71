"""The prompt section a host registers: :class:`MemorySection`, synchronous and cheap.

Its :meth:`~MemorySection.text` only reads the :class:`~plur.prompt.worker.RecallWorker`'s
per-agent cache: it never recalls, never touches disk and never takes a lock the worker holds.
The block it returns is rendered by :mod:`plur.prompt.block`; because the host re-renders the
section on every request, the block replaces the previous one instead of piling up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .worker import RecallWorker


# -- the prompt section -------------------------------------------------------------------------

def agent_id_of(assembly: Any) -> str | None:
    """The agent id an assembly is for, or ``None`` when it has no agent.

    Accepts, in this order: ``None``; a plain id (``str``, or ``int``); a mapping with
    ``"agent_id"`` or ``"agent"`` (itself an id, a mapping with ``"id"`` or an object with ``.id``);
    an object with ``.agent`` (an object with ``.id`` or a mapping with ``"id"``) or ``.agent_id``.
    Empty ids count as no agent. Never raises.
    """
    try:
        if assembly is None:
            return None
        if isinstance(assembly, (str, int)) and not isinstance(assembly, bool):
            agent: Any = assembly
        elif isinstance(assembly, Mapping):
            agent = assembly.get("agent_id")
            if agent is None:
                agent = _id_of(assembly.get("agent"))
        else:
            agent = _id_of(getattr(assembly, "agent", None))
            if agent is None:
                agent = getattr(assembly, "agent_id", None)
        if isinstance(agent, bool) or not isinstance(agent, (str, int)):
            return None
        agent = str(agent)
        return agent or None
    except Exception:  # noqa: BLE001 - a host's odd object must never break prompt assembly
        return None


def _id_of(agent: Any) -> Any:
    if agent is None:
        return None
    if isinstance(agent, (str, int)):
        return agent
    if isinstance(agent, Mapping):
        return agent.get("id")
    return getattr(agent, "id", None)


class MemorySection:
    """A prompt section whose text is the agent's memory block, read from a :class:`RecallWorker`'s cache.

    Register one section per host (not one per agent): the text depends on the assembly's agent.

    Args:
        worker: the :class:`~plur.prompt.worker.RecallWorker` that fills the cache.
        name: the section's name in the host's registry.
        order: position among the host's sections (lower first).

    Attributes:
        name: as given. order: as given. worker: as given.
    """

    def __init__(self, worker: "RecallWorker", name: str = "plur:memory", order: int = 50) -> None:
        self.worker = worker
        self.name = name
        self.order = order

    def text(self, assembly: Any = None) -> str:
        """The memory block for the assembly's agent, '' when it has no agent or no block yet.

        Synchronous and cheap (p50 0.24 us, p99 < 1.2 us while the worker recalls; ``bench/doors/section.py``): a lock-free read
        of the worker's cache. It never recalls, never touches disk, never waits for the worker,
        and never returns another agent's block. The first read of each new block queues one
        injection event, which the worker thread writes to stats.db.

        Args:
            assembly: anything :func:`agent_id_of` accepts.
        """
        agent = agent_id_of(assembly)
        if agent is None:
            return ""
        return self.worker.read(agent)

    __call__ = text

    def __repr__(self) -> str:
        return f"MemorySection(name={self.name!r}, order={self.order})"
