"""The :class:`Memory` facade: the one public entry point that wires store, indexes and stats.

    >>> from plur import Memory
    >>> with Memory("/tmp/plur-demo") as mem:                      # doctest: +SKIP
    ...     mem.learn("The user's dog is called Rex.", scope="global")
    ...     [h.engram.statement for h in mem.recall("what is my dog's name?", k=3)]

Writes go to the store at once (atomic YAML files). Indexes are opened lazily on
the first recall, so ``plur learn`` never loads an embedding model; they catch up
from the store by content hash, so engrams written by other processes or edited
by hand are indexed at the next recall (see :mod:`plur.index.indexes`).

The class (:mod:`plur.memory.facade`) holds wiring and names; its methods (defined on it or on the
mixins of ``_api_*.py`` it inherits) delegate in one line to the module of this package that does the
work (writes, ingest, capture, imports, forget, reads, recall, legs, filters, freshness, indexing,
models, doctor, lifecycle).
"""

from .facade import Memory

__all__ = ["Memory"]
