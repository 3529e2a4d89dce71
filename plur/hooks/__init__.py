"""Hook commands for hosts that add memory to each prompt themselves (``plur hook <host>``).

* :mod:`plur.hooks.claude_code`: Claude Code's ``UserPromptSubmit`` / ``SessionStart`` command hooks.
* :mod:`plur.hooks.transcript`: the notes a (forked) conversation's history already shows.

A hook runs once per prompt as a new process, so its path to a running service imports almost
nothing (:mod:`plur.__main__` dispatches to it before the CLI is imported).
"""
