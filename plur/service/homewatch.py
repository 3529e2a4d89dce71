"""Stop the service when its home is deleted (issue 38).

A service whose home was removed (``rm -rf ~/.plur``, a test's temporary home) kept answering for hours
and wrote the home again on its way (``cache/``, ``index/``, ``stats.db`` reappeared). :class:`HomeWatch`
notices on each request (one ``stat``) and, between requests, on a daemon thread every
:data:`PERIOD_S` seconds; either way it asks uvicorn to stop (``server.should_exit``), and a request that
finds the home gone gets ``503`` saying why. :func:`plur.memory.lifecycle.close` then saves nothing into a
home that is no longer there.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

#: Seconds between two checks while no request comes.
PERIOD_S = 0.5


class HomeWatch:
    """ASGI middleware + watcher thread: the service stops once ``home`` is gone or replaced.

    Args:
        app: the ASGI app to wrap.
        home: the service's home folder (its device and inode at start are remembered).
    """

    def __init__(self, app: Any, home: Path) -> None:
        self.app = app
        self.home = Path(home)
        st = os.stat(self.home)
        self._identity = (st.st_dev, st.st_ino)
        self._server: Any = None
        self._gone = threading.Event()
        self._stop = threading.Event()

    def home_gone(self) -> bool:
        """True (and the server asked to stop, once) when the home folder no longer is the one served."""
        if self._gone.is_set():
            return True
        try:
            st = os.stat(self.home)
            same = (st.st_dev, st.st_ino) == self._identity
        except OSError:
            same = False
        if same:
            return False
        self._gone.set()
        print(f"plur: the home {self.home} was deleted or replaced; the service stops (nothing is written there)",
              file=sys.stderr, flush=True)
        if self._server is not None:
            self._server.should_exit = True
        return True

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and self.home_gone():
            body = json.dumps({"error": {"type": "ServiceError", "message":
                                         f"the home {self.home} was deleted; this service is stopping"}}).encode()
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def start(self, server: Any) -> None:
        """Watch ``server`` (a ``uvicorn.Server``) between requests too."""
        self._server = server

        def run() -> None:
            while not self._stop.wait(PERIOD_S):
                if self.home_gone():
                    return
        threading.Thread(target=run, name="plur-home-watch", daemon=True).start()

    @property
    def gone(self) -> bool:
        """Whether the home was found gone."""
        return self._gone.is_set()

    def stop(self) -> None:
        self._stop.set()
