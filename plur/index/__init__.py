"""The index layer: BM25 and dense indexes over engrams, fusion, and recall's hit shape.

Every index is built from ``(id, text | vector)`` and searched into ranked ``[(id, score)]``.

* :mod:`~plur.index.tokenize`: the one tokenizer; :mod:`~plur.index.lexical`: Okapi BM25
* :mod:`~plur.index.dense`: exact numpy / usearch HNSW inner-product search
* :mod:`~plur.index.fusion`: RRF and weighted min-max fusion (pure)
* :mod:`~plur.index.indexes`: both indexes kept in step with the store by content hash
* :mod:`~plur.index.recall`: :class:`Hit`, fusion of the legs, scope/type/tag filters
"""
