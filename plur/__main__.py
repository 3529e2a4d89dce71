"""The ``plur`` console script (``plur.__main__:main``) and ``python -m plur``: ``plur hook ...`` first, then the CLI.

A hook command runs once per prompt, so it is dispatched here before :mod:`plur.cli` (click and
every command) is imported; anything else (``plur hook claude-code --help`` and ``--print-config`` included)
goes to :func:`plur.cli.main`.
"""

from __future__ import annotations

import sys

#: ``plur hook <host>`` -> the module whose ``main(argv)`` serves it.
HOOKS = {"claude-code": "plur.hooks.claude_code"}
#: Arguments the click command answers instead (help, the config to paste): no hook run.
CLICK_ONLY = {"-h", "--help", "--print-config", "--install", "--with-stop"}


def main() -> int:
    """Run ``plur`` with ``sys.argv``; returns the exit code."""
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "hook" and argv[1] in HOOKS and not CLICK_ONLY.intersection(
            a.split("=", 1)[0] for a in argv[2:]):
        import importlib

        return int(importlib.import_module(HOOKS[argv[1]]).main(argv[2:]))
    from .cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
