"""The in-memory mirror of ``<home>/engrams/``: scanning, reading, parsing, quarantining, catching up.
Files are named by their path under the folder, a month folder's or not (:mod:`plur.store.layout`).

:class:`FolderMirror` keeps one :class:`~plur.store.manifest.FileEntry` per file and the engrams
parsed from them, re-reads only files whose ``(mtime_ns, size, inode)`` changed (or that are "racy", see
:data:`~plur.store.manifest.RACY_WINDOW_NS`), moves files that fail to load to ``<home>/quarantine/``, and catches
up with other writers through the writer journal. It never writes an engram file (see ``store.EngramStore``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreError, ValidationError
from .active_texts import ActiveTexts
from .atomic import clean_stale_temps
from .engram import Engram
from .lock import StoreLock
from .journal import JournalTail, WriterJournal
from .manifest import FileEntry, file_sha, load_manifest, save_behind, save_manifest as save_manifest_file, wait_saved
from .engram_file import parse_file, size_message
from .folder_scan import Prescan, StatKey, folder_token, scan_folder, scan_folder_while, stat_pass
from .listing import FolderListing, ListingBehind
from .scan_diff import changed_names, settle
from .order import Order
from .layout import id_of, is_flat, twin
from .quarantine import move_aside, unmoved_record
from .changes import Changes, _check_home, _merge_op  # noqa: F401 - Changes re-exported

#: Default statement limit in UTF-8 bytes (1 MiB); see :mod:`plur.store.store`.
DEFAULT_MAX_STATEMENT_BYTES = 1 << 20
#: Save the manifest on refresh once this many files had to be read (not served by the manifest)...
AUTOSAVE_READS = 32
#: ...but at most once per this many seconds, or ten times the last save's (a 10k-row manifest takes ~0.3 s
#: to write, a million rows ~15 s of the GIL: at most a tenth of the time goes to saving). Close saves too.
AUTOSAVE_INTERVAL_S = 30.0
#: A journal name is re-checked at every quick refresh for this long, seconds: a writer appends the name
#: *before* it writes the file, so a lock-free reader may see the name first.
RECENT_S = 5.0
#: While the journal names new writes, the quick refresh lists the folder (for files copied in by hand) at most
#: this often, seconds, on a thread of its own: a listing is O(files) (~17 ms of CPU at 10k names, load 9).
LIST_EVERY_S = 1.0


class FolderMirror:
    """What the engram folder holds, as parsed engrams, kept current cheaply; no engram writes.

    Args: as :class:`plur.store.store.EngramStore` (which subclasses this).
    """

    def __init__(self, home: str | os.PathLike[str], max_statement_bytes: int = DEFAULT_MAX_STATEMENT_BYTES,
                 fsync: bool = True, lock_timeout_s: float = 30.0) -> None:
        self.home = Path(home).expanduser()
        _check_home(self.home)
        self.root = self.home / "engrams"
        self.quarantine_dir = self.home / "quarantine"
        self.manifest_path = self.home / "index" / "manifest-store.json"
        self.max_statement_bytes = int(max_statement_bytes)
        self.fsync = bool(fsync)
        self.lock_timeout_s = float(lock_timeout_s)
        self._lock = StoreLock(self.home, self.lock_timeout_s)
        self.lock_path = self._lock.path
        self._writes = WriterJournal(self.home / "index" / "store-journal")
        self._mutex = threading.RLock()
        self._entries: dict[str, FileEntry] = {}
        self._by_id: dict[str, Engram] = {}
        self._by_key = ActiveTexts()  # active ids by (scope, content_hash)
        self._order = Order()  # every engram oldest first, once sorted (plur.store.order)
        self._pending: dict[str, str] = {}  # id -> "added" | "updated" | "removed"
        self._unmoved: dict[str, dict[str, Any]] = {}  # bad files we could not move aside
        self._loaded = False  # manifest read (entries may still be unmaterialised)
        self._scanned = False  # the folder was scanned at least once
        self._dirty = False  # in-memory state differs from the saved manifest
        self._saved_at, self._save_cost_s = 0.0, 0.0  # time.monotonic() of the last save (0: never), its seconds
        self._recent: dict[str, float] = {}  # journal names -> time.monotonic() first seen (quick refresh)
        self._listed_at = float("-inf")  # time.monotonic() of the quick refresh's last folder listing
        self._listing = FolderListing()  # the folders (engrams/, months) it listed, by mtime
        self._behind = ListingBehind()  # the listing a refresh among a stream of writes leaves to a thread
        self._months: tuple[int, list[str]] = (-1, [])  # (the folder's mtime, its month folders) last listed

    def change_token(self) -> tuple[int, ...] | None:
        """:func:`plur.store.folder_scan.folder_token` of the engram folder: it changes when files are added
        or removed, so a caller can skip :meth:`refresh` while it holds (in-place edits need a full refresh)."""
        token, self._months = folder_token(self.root, self._months)
        return token

    # -- internals: cache -----------------------------------------------------------------
    def _index_add(self, e: Engram) -> None:
        self._order.add(e, self._by_id.get(e.id))
        self._by_id[e.id] = e
        self._by_key.add(e)

    def _index_remove(self, engram_id: str) -> None:
        old = self._by_id.pop(engram_id, None)
        if old is None:
            return
        self._by_key.discard(old)
        self._order.remove(old)

    def _duplicate_of(self, scope: str, chash: str) -> Engram | None:
        """The oldest active engram with this content hash in this scope."""
        ids = self._by_key.ids(scope, chash, self._by_id)
        if not ids:
            return None
        return min((self._by_id[i] for i in ids), key=lambda e: (e.created, e.id))

    def _note(self, engram_id: str, op: str) -> None:
        merged = _merge_op(self._pending.get(engram_id), op)
        if merged is None:
            self._pending.pop(engram_id, None)
        else:
            self._pending[engram_id] = merged

    def _set_entry(self, name: str, ent: FileEntry, op: str | None) -> None:
        assert ent.engram is not None
        old = self._entries.get(name)
        if old is not None and old.engram is not None:
            self._index_remove(old.engram.id)
        self._entries[name] = ent
        self._index_add(ent.engram)
        if op is not None:
            self._note(ent.engram.id, op)
        self._dirty = True

    def _forget_entry(self, name: str) -> None:
        old = self._entries.pop(name, None)
        if old is None:
            return
        engram_id = id_of(name)
        self._dirty = True
        if (e := self._by_id.get(engram_id)) is not None and e is not old.engram:
            return  # the id is held by its file in the other layout (a twin set aside)
        self._index_remove(engram_id)
        if old.engram is not None or old.data is not None:
            self._note(engram_id, "removed")

    def _not_found_message(self, engram_id: str) -> str:
        for q in self._unmoved.values():
            if Path(q["original"]).name == f"{engram_id}.yaml":
                return f"engram {engram_id} cannot be loaded: {q['reason']} (see `plur doctor`)"
        return f"no engram {engram_id} in {self.root}; see `plur list` for the ids in this store"

    # -- internals: loading ---------------------------------------------------------------
    def _load_manifest(self) -> None:
        """Seed the cache from the manifest (unmaterialised); any problem = no manifest."""
        self._loaded = True
        self._entries.update(load_manifest(self.manifest_path, self.root))

    def _scan(self) -> tuple[dict[str, StatKey], list[str]]:
        return scan_folder(self.root)

    def _full_refresh(self, locked: bool, check_racy: bool = True) -> None:
        """Scan the folder; ``check_racy=False`` trusts equal (mtime, size, inode) even for recent files."""
        if not self._loaded:  # first refresh of a process: stat the folder while the manifest is parsed
            files, temps = scan_folder_while(self.root, self._load_manifest)
        else:
            files, temps = self._scan()
        clean_stale_temps(self.root, temps, locked)
        reads = 0
        for name, key in files.items():
            ent = self._entries.get(name)
            if ent is not None and ent.key == key and not (check_racy and ent.racy()):
                if ent.engram is not None:
                    continue
                if self._materialise(name, ent):
                    continue
            if ent is None and twin(name) not in files and self._moved_here(name, key):  # same inode: not read
                continue
            reads += 1
            self._read_file(name)
        for name in [n for n in self._entries if n not in files]:
            self._forget_entry(name)
        for name in [n for n in self._unmoved if n not in files]:
            del self._unmoved[name]
        self._scanned = True
        self._autosave(reads)

    def _autosave(self, reads: int) -> None:
        never = self._saved_at == 0.0
        due = never or time.monotonic() - self._saved_at >= max(AUTOSAVE_INTERVAL_S, 10 * self._save_cost_s)
        if (reads >= AUTOSAVE_READS and due) or (self._dirty and never and not self.manifest_path.exists()
                                                  and self._entries):
            save_behind(self)  # written by a thread of its own: a recall does not wait for it (issue 49)

    def prescan(self) -> Prescan | None:
        """The stat pass of a full refresh and the names it found changed, without any lock, for :meth:`refresh`
        to apply later (issue 49). A full refresh is one ``stat`` per file and a comparison of each with its entry
        (~80 ms of CPU at 10k engrams on a busy machine); a caller holding its own lock while refreshing (a recall)
        takes both here, outside that lock; applying the pass re-checks only the files it named.
        Returns None before the first full scan (which must run in :meth:`refresh` itself).
        """
        if not self._scanned:
            return None
        entries = self._entries.copy()  # atomic under the GIL (a recall's quick refresh may change the dict)
        return stat_pass(self.root, self._writes, lambda files: changed_names(self.root, entries, files), self._months)

    def _apply_prescan(self, pre: Prescan) -> None:
        """:meth:`_scan_and_catch_up` from a :meth:`prescan`: each file it named is checked again now, then the newest
        journal names. A plur write made while the pass ran is named in the journal after ``pre.tail`` (the next
        quick refresh reads it); a file added or removed by hand moved the folder token taken before the pass."""
        clean_stale_temps(self.root, pre.temps, False)
        self._dirty |= settle(self._entries, pre.settled)  # racy, read again off the lock: the same bytes
        for name in pre.names:
            self._check_one(name)
        for name in [n for n in self._unmoved if n not in pre.files and not os.path.lexists(self.root / n)]:
            del self._unmoved[name]
        self._autosave(len(pre.names))
        if pre.tail.epoch is not None and pre.tail.end > 0:
            now = time.monotonic()
            for name in self._writes.last_names(pre.tail.end):
                self._recent.setdefault(name, now)
            pos = self._writes.pos
            if pos is None or pos[0] != pre.tail.epoch or pos[1] < pre.tail.end:  # quick refreshes since went further
                self._writes.caught_up(pre.tail)

    def _scan_and_catch_up(self) -> None:
        """A full scan that also tells the journal where it stands, so later refreshes can be quick.

        Without the store lock, the newest journal names may have been mid-write during the scan;
        they are re-checked by the following quick refreshes for :data:`RECENT_S` seconds.
        """
        locked = self._lock.is_locked
        if locked:  # under our own write lock: the writer path keeps the journal position itself
            self._full_refresh(locked=True)
            return
        before = self._writes.read_tail(False)
        self._full_refresh(locked=False)
        if before.epoch is not None and before.end > 0:
            now = time.monotonic()
            for name in self._writes.last_names(before.end):
                self._recent.setdefault(name, now)
            self._writes.caught_up(before)

    def _quick_refresh(self) -> bool:
        """Catch up without a stat of every file: the writer journal's tail plus a listing of names.

        Reads the files other plur writers named in the journal since we last looked; stats those named in
        the last :data:`RECENT_S` seconds, whose write may have been in flight (plur writes by rename, so a
        landed write always changes the inode: a stat tells), until a check finds the write lock free
        (:meth:`~plur.store.lock.StoreLock.free_now`: all of them landed); reads files whose name is new
        (copied in by hand) and forgets names that are gone. The listing reads only folders whose mtime moved
        (:mod:`plur.store.listing`); while plur writers keep naming files in the journal it runs at most every
        :data:`LIST_EVERY_S` seconds on a thread of its own, its names re-checked at the next call after it
        ends (a hand-copied file shows up that much later), else at every call, on the caller's thread.
        In-place edits that keep the name and go around plur are left to the next full scan (the caller
        runs one every ``refresh_interval_s``). Takes no lock (tries it, never waits).

        Returns:
            False when the journal cannot be trusted (missing, torn, two rotations behind, never scanned).
        """
        if not self._scanned:
            return False
        tail = self._writes.read_tail(True)
        if tail.names is None:
            return False
        now = time.monotonic()
        named = set(tail.names)
        for name in named:
            self._recent.setdefault(name, now)
        self._recent = {n: t for n, t in self._recent.items() if now - t < RECENT_S}
        check = self._behind.take()  # names a listing on a thread of its own found new or gone since
        if not self._behind.streaming(bool(named), now):  # no stream of writes: list now
            check += self._listing.list(self.root).changed(self._entries, self._unmoved)
            self._listed_at = now
        elif now - self._listed_at >= LIST_EVERY_S:  # a stream: not on the caller's path (issue 49)
            self._behind.start(self.root, self._entries, self._unmoved, like=self._listing)
            self._listed_at = now
        settled = self._lock.free_now()  # after the tail was read: then each write it names has landed
        reads = len(named) + len(check)
        for name in [*sorted(named), *check]:  # check: a stat tells new from gone, or written since the listing
            self._check_one(name)
        for name in sorted(self._recent.keys() - named):
            self._check_one(name, stat_only=True)
        self._recent = {} if settled else self._recent  # landed and checked since: no more re-checks (issue 49)
        self._writes.advance(tail)
        self._autosave(reads)
        return True

    def _materialise(self, name: str, ent: FileEntry) -> bool:
        """Turn a manifest entry into an Engram; False if the data no longer validates."""
        data = ent.data
        e = data if isinstance(data, Engram) else Engram.from_manifest(data, ent.chash) if data is not None else None
        if e is None:
            try:
                e = Engram.from_dict(ent.data or {})
            except (ValidationError, TypeError, ValueError):
                return False
        if id_of(name) != e.id:
            return False
        ent.engram, ent.data = e, None
        self._index_add(e)
        self._note(e.id, "added")
        return True

    def _check_one(self, name: str, stat_only: bool = False) -> None:
        """Re-check a single file (for get/put/delete).

        Args:
            stat_only: an unchanged ``(mtime, size, inode)`` is enough, even within the racy window
                (the quick refresh's re-check of files written by rename, see :meth:`_quick_refresh`).
        """
        path = self.root / name
        try:
            st = path.stat()
        except FileNotFoundError:
            if name in self._entries and os.path.lexists(self.root / twin(name)):
                self._read_file(twin(name))  # moved to the other layout (plur migrate --layout): the entry follows
            if name in self._entries:
                self._forget_entry(name)
            return
        ent = self._entries.get(name)
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if ent is not None and ent.key == key and (stat_only or not ent.racy()):
            if ent.engram is not None or self._materialise(name, ent):
                return
        self._read_file(name)

    def _read_file(self, name: str) -> None:
        """Read, hash and (if changed) parse one file; quarantine it if it does not load."""
        path = self.root / name
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except FileNotFoundError:
            self._forget_entry(name)
            return
        except OSError as exc:
            raise StoreError(f"cannot read {path} ({exc}); check its permissions") from None
        now = time.time_ns()
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        sha = file_sha(data)
        ent = self._entries.get(name)
        if ent is not None and ent.sha == sha and (ent.engram is not None or self._materialise(name, ent)):
            ent.key, ent.observed_ns = key, now  # same bytes: no parse needed
            self._dirty = True
            return
        if ent is None and self._moved_here(name, key, sha):
            return
        try:
            engram = self._parse(name, data)
        except ValidationError as exc:
            if self._quarantine(name, str(exc)) is None:  # else: it loaded when re-read under the lock
                self._forget_entry(name)
            return
        flat = twin(name)
        if not is_flat(name) and (flat in self._entries or flat in self._unmoved):  # the month's copy wins
            if self._quarantine(flat, "") is None:  # its parse fails now: moved aside as a duplicate
                self._forget_entry(flat)
        # a manifest entry never materialised was never reported: it is "added"
        op = "updated" if ent is not None and ent.engram is not None else "added"
        self._set_entry(name, FileEntry(key, now, sha, engram), op)

    def _moved_here(self, name: str, key: StatKey, sha: str | None = None) -> bool:
        """True when ``name`` is a known file moved from the other layout (``plur migrate --layout``), the same
        bytes (``sha``) or else the same (mtime, size, inode): its entry follows it, nothing reported changed."""
        other = twin(name)
        was = self._entries.get(other)
        if was is None or (was.sha != sha if sha else was.key != key) or os.path.lexists(self.root / other):
            return False
        del self._entries[other]
        was.key, was.observed_ns = key, time.time_ns()
        self._entries[name] = was
        self._dirty = True
        return was.engram is not None or self._materialise(name, was)

    def _parse(self, name: str, data: bytes) -> Engram:
        """The engram file ``name`` holding ``data`` (:func:`plur.store.engram_file.parse_file`)."""
        return parse_file(self.root, name, data, self.max_statement_bytes, self.quarantine_dir)

    def _quarantine(self, name: str, reason: str) -> Engram | None:
        """Move a bad file aside with a ``.reason`` file; returns the engram if a re-read under the lock loads."""
        src = self.root / name
        try:
            ctx = self._write_lock()
            ctx.__enter__()
        except StoreError:
            self._unmoved[name] = unmoved_record(src, reason)
            return None
        try:
            try:
                with open(src, "rb") as f:
                    st = os.fstat(f.fileno())
                    data = f.read()
            except FileNotFoundError:
                return None
            try:  # a writer may have finished between our read and the lock
                engram = self._parse(name, data)
            except ValidationError as exc:
                reason = str(exc)
            else:
                key = (st.st_mtime_ns, st.st_size, st.st_ino)
                ent = self._entries.get(name)
                op = "updated" if ent is not None and ent.engram is not None else "added"
                self._set_entry(name, FileEntry(key, time.time_ns(), file_sha(data), engram), op)
                return engram
            try:
                move_aside(src, self.quarantine_dir, reason, len(data), fsync=self.fsync,
                           before_move=lambda: self._writes.append(name))
            except (OSError, StoreError):
                self._unmoved[name] = unmoved_record(src, reason)
                return None
            self._unmoved.pop(name, None)
            return None
        finally:
            ctx.__exit__(None, None, None)

    def _size_message(self, statement: str) -> str:
        return size_message(statement, self.max_statement_bytes)

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        with self._mutex, self._lock.hold():
            yield

    def _sync_for_write(self) -> None:
        """Under the lock: catch up with other writers (journal tail, else a full scan)."""
        tail = self._writes.read_tail(self._scanned)
        if tail.names is not None:
            try:
                for name in sorted(set(tail.names) | set(self._recent)):  # recent: a quick refresh saw them mid-write
                    self._check_one(name)
            except OSError:
                tail = JournalTail(None, -1)
            else:
                self._writes.advance(tail)
                # Under the write lock no write is in flight: a recent name checked now is settled. Without
                # this, a process that only writes (no quick refresh prunes) re-read ~75 more files per write
                # after each periodic scan, every one of them racy (capture, per-turn ingest: O(n^2)).
                self._recent.clear()
                return
        # Other plur writers replace files (new inode): equal keys are trusted; same-tick hand edits: next refresh().
        self._full_refresh(locked=True, check_racy=False)
        self._writes.caught_up(tail)

    def save_manifest(self) -> None:
        """Write ``<home>/index/manifest-store.json`` now (atomic; no fsync: it is a cache)."""
        with self._mutex:
            wait_saved(self)
            if not self._loaded or not self.home.is_dir():   # a deleted home is not written again (issue 38)
                return
            self._saved_at = time.monotonic()  # also after a failure: a read-only home does not retry each time
            if save_manifest_file(self.manifest_path, self.root, self._entries):
                self._dirty = False
