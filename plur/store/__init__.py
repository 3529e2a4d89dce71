"""The store layer: engrams as YAML files under ``<home>/engrams``. Knows nothing of indexes or models.

* :mod:`~plur.store.engram`: the :class:`Engram` dataclass (validation, YAML, id, content hash; no I/O)
* :mod:`~plur.store.store`: :class:`EngramStore` (locked, atomic writes; change tracking)
* :mod:`~plur.store.mirror`: the in-memory mirror of the folder (scan, parse, quarantine, catch up)
* :mod:`~plur.store.atomic`, :mod:`~plur.store.lock`, :mod:`~plur.store.manifest`,
  :mod:`~plur.store.quarantine`: its helpers, one job each
* :mod:`~plur.store.pg`: the PostgreSQL store behind the same interface (setting ``store``)

Reading other formats (chat exports, notes, JSONL, PLUR's engrams.yaml) is :mod:`plur.formats`, above this
layer: storage never imports it.
"""
