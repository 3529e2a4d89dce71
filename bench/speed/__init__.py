"""Speed of the engine's parts in process: store, lexical and dense indexes, embedding, recall, ingest, forget,
PostgreSQL."""
