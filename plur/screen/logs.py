"""The secret screen on what plur's processes log: no key a user typed reaches a log file.

Error and log messages may quote what a user gave (a query, a captured turn, a hook's input, an
MCP tool's arguments, a bad value named in a ValidationError), and some of those lines are kept:
the service's stdout and stderr are ``<home>/service.log``; ``plur mcp``'s stderr is kept by MCP
clients (Claude Code writes it to its own log files); a hook's stderr is shown and may be kept by the
host. Rather than trust every message not to quote user text, each of those streams is screened where
it leaves the process (:func:`plur.screen.text.redact`, line by line): the service's standard streams
(:func:`screen_stdio`, so tracebacks and third-party loggers such as uvicorn's are covered too),
``plur mcp``'s one-line log handler and the CLI's warning and error lines (:func:`redact_line`).
"""

from __future__ import annotations

import io
import sys
import threading
from typing import TextIO

from .text import redact

__all__ = ["ScreenedStream", "redact_line", "screen_stdio"]


def redact_line(text: str) -> str:
    """``text`` with every secret replaced by ``[redacted <kind>]`` (what a log line may hold)."""
    return redact(text)


class ScreenedStream(io.TextIOBase):
    """A text stream that writes whole lines to ``inner``, each through the secret screen.

    A partial line is held until its newline (a key split over two ``write`` calls is still one word),
    or until :meth:`flush` / :meth:`close`, or until it reaches 64 KiB.
    """

    LIMIT = 64 * 1024

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner
        self._held = ""
        self._lock = threading.Lock()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.inner.fileno()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def write(self, s: str) -> int:
        with self._lock:
            text = self._held + s
            cut = text.rfind("\n") + 1
            if cut == 0 and len(text) >= self.LIMIT:
                cut = len(text)
            self._held = text[cut:]
            if cut:
                self.inner.write(redact(text[:cut]))
                self.inner.flush()
        return len(s)

    def flush(self) -> None:
        with self._lock:
            if self._held:
                self.inner.write(redact(self._held))
                self._held = ""
            self.inner.flush()


def screen_stdio() -> None:
    """Put :class:`ScreenedStream` in front of ``sys.stdout`` and ``sys.stderr`` (idempotent): what the
    service does first, since both are its ``service.log``."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ScreenedStream):
            setattr(sys, name, ScreenedStream(stream))
