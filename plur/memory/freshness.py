"""How a :class:`~plur.memory.Memory` sees writes made outside it (other processes, hand edits):
the writer journal and a name listing when the folder changed, a full stat scan every
``refresh_interval_s`` (stretched to 50x its cost), and the bookkeeping of its own writes.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ..store.engram import Engram
from .filters import note_changes

log = logging.getLogger("plur.memory.freshness")


def scan_interval_s(mem: Any) -> float:
    """Seconds between full stat scans: ``refresh_interval_s``, stretched to 50x the last scan's cost."""
    base = mem.settings.refresh_interval_s
    return max(base, 50.0 * mem._scan_cost_s) if base > 0 else 0.0


def refresh_ahead(mem: Any, idle_after_s: float = 600.0) -> bool:
    """The body of :meth:`plur.memory.Memory.refresh_ahead`, which documents it."""
    with mem._lock:
        interval = scan_interval_s(mem)
        now = time.monotonic()
        if (mem._indexes is None or interval <= 0 or now - mem._last_use > idle_after_s
                or now - mem._last_scan < 0.8 * interval):
            return False
    pre = _prescan(mem)  # the stat pass outside the lock: a request that comes meanwhile does not wait for it
    with mem._lock:
        if not mem._closed:
            scan(mem, force=True, use=False, prescan=pre)
            if pre is not None:
                mem._scan_cost_s = time.monotonic() - now
    return True


def _prescan(mem: Any) -> Any:
    """The store's stat pass taken without any lock (:meth:`plur.store.store.EngramStore.prescan`), or None."""
    take = getattr(mem.store, "prescan", None)
    return take() if take is not None else None


def _scan_behind(mem: Any) -> None:
    """A due full scan on a thread of its own: the stat pass without the lock, then the changes under it."""
    t0 = time.monotonic()
    try:
        pre = _prescan(mem)
        with mem._lock:
            if mem._closed:
                return
            scan(mem, force=True, use=False, prescan=pre)
            mem._scan_cost_s = time.monotonic() - t0
    except Exception as exc:  # noqa: BLE001 - the next due scan retries; the quick path still runs per call
        log.warning("background store scan failed (%s); the next one retries", exc)


def _scan_in_background(mem: Any) -> bool:
    """Start :func:`_scan_behind` (unless one runs); False where the store has no stat pass of its own."""
    if getattr(mem.store, "prescan", None) is None:
        return False
    t = mem.__dict__.get("_scan_thread")
    if t is None or not t.is_alive():
        mem._last_scan = time.monotonic()  # not due again before the interval has passed
        t = threading.Thread(target=_scan_behind, args=(mem,), name="plur-store-scan", daemon=True)
        mem.__dict__["_scan_thread"] = t
        t.start()
    return True


def scan(mem: Any, force: bool = False, use: bool = True, prescan: Any = None) -> None:
    """Pick up files changed outside this Memory (other processes, hand edits).

    Args:
        force: a full stat scan even when none is due.
        use: count this call as use (see :meth:`refresh_ahead`).
        prescan: with ``force``, the store's stat pass taken earlier without the lock (it is applied now).
    """
    mtime = mem.store.change_token()  # folder: its and its month folders' mtimes; PostgreSQL: the LISTEN token
    now = time.monotonic()
    if use:
        mem._last_use = now
    # A changed folder mtime (other writers, files added or removed) is caught up through the writer
    # journal and a name listing, without a stat of every file (EngramStore.refresh(full=False)), so a
    # reader keeps up with a stream of writers. In-place edits do not change the folder's mtime: a full
    # stat scan runs every refresh_interval_s, stretched to 50x its last cost (<= 2% of wall time);
    # 0 means a full scan at every call. A call that finds a full scan due (not forced) leaves it to a
    # thread of its own, which stats every file without the lock and then applies what changed under it:
    # a recall among writers paid the whole scan before (~60-80 ms of CPU at 10k engrams, ~1 recall in
    # 100: recall p99 under 4 writers, issue 49) and goes the quick way meanwhile.
    interval = scan_interval_s(mem)
    full = force or now - mem._last_scan >= interval
    if full and not force and use and interval > 0 and mem._last_scan > 0 and _scan_in_background(mem):
        full = False
    if not full and mtime == mem._folder_mtime:
        return
    changes = mem.store.refresh(full=full, prescan=prescan) if prescan is not None else mem.store.refresh(full=full)
    if full:
        mem._scan_cost_s = time.monotonic() - now
        mem._last_scan = now
    # a stat pass taken earlier keeps the token from before it: a file added or removed meanwhile moves it again
    mem._folder_mtime = getattr(prescan, "token", mtime) if prescan is not None else mtime
    if changes.added or changes.updated or changes.removed:
        mem._generation += 1
        changed = changed_engrams(mem, changes.added | changes.updated)
        note_changes(mem, mem._generation - 1, changed, changes.removed)
        if mem._indexes is not None:
            if changes.removed:
                mem._indexes.remove(changes.removed)
            mem.catchup.note_outside([e.id for e in changed])  # another process's writes: maybe a stream
            mem._indexes.add(changed)
    if getattr(mem.store, "remote", False):
        from .shared import erase_forgotten_elsewhere, resync_derived

        erase_forgotten_elsewhere(mem, mem.store.take_forgotten())
        if mem.store.take_resync():
            resync_derived(mem)


def note_own_write(mem: Any) -> None:
    """Our own writes change the folder's mtime; remember it so the next recall does not re-scan."""
    mem._generation += 1
    mem._folder_mtime = mem.store.change_token()


#: Above this many changed ids a scan takes them from one ``by_id`` snapshot of the refreshed store instead of a
#: ``get`` each, which stats the file again: a fresh process's first scan (every engram "added") re-stated every
#: file it had just read, 6.3 -> 5.5 s for a fresh-process BM25 recall at 100k engrams (issue 30).
BULK_LOOKUP = 64


def changed_engrams(mem: Any, ids: frozenset[str]) -> list[Engram]:
    """The engrams of ``ids`` as the store holds them right after a refresh (ids gone meanwhile are skipped)."""
    if len(ids) <= BULK_LOOKUP:
        return [e for e in (get_or_none(mem, i) for i in ids) if e is not None]
    snapshot = mem.store.by_id()
    return [e for e in (snapshot.get(i) for i in ids) if e is not None]


def get_or_none(mem: Any, engram_id: str) -> Engram | None:
    try:
        return mem.store.get(engram_id)
    except Exception:  # noqa: BLE001 - vanished or quarantined meanwhile
        return None
