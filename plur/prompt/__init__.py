"""The prompt layer: the memory block, the synchronous section, the off-turn recall worker.

* :mod:`~plur.prompt.block`: render hits into one fenced block within a token budget (pure)
* :mod:`~plur.prompt.worker`: :class:`RecallWorker`, recall off the turn path into a per-agent cache
* :mod:`~plur.prompt.section`: :class:`MemorySection`, whose ``text(assembly)`` reads that cache

``from plur.prompt import MemorySection, RecallWorker`` works (loaded lazily).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["MemorySection", "RecallWorker"]

if TYPE_CHECKING:  # pragma: no cover
    from .section import MemorySection
    from .worker import RecallWorker


def __getattr__(name: str) -> Any:
    if name == "MemorySection":
        from .section import MemorySection

        return MemorySection
    if name == "RecallWorker":
        from .worker import RecallWorker

        return RecallWorker
    raise AttributeError(f"module 'plur.prompt' has no attribute {name!r}")
