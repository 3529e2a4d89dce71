"""The secret screen: credentials and personal numbers found and redacted before anything is persisted.

* :mod:`~plur.screen.text`: finding and redacting secrets in a text (capture, ingest, imports, the recall log)
* :mod:`~plur.screen.keys`, :mod:`~plur.screen.said`, :mod:`~plur.screen.numbers`: what it finds (keys by shape,
  values given by name or said in words, card and identity numbers)
* :mod:`~plur.screen.pieces`: a key pasted in two pieces over two messages of one conversation
* :mod:`~plur.screen.logs`: the same screen over log lines and the process's stdout/stderr
"""
