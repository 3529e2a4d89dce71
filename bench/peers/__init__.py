"""plur against other tools on the same data: txtai and MemPalace, ingest and recall (:mod:`bench.peers.compare`)."""
