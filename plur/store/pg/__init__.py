"""The PostgreSQL store: engrams, their change feed and their embeddings in one database (setting ``store``).

:mod:`.connect` (connections, errors, redacted URIs), :mod:`.schema` (tables, created on first use),
:mod:`.rows` (an engram as a row and back, lossless), :mod:`.feed` (LISTEN/NOTIFY listener),
:mod:`.store` (:class:`PgStore`, the folder store's interface), :mod:`.vectors` (the embedding table).
psycopg is imported lazily: ``import plur`` never loads it.
"""
