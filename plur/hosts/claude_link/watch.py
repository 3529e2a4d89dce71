"""The service's thread that keeps every linked memory folder in step (:class:`LinkWatcher`).

It syncs each link of ``<home>/links.json`` (:func:`.sync.reconcile`) once a second, and at once when a
file in a linked folder changes: watchdog (inotify, FSEvents...) wakes it where installed; without it
the once-a-second pass alone sees files by their text. ``links.json`` is re-read every pass, so
``plur link`` takes effect in a running service. It keeps what each pass saw of each link's files
(:class:`~.reading.Looks`), so a file is read only once it has held still between passes.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .reading import SETTLE_S, Looks
from .records import load_links
from .sync import reconcile


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class LinkWatcher:
    """A daemon thread syncing ``memory``'s links.

    Args:
        memory: the service's :class:`~plur.memory.Memory`.
        period_s: seconds between passes when no file event wakes it.
        settle_s: seconds a file must hold still (size, mtime, inode) before it is read (:class:`~.reading.Looks`).
        clock: the wall clock those seconds are read on (the clock of mtimes).
    """

    def __init__(self, memory: Any, period_s: float = 1.0, settle_s: float = SETTLE_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._memory = memory
        self._home = Path(memory.home)
        self._period_s = period_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._observer: Any = None
        self._watched: set[str] = set()
        self._failing: dict[str, str] = {}
        self._settle_s, self._clock = settle_s, clock
        self._looks: dict[str, Looks] = {}  # link key -> what the passes saw of its files
        self._passes = 0
        self._passed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="plur-link-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                links = load_links(self._home) if (self._home / "links.json").exists() else []
            except Exception as exc:  # noqa: BLE001 - a broken links.json is said once, retried each pass
                self._once("links.json", f"plur: linked folders not synced: {exc}")
                links = []
            for link in links:
                self._watch(link.folder)
                try:
                    looks = self._looks.setdefault(link.key, Looks(self._settle_s, self._clock))
                    report = reconcile(self._memory, link, looks)
                    self._failing.pop(link.folder, None)
                    for problem in report.problems:
                        self._once(f"{link.folder}:{problem}", f"plur: link {link.folder}: {problem}")
                except Exception as exc:  # noqa: BLE001 - one failing link does not stop the others
                    self._once(link.folder, f"plur: link {link.folder} not synced: {type(exc).__name__}: {exc}")
            with self._passed:
                self._passes += 1
                self._passed.notify_all()
            self._wake.wait(self._period_s)
            if self._wake.is_set():
                self._wake.clear()
                self._stop.wait(0.1)  # let a writer finish its burst (write, rename) before reading

    def wait_passes(self, n: int = 1, timeout_s: float = 60.0) -> bool:
        """Wait until ``n`` more passes over every link have ended (the next one starts at once); ``False`` after
        ``timeout_s``. A pass already running counts, so ``n=2`` sees a whole pass that began after the call."""
        with self._passed:
            target = self._passes + n
            self._wake.set()
            return self._passed.wait_for(lambda: self._passes >= target, timeout_s)

    def _once(self, key: str, message: str) -> None:
        if self._failing.get(key) != message:
            self._failing[key] = message
            _say(message)

    def _watch(self, folder: str) -> None:
        if folder in self._watched or not Path(folder).is_dir():
            return
        self._watched.add(folder)
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer
        except ImportError:  # polling alone
            return
        wake = self._wake

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if str(getattr(event, "src_path", "")).endswith(".md") or \
                        str(getattr(event, "dest_path", "") or "").endswith(".md"):
                    wake.set()

        if self._observer is None:
            self._observer = Observer()
            self._observer.daemon = True
            self._observer.start()
        self._observer.schedule(_Handler(), folder, recursive=False)

    def stop(self) -> None:
        """Stop the thread (after a pass in progress) and the file watcher."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=30.0)
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5.0)
