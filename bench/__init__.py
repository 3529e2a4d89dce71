"""Benchmarks for plur.

Retrieval quality (``python -m bench``): LongMemEval-S and LoCoMo scored through
``Memory.recall`` exactly as the datasets' authors score retrieval
(:mod:`bench.longmemeval`, :mod:`bench.locomo`, :mod:`bench.metrics`,
:mod:`bench.runner`, :mod:`bench.report`). Performance benchmarks live in
``bench/bench_*.py``.
"""
