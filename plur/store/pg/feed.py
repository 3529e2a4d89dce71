"""Hear other machines' writes at once: a LISTEN connection on a daemon thread bumps a change token.

The token tells :class:`plur.store.pg.store.PgStore` (and so ``Memory``) that the change feed may hold
something new; the feed itself (table ``plur_changes`` read from a cursor) is what is applied, so a
notification lost while the connection was down costs nothing: reconnecting bumps the token too, and the
next refresh reads everything since the cursor.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .schema import CHANNEL

log = logging.getLogger("plur.store.pg")

#: Longest wait between reconnection attempts while the database is down, seconds.
MAX_BACKOFF_S = 5.0
#: How often the listening thread checks whether it should stop, seconds.
POLL_S = 0.5


class ChangeListener:
    """``LISTEN plur_changes`` on its own connection, on a daemon thread, reconnecting when the server goes away.

    Args:
        uri: the database URI.

    Attributes:
        token: an int bumped on every notification and every (re)connection.
        connected: True while the LISTEN connection is up (False: callers must poll the feed).
    """

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.token = 0
        self.connected = False
        self.heard = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="plur-pg-listen", daemon=True)
        self._thread.start()

    def _bump(self) -> None:
        with self.heard:
            self.token += 1
            self.heard.notify_all()

    def _run(self) -> None:
        from .connect import close_quietly, connect

        backoff = 0.2
        while not self._stop.is_set():
            conn: Any = None
            try:
                conn = connect(self.uri)
                conn.execute(f"LISTEN {CHANNEL}")
                self.connected = True
                backoff = 0.2
                self._bump()  # whatever happened while we were not listening is in the feed: catch up
                while not self._stop.is_set():
                    for _ in conn.notifies(timeout=POLL_S):
                        self._bump()
                        if self._stop.is_set():
                            break
            except Exception as exc:  # noqa: BLE001 - the server went away: poll until it is back
                if self.connected and not self._stop.is_set():
                    log.warning("lost the change feed of the engram database (%s); reconnecting",
                                " ".join(str(exc).split())[:160])
            finally:
                self.connected = False
                self._bump()
                close_quietly(conn)
            self._stop.wait(backoff)
            backoff = min(MAX_BACKOFF_S, backoff * 2)

    def wait_change(self, since: int, timeout_s: float) -> int:
        """Block until :attr:`token` differs from ``since`` or ``timeout_s`` passes; returns the token."""
        with self.heard:
            self.heard.wait_for(lambda: self.token != since, timeout=timeout_s)
            return self.token

    def close(self, wait_s: float = 0.0) -> None:
        """Tell the thread to stop; it exits within :data:`POLL_S` seconds (a daemon: never blocks the process's
        exit, so a one-shot command does not wait for it). ``wait_s``: how long to wait for it here."""
        self._stop.set()
        if wait_s > 0:
            self._thread.join(timeout=wait_s)
