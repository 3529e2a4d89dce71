"""plur: long-term memory for LLM agents on the user's own machine.

Engrams are plain YAML files; recall fuses BM25 and dense embeddings; an
off-turn worker fills a cache that a synchronous prompt section reads.
Heavy libraries (torch, sentence-transformers, hnswlib) load lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Memory", "Engram", "Hit", "Settings", "load_settings", "PlurError", "__version__"]

from .config import Settings, load_settings
from .store.engram import Engram
from .errors import PlurError

if TYPE_CHECKING:
    from .memory import Memory
    from .index.recall import Hit


def __getattr__(name: str) -> Any:
    if name == "Memory":
        from .memory import Memory

        return Memory
    if name == "Hit":
        from .index.recall import Hit

        return Hit
    raise AttributeError(f"module 'plur' has no attribute {name!r}")
