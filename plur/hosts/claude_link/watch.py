"""The service's thread that keeps every linked memory folder in step (:class:`LinkWatcher`).

It syncs each link of ``<home>/links.json`` (:func:`.sync.reconcile`) once a second, and at once when a
file in a linked folder changes: watchdog (inotify, FSEvents...) wakes it where installed; without it
the once-a-second pass alone sees files by their text. ``links.json`` is re-read every pass, so
``plur link`` takes effect in a running service.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from .records import load_links
from .sync import reconcile


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class LinkWatcher:
    """A daemon thread syncing ``memory``'s links.

    Args:
        memory: the service's :class:`~plur.memory.Memory`.
        period_s: seconds between passes when no file event wakes it.
    """

    def __init__(self, memory: Any, period_s: float = 1.0) -> None:
        self._memory = memory
        self._home = Path(memory.home)
        self._period_s = period_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._observer: Any = None
        self._watched: set[str] = set()
        self._failing: dict[str, str] = {}
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
                    report = reconcile(self._memory, link)
                    self._failing.pop(link.folder, None)
                    for problem in report.problems:
                        self._once(f"{link.folder}:{problem}", f"plur: link {link.folder}: {problem}")
                except Exception as exc:  # noqa: BLE001 - one failing link does not stop the others
                    self._once(link.folder, f"plur: link {link.folder} not synced: {type(exc).__name__}: {exc}")
            self._wake.wait(self._period_s)
            if self._wake.is_set():
                self._wake.clear()
                self._stop.wait(0.1)  # let a writer finish its burst (write, rename) before reading

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
