"""Shared immutable values for fields most engrams leave empty (one object, not one per engram).

An empty ``dict`` is 64 bytes; 100k engrams without unknown YAML keys held 6 MiB of them
(``bench/speed/memory.py``). They share :data:`NO_EXTRA` instead, which no engram can change
(a shared mutable default would leak one engram's edit into every other).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NoReturn


class _EmptyMapping(Mapping[str, Any]):
    """An empty, immutable mapping; equal to ``{}``; pickles and copies as the one :data:`NO_EXTRA`."""

    __slots__ = ()

    def __getitem__(self, key: str) -> NoReturn:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"

    def __reduce__(self) -> str:
        return "NO_EXTRA"  # pickle and copy find the module's singleton by name


#: ``Engram.extra`` of every engram without unknown keys.
NO_EXTRA: Mapping[str, Any] = _EmptyMapping()
