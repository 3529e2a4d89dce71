"""Retrieval quality from the engine's rows: the metrics, the memory block, splits, the report, and choosing
the relevance floor."""
