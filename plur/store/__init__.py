"""The store layer: engrams as YAML files under ``<home>/engrams``. Knows nothing of indexes or models.

* :mod:`~plur.store.engram`: the :class:`Engram` dataclass (validation, YAML, id, content hash; no I/O)
* :mod:`~plur.store.store`: :class:`EngramStore` (locked, atomic writes; change tracking)
* :mod:`~plur.store.atomic`, :mod:`~plur.store.lock`, :mod:`~plur.store.manifest`,
  :mod:`~plur.store.quarantine`: its helpers, one job each
* :mod:`~plur.store.transfer`: import/export formats (JSONL, PLUR's engrams.yaml, a Claude-style folder)
"""
