"""``plur mcp``'s stderr: one line per warning, no tracebacks.

An MCP client (DSH, Claude Code, the Inspector) shows the server's stderr to its user, so the
``mcp`` package's Rich handler (boxed, wrapped tracebacks for every refused request) is replaced by
a plain handler whose lines read ``plur mcp: WARNING <message>[: <Error>: <its message>]``. Expected
refusals (an absent engram, a scope outside the pin) are answered to the client as errors and
not logged at all (:mod:`plur.mcp.server`).
"""

from __future__ import annotations

import logging
import sys


class OneLine(logging.Formatter):
    """``plur mcp: LEVEL message``; an exception adds its innermost cause's type and message, never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"plur mcp: {record.levelname} {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc: BaseException = record.exc_info[1]
            while exc.__cause__ is not None:
                exc = exc.__cause__
            text += f": {type(exc).__name__}: {exc}"
        from ..screen.logs import redact_line

        return redact_line(" ".join(text.split()))  # an MCP client keeps this stderr in its own log files


def quiet_logging(level: int = logging.WARNING) -> None:
    """Send log records to stderr as one line each (before ``MCPServer`` would install Rich's handler).

    Does nothing when the root logger already has handlers (an embedding application chose its own).
    """
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLine())
    root.addHandler(handler)
    root.setLevel(level)
