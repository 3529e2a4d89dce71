"""The recall log: recall, injection and feedback events in SQLite (``<home>/stats.db``); never touches YAML.

* :mod:`~plur.stats.db`: :class:`~plur.stats.db.StatsDB`
"""
