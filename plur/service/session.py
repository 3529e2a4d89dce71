"""What a CLI command works with: the home's running service when one answers, else an in-process Memory.

``Session.service(what)`` returns a :class:`~plur.service.client.Client` that has connected (or
``None``), and with ``verbose`` says on stderr which way the command goes and why; ``Session.memory``
opens a :class:`plur.memory.Memory` only when a command needs one (``plur learn`` never loads a
model either way).
"""

from __future__ import annotations

import sys
from pathlib import Path
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is ~2 ms of a cold CLI recall

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Settings
    from ..memory import Memory
    from .client import Client


class Session:
    """Per-invocation state of the ``plur`` command.

    Args:
        home: the ``--home`` value (``None``: ``$PLUR_HOME`` or ``~/.plur``).
        verbose: say on stderr whether each command used the service or worked in-process.
    """

    def __init__(self, home: Path | None, verbose: bool = False) -> None:
        self.home = home
        self.verbose = verbose
        self._memory: Memory | None = None
        self._clients: list[Client] = []
        self.json_output = False  # set by the CLI's JSON output: its quarantine warning is then JSON too
        #: set by :meth:`service` with ``start``: a service is starting, answer by keyword (BM25) meanwhile
        self.keyword_only = False
        #: settings :attr:`memory` opens with instead of loading them (``plur doctor`` with an invalid value)
        self.settings: Settings | None = None

    def say(self, message: str) -> None:
        """A ``--verbose`` note on stderr (``plur: <message>``)."""
        if self.verbose:
            print(f"plur: {message}", file=sys.stderr, flush=True)

    def service(self, what: str, *, start: bool = False) -> "Client | None":
        """A connected client of the home's running service, or ``None`` (the command works in-process).

        Args:
            what: the command's name, for the ``--verbose`` note.
            start: when none runs, start one in the background (:mod:`plur.service.autostart`; off
                with ``autostart_service = false``); :attr:`keyword_only` then tells the command to
                answer by BM25 now instead of loading the model in this process.
        """
        from .files import SERVICE_FILE, home_of, no_service

        home = home_of(self.home)
        if start:
            from .autostart import KEYWORD_NOTE, door

            found = door(home)
            if found.client is not None:
                self.say(f"{what}: {found.note}")
                self._clients.append(found.client)
                return found.client
            self.keyword_only = found.keyword_only
            self.say(f"{what}: in-process ({found.note})")
            if self.keyword_only:
                print(f"plur: {KEYWORD_NOTE}", file=sys.stderr, flush=True)
            return None
        if not (home / SERVICE_FILE).exists():  # no service: skip importing the client (http.client, ~20 ms)
            self.say(f"{what}: in-process ({no_service(home)})")
            return None
        from .client import Client, Unreachable

        client, why = Client.discover(home)
        if client is not None:
            try:
                client.request("GET", "/status") if self.verbose else client.connect()
            except Unreachable as exc:
                client, why = None, f"{why}: {exc}"
        if client is None:
            self.say(f"{what}: in-process ({why})")
        else:
            self.say(f"{what}: via the service ({why}, {client.via})")
            self._clients.append(client)
        return client

    def missing_home(self) -> "Path | None":
        """The home's path when it does not exist yet (nothing learned; a read must not create it), else ``None``.

        A home on PostgreSQL (``PLUR_STORE`` set) counts as present: its engrams live in the database.
        """
        import os

        from .files import home_of

        home = home_of(self.home)
        if os.path.lexists(home) or os.environ.get("PLUR_STORE"):
            return None
        above = next((p for p in home.parents if os.path.lexists(p)), None)
        return home if above is not None and above.is_dir() else None  # below a file: the store's own error

    def say_no_home(self, home: "Path") -> None:
        """The one stderr line of a read on a home that does not exist (a mistyped ``--home`` / ``PLUR_HOME``)."""
        print(f"plur: no memory at {home} (the folder does not exist; `plur learn` or `plur init` creates it)",
              file=sys.stderr, flush=True)

    def quarantined(self) -> int:
        """Files the store holds in quarantine, as far as this invocation saw (service answers or its Memory).

        Raises:
            PlurError / OSError: the store could not be read (callers that only warn swallow it).
        """
        said = [c.quarantined for c in self._clients if c.quarantined is not None]
        if said:
            return max(said)
        if self._memory is None:
            return 0
        return self._memory.store.quarantined_count()

    @property
    def memory(self) -> "Memory":
        """The home's :class:`plur.memory.Memory`, opened on first use."""
        if self._memory is None:
            from ..memory import Memory

            self._memory = Memory(self.home) if self.settings is None else Memory(settings=self.settings)
        return self._memory

    def close(self) -> None:
        """Save the store manifest and the indexes if a Memory was opened."""
        if self._memory is not None:
            try:
                self._memory.store.close()  # saves the store manifest if it changed
            finally:
                self._memory.close()


__all__ = ["Session"]
