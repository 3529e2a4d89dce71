"""Idle exit for an auto-started service: after ``idle_exit_s`` without a request, stop cleanly.

:class:`IdleWatch` wraps the service's ASGI app (every HTTP request, API or page, counts as
activity) and runs a daemon thread that asks uvicorn to shut down (``server.should_exit``) once
the service has been idle that long, so the normal clean stop runs (indexes saved, files removed).
"""

from __future__ import annotations

import threading
import time
from typing import Any


class IdleWatch:
    """ASGI middleware + watcher thread.

    Args:
        app: the ASGI app to wrap.
        idle_exit_s: seconds without a request before the service stops (> 0).
    """

    def __init__(self, app: Any, idle_exit_s: float) -> None:
        self.app = app
        self.idle_exit_s = float(idle_exit_s)
        self.last = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            self.last = time.monotonic()
        await self.app(scope, receive, send)
        if scope.get("type") == "http":
            self.last = time.monotonic()

    def start(self, server: Any) -> None:
        """Watch ``server`` (a ``uvicorn.Server``): set its ``should_exit`` once idle long enough."""
        def run() -> None:
            while not self._stop.wait(min(1.0, self.idle_exit_s / 4)):
                if time.monotonic() - self.last >= self.idle_exit_s:
                    print(f"plur: no request for {self.idle_exit_s:.0f} s: the auto-started service stops",
                          flush=True)
                    server.should_exit = True
                    return
        self._thread = threading.Thread(target=run, name="plur-idle-exit", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
