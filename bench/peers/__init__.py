"""plur against other tools on the same data (txtai's ingest)."""
