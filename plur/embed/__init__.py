"""The embedding layer: pinned models, the sentence-transformers backend, the embedding cache.

* :mod:`~plur.embed.models_lock`: ``models.lock`` (pinned revisions); :mod:`~plur.embed.model_files`: sha256
  verification, HF cache, download
* :mod:`~plur.embed.embedder`: the :class:`Embedder` protocol and the sentence-transformers backend
* :mod:`~plur.embed.resolve`: which model to load (:func:`resolve_embedder`), with loud fallbacks
* :mod:`~plur.embed.cache`: SQLite cache keyed by (model identity, text sha256)

torch and sentence-transformers load on first use, never on import.
"""
