"""plur: long-term memory for LLM agents on the user's own machine.

Engrams are plain YAML files; recall fuses BM25 and dense embeddings; an
off-turn worker fills a cache that a synchronous prompt section reads.
Heavy libraries (torch, sentence-transformers, usearch) load lazily.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is ~2 ms of a cold CLI recall

__version__ = "0.1.0"
__all__ = ["Memory", "Engram", "Hit", "Settings", "load_settings", "PlurError", "__version__"]

from .errors import PlurError

if TYPE_CHECKING:
    from typing import Any

    from .config import Settings, load_settings
    from .index.recall import Hit
    from .memory import Memory
    from .store.engram import Engram

#: Public name -> the module that defines it; imported on first access (PEP 562), so ``import plur``
#: and the CLI's service path (``plur recall`` against a running service) load neither YAML nor TOML.
_LAZY = {"Memory": "memory", "Hit": "index.recall", "Settings": "config", "load_settings": "config",
         "Engram": "store.engram"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'plur' has no attribute {name!r}")
