"""Benchmarks for plur, one folder per part of the harness.

Retrieval quality (``python -m bench``, :mod:`bench.cli`): LongMemEval-S and LoCoMo scored through
``Memory.recall`` exactly as the datasets' authors score retrieval. :mod:`bench.datasets` loads them
(:mod:`bench.datasets.longmemeval`, :mod:`bench.datasets.locomo`), :mod:`bench.engine` runs the tasks
through plur (:mod:`bench.engine.runner`, Ray, PostgreSQL schemas, capture mode), :mod:`bench.quality`
scores and reports them (:mod:`bench.quality.metrics`, :mod:`bench.quality.report`, the relevance floor).
Performance: :mod:`bench.speed` times the engine's parts in process (store, indexes, embedding, recall,
ingest, forget, PostgreSQL), :mod:`bench.doors` what a host or a user waits for at each door (prompt
section, service, web page, MCP and hooks, first block, linked folders, capture); :mod:`bench.peers`
compares plur with other tools. Each is run as ``python -m bench.<folder>.<module>``.
"""
