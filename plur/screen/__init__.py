"""The secret screen: credentials found and redacted before anything is persisted.

* :mod:`~plur.screen.text`: finding and redacting secrets in a text (capture, ingest, imports, the recall log)
* :mod:`~plur.screen.logs`: the same screen over log lines and the process's stdout/stderr
"""
