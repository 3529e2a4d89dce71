"""Format readers: the world's files read into engrams and turns, above the store, which never imports them.

* :mod:`~plur.formats.chats`: conversation histories (ChatGPT, claude.ai, Claude Code, DSH, LoCoMo,
  LongMemEval, plain messages) -> :class:`~plur.formats.chats.turns.Turn` lists; ``plur ingest``
* :mod:`~plur.formats.notes`: notes people bring from elsewhere (claude.ai memory shapes, plain text)
* :mod:`~plur.formats.transfer`: ``plur import``/``plur export`` dispatch and JSONL;
  :mod:`~plur.formats.plur_yaml` (PLUR's engrams.yaml) and :mod:`~plur.formats.claude_dir` (a Claude-style
  memory folder)
* what every reader of a file from outside shares: :mod:`~plur.formats.capped` reads within the setting
  ``max_input_bytes`` (decompressed bytes and the estimated size of what is parsed, counted as it streams in),
  :mod:`~plur.formats.inside` keeps a reader inside the folder it was given (no link out is followed)

A new export format is a module here: nothing under :mod:`plur.store` changes.
"""
