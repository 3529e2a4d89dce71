"""EngramStore: one YAML file per engram under ``<home>/engrams/YYYY-MM/<id>.yaml``.

Layout of a home folder as far as the store is concerned::

    <home>/engrams/YYYY-MM/<id>.yaml       one engram per file (Engram.to_yaml, UTF-8), in the month of its id
    <home>/engrams/<id>.yaml               the same, as older plur wrote it: read, updated, forgotten in place
    <home>/engrams/[YYYY-MM/].tmp-*.yaml   in-flight atomic writes; never loaded, removed when stale
    <home>/quarantine/<name>.<timestamp>   files that failed to parse, moved aside
    <home>/quarantine/<name>.<timestamp>.reason   why (YAML: original, reason, when)
    <home>/index/manifest-store.json       cache: (mtime_ns, size, inode, sha256, content_hash, engram)
    <home>/index/store-journal             names of files written, appended by every writer
    <home>/.lock                           inter-process write lock (filelock, flock on POSIX)

Guarantees:

* **Atomic writes.** Bytes go to a temp file in the same folder, are flushed and
  fsync'd, then ``os.replace``'d over the target and the folder is fsync'd
  (the fsyncs are skipped with ``fsync=False``). A writer killed at any point
  leaves either the old file or the new one, never a partial engram.
* **One writer at a time.** Every write takes ``<home>/.lock`` and first brings
  the in-memory view up to date, so processes deduplicate against each other.
  To make that cheap, each writer appends the names it is about to write to
  ``<home>/index/store-journal`` (before writing them); another process re-checks
  only the names appended since it last looked, and falls back to a full scan
  when the journal is missing, rotated (new epoch) or torn. Reads take no lock.
* **Two layouts, one store** (:mod:`plur.store.layout`): new files go to the month of their id; a flat
  one is kept where it is; ``plur migrate --layout`` moves them (:mod:`plur.store.relayout`).
* **Nothing is lost to bad input.** A file that fails to parse or validate, or
  whose name does not match its ``id`` (or its month folder, or is a flat copy
  of a file in its month folder), is moved to ``<home>/quarantine/`` with
  a ``.reason`` file and reported by :meth:`EngramStore.quarantined`; the rest of
  the store loads. A bad file is never read as "empty" and never overwritten.
* **Statement size limit.** Statements over ``max_statement_bytes`` UTF-8 bytes
  (default 1 MiB = 1,048,576 bytes, setting ``max_statement_bytes``) are refused
  with a :class:`~plur.errors.ValidationError` naming the size and the limit. The
  limit bounds one YAML file, one embedding request and one line of a JSONL export.
* **Cheap reopen.** A manifest of ``(mtime_ns, size, inode, sha256)`` per file,
  with the parsed engram, lets a fresh process re-read only files that changed.
  Files whose mtime is within :data:`RACY_WINDOW_NS` of when they were last seen
  are re-checked by content hash, because filesystem timestamps are coarse (the
  "racy git" problem, see git's Documentation/technical/racy-git.txt).

The store knows nothing about indexes: callers learn what changed from
:meth:`EngramStore.refresh`, which returns :class:`Changes`.

Helpers, one job each: :mod:`plur.store.atomic` (atomic writes, stale temp files),
:mod:`plur.store.quarantine` (moving bad files aside, listing them),
:mod:`plur.store.restore` (moving a fixed one back),
:mod:`plur.store.manifest` (the manifest and the writer journal),
:mod:`plur.store.lock` (the write lock and its owner record),
:mod:`plur.store.mirror` (the in-memory mirror of the folder this class writes to).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..errors import ConflictError, DuplicateError, NotFoundError, StoreError, ValidationError
from .atomic import STALE_TMP_S, TMP_PREFIX, atomic_write, fsync_dir
from .engram import Engram, content_hash, engram_version, new_id, validate_id
from .folder_scan import scan_folder
from .layout import month_name
from .where import id_is_free, name_for
from .manifest import (JOURNAL_MAGIC, JOURNAL_MAX_BYTES, MANIFEST_FORMAT, MANIFEST_VERSION, RACY_WINDOW_NS, FileEntry,
                       file_sha, wait_saved)
from .mirror import AUTOSAVE_READS, DEFAULT_MAX_STATEMENT_BYTES, Changes, FolderMirror
from .quarantine import count_quarantined, list_quarantined
from .restore import discard_quarantined, restore_quarantined

__all__ = ["AUTOSAVE_READS", "DEFAULT_MAX_STATEMENT_BYTES", "JOURNAL_MAGIC", "JOURNAL_MAX_BYTES", "MANIFEST_FORMAT",
           "MANIFEST_VERSION", "RACY_WINDOW_NS", "STALE_TMP_S", "TMP_PREFIX", "Changes", "EngramStore"]



class EngramStore(FolderMirror):
    """One YAML file per engram under ``<home>/engrams/``; see the module docstring.

    Thread-safe (an in-process re-entrant lock guards the cache and writes) and
    multi-process-safe (writes hold ``<home>/.lock``).

    Args:
        home: the plur home folder (created on first write, not on open).
        max_statement_bytes: largest statement accepted, in UTF-8 bytes (default 1 MiB).
        fsync: fsync each written file and its folder (crash safety). ``False`` only
            for throwaway stores, e.g. benchmarks.
        lock_timeout_s: how long a write waits for another process's lock, in seconds.

    Attributes:
        home: the home folder.
        root: ``<home>/engrams``.
    """

    # -- paths ----------------------------------------------------------------------------
    def path_for(self, engram_id: str) -> Path:
        """``<home>/engrams/YYYY-MM/<id>.yaml`` for a valid id: where the store writes a new engram (an older
        plur's may be flat instead: :meth:`file_of`).

        Raises:
            InvalidIdError: ``engram_id`` is not ``ENG-YYYY-MM-DD-<6 hex>`` (so never a path).
        """
        return self.root / month_name(validate_id(engram_id))

    def file_of(self, engram_id: str) -> Path:
        """Where the file of ``engram_id`` is (:func:`plur.store.where.name_for`); raises InvalidIdError."""
        with self._mutex:
            return self.root / self._name_for(validate_id(engram_id))

    def iter_files(self) -> Iterator[Path]:
        """Paths of the engram files on disk now (``*.yaml`` in either layout, temp files excluded), unsorted."""
        for name in scan_folder(self.root)[0]:
            yield self.root / name

    # -- reading --------------------------------------------------------------------------
    def refresh(self, *, full: bool = True, prescan: Any = None) -> Changes:
        """Bring the cache up to date with the folder; re-read only files that changed.

        A file is re-read when its ``(mtime_ns, size, inode)`` differs from what
        the cache (or the manifest, in a fresh process) recorded, or when it is
        "racy" (see :data:`RACY_WINDOW_NS`), in which case only its bytes are
        hashed and it is parsed only if they changed. Unparseable files are
        quarantined.

        Args:
            full: stat every file (catches in-place edits made around plur). ``False`` first tries the
                quick path: the writer journal's tail plus a listing of names, no per-file stat, so a
                reader keeps up with a stream of writers at a cost that does not grow with the store;
                it falls back to the full scan when the journal cannot be trusted.
            prescan: with ``full``, the stat pass :meth:`prescan` took earlier without a lock (it is applied here;
                files read since it began keep what was read).

        Returns:
            :class:`Changes` since the previous call (first call: every engram is "added").
        """
        with self._mutex:
            if full and prescan is not None and self._scanned and not self._lock.is_locked:
                self._apply_prescan(prescan)
            elif full or not self._quick_refresh():
                self._scan_and_catch_up()
            pending, self._pending = self._pending, {}
        return Changes(
            added=frozenset(i for i, op in pending.items() if op == "added"),
            updated=frozenset(i for i, op in pending.items() if op == "updated"),
            removed=frozenset(i for i, op in pending.items() if op == "removed"),
        )

    def all(self) -> list[Engram]:
        """Every loaded engram, oldest first (by ``created``, then id).

        Served from the cache; the first call loads the store. Call :meth:`refresh`
        to pick up changes made elsewhere.
        """
        with self._mutex:
            if not self._scanned:
                self._full_refresh(locked=False)
            return list(self._order.sorted(self._by_id.values()))

    def by_id(self) -> dict[str, Engram]:
        """Every loaded engram by id (a copy; unordered: :meth:`all` sorts, this does not, for 10k-engram
        callers that only look engrams up). Loads the store on first use."""
        with self._mutex:
            if not self._scanned:
                self._full_refresh(locked=False)
            return dict(self._by_id)

    def count(self) -> int:
        """Number of loaded engrams (loads the store on first use)."""
        with self._mutex:
            if not self._scanned:
                self._full_refresh(locked=False)
            return len(self._by_id)

    def get(self, engram_id: str) -> Engram:
        """The engram with this id, re-read from disk if its file changed.

        Raises:
            InvalidIdError: malformed id (``../../x``, ``''``...).
            NotFoundError: no such engram (also when its file was just quarantined).
        """
        validate_id(engram_id)
        with self._mutex:
            if not self._loaded:
                self._load_manifest()
            self._check_one(self._name_for(engram_id))
            found = self._by_id.get(engram_id)
        if found is None:
            raise NotFoundError(self._not_found_message(engram_id))
        return found

    def find_duplicate(self, statement: str, scope: str = "global") -> Engram | None:
        """The active engram in ``scope`` whose normalised statement equals ``statement``, if any.

        Uses the cache (loads the store on first use); duplicates are decided by
        :func:`plur.store.engram.content_hash` (NFKC, case-folded, whitespace collapsed).
        """
        with self._mutex:
            if not self._scanned:
                self._full_refresh(locked=False)
            return self._duplicate_of(scope, content_hash(statement))

    # -- writing --------------------------------------------------------------------------
    def add(self, engram: Engram) -> tuple[Engram, bool]:
        """Store a new engram.

        An exact duplicate (same ``content_hash``, same scope, active) is not
        written again: the existing engram comes back with ``created=False``. An
        id already taken on disk is replaced by a fresh one (same date).

        Returns:
            ``(stored engram, created)``.

        Raises:
            ValidationError: statement over ``max_statement_bytes``.
            StoreError: the lock could not be taken or the disk write failed.
        """
        return self.add_many([engram])[0]

    def add_many(self, engrams: Iterable[Engram], *, dedupe: bool = True) -> list[tuple[Engram, bool]]:
        """:meth:`add` for a batch under one lock; duplicates inside the batch merge too.

        Every engram is validated before anything is written. When a duplicate carries tags the
        stored engram lacks, they are added to it (the union, stored order first) and the updated
        engram comes back with ``created=False``: re-learning a statement never drops its new tags.

        Args:
            engrams: the engrams to store.
            dedupe: merge exact duplicates (same ``content_hash``, scope, active). ``False`` writes
                every engram: conversation ingest uses it, because two equal turns of different
                sessions are two events (it deduplicates by provenance instead, see
                :mod:`plur.formats.chats`).

        Returns:
            One ``(stored engram, created)`` per input, in order.
        """
        batch = list(engrams)
        for e in batch:
            self._check_engram(e)
        out: list[tuple[Engram, bool]] = []
        folders: set[Path] = set()
        with self._write_lock():
            self._sync_for_write()
            try:
                for e in batch:  # each file fsynced before its rename; the folder once, before returning
                    dup = self._duplicate_of(e.scope, e.content_hash) if dedupe and e.status == "active" else None
                    if dup is not None:
                        new_tags = tuple(t for t in e.tags if t not in dup.tags)
                        if new_tags:
                            dup = dup.replace(tags=dup.tags + new_tags)
                            folders.add(self._write_engram(dup, "updated", sync_folder=False))
                        out.append((dup, False))
                        continue
                    e = self._free_id(e)
                    folders.add(self._write_engram(e, "added", sync_folder=False))
                    out.append((e, True))
            finally:
                for folder in folders if self.fsync else ():
                    fsync_dir(folder)
        with self._mutex:  # saved behind, at most every AUTOSAVE_INTERVAL_S: a save each batch is O(n) a batch
            self._autosave(sum(1 for _, c in out if c))
        return out

    def put(self, engram: Engram, *, expected: str | None = None) -> Engram:
        """Overwrite the stored engram with the same id (an update).

        Byte-stable: when the YAML is identical to the file on disk nothing is written.
        Checked under the write lock, against the file as it is now: ``expected`` (the
        :func:`~plur.store.engram.engram_version` the caller started from) must still match, and
        an active engram may not take the exact text of another active engram in its scope.

        Raises:
            NotFoundError: no engram with this id is stored (use :meth:`add`).
            ConflictError: the stored engram changed since ``expected`` was read; nothing written.
            DuplicateError: another active engram in the scope holds this text (its id in ``other_id``).
            ValidationError: statement over ``max_statement_bytes``.
            StoreError: the lock could not be taken or the disk write failed.
        """
        self._check_engram(engram)
        with self._write_lock():
            self._sync_for_write()
            name = self._name_for(engram.id)
            self._check_one(name)
            if engram.id not in self._by_id:
                raise NotFoundError(self._not_found_message(engram.id) + "; use add() for a new engram")
            current = self._by_id[engram.id]
            if expected is not None and engram_version(current) != expected:
                raise ConflictError(
                    f"engram {engram.id} changed since you opened it (version {expected}, now "
                    f"{engram_version(current)}); nothing was saved: reload it and make your change again")
            others = sorted(i for i in self._by_key.ids(engram.scope, engram.content_hash, self._by_id)
                            if i != engram.id)
            same = current.status == "active" and (current.scope, current.content_hash) == (
                engram.scope, engram.content_hash)  # a duplicate from before this edit is not refused
            if engram.status == "active" and others and not same:
                other = self._by_id[others[0]]
                raise DuplicateError(
                        f"engram {other.id} in scope {engram.scope} already says exactly this; nothing was "
                        f"saved: forget {engram.id} instead (or edit {other.id})", other.id)
            data = engram.to_yaml().encode("utf-8")
            try:
                on_disk = (self.root / name).read_bytes()
            except FileNotFoundError:
                on_disk = None
            if on_disk == data:
                return self._by_id[engram.id]
            self._write_engram(engram, "updated", data)
        return engram

    def delete(self, engram_id: str) -> Engram:
        """Remove an engram's file.

        Returns:
            The removed engram.

        Raises:
            InvalidIdError: malformed id.
            NotFoundError: no such engram.
            StoreError: the lock could not be taken or the file could not be removed.
        """
        validate_id(engram_id)
        with self._write_lock():
            self._sync_for_write()
            name = self._name_for(engram_id)
            path = self.root / name
            self._check_one(name)
            gone = self._by_id.get(engram_id)
            if gone is None:
                raise NotFoundError(self._not_found_message(engram_id))
            self._writes.append(name)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StoreError(f"cannot remove {path} ({exc}); check the folder's permissions") from None
            if self.fsync:
                fsync_dir(path.parent)
            self._forget_entry(name)
        return gone

    # -- health ---------------------------------------------------------------------------
    def quarantined(self) -> list[dict[str, Any]]:
        """Files moved aside because they failed to load, oldest first.

        Returns:
            Dicts ``{path, original, reason, when}``: ``path`` is where the file is
            now (``<home>/quarantine/...``), ``original`` where it was, ``when`` ISO-8601
            UTC. Files that could not be moved (read-only home) appear with
            ``moved: False`` and ``path == original``.
        """
        out = list_quarantined(self.quarantine_dir)
        with self._mutex:
            out.extend(dict(v) for v in self._unmoved.values())
        out.sort(key=lambda d: d["when"])
        return out

    def quarantined_count(self) -> int:
        """``len(self.quarantined())`` without reading the ``.reason`` files (the per-command warning)."""
        with self._mutex:
            unmoved = len(self._unmoved)
        return count_quarantined(self.quarantine_dir) + unmoved

    def restore(self, name: str) -> Engram:
        """Bring a quarantined file back into the store after it was fixed; validated as on load.

        Args:
            name: the quarantined file's name (``<id>.yaml.<timestamp>``, as ``plur doctor`` lists it)
                or an engram id (its newest quarantined file).

        Returns:
            The engram now loaded from ``<home>/engrams/YYYY-MM/<id>.yaml``.

        Raises:
            NotFoundError: no quarantined file by that name or id.
            ValidationError: the file still does not load (the message says why; fix it and retry).
            ConflictError: an engram file with that id exists again, or its text duplicates an active engram.
            StoreError: the file could not be moved back (read-only home...).
        """
        return restore_quarantined(self, name)

    def discard(self, name: str) -> Path:
        """Delete a quarantined file the user does not want back (:func:`~plur.store.restore.discard_quarantined`)."""
        return discard_quarantined(self, name)

    def lock_state(self) -> dict[str, Any]:
        """Who holds the write lock, without waiting for it; see :meth:`plur.store.lock.StoreLock.state`."""
        return self._lock.state()

    def manifest_info(self) -> dict[str, Any]:
        """``{path, exists, bytes, entries}`` of the manifest file (for ``plur doctor``)."""
        info: dict[str, Any] = {"path": str(self.manifest_path), "exists": self.manifest_path.exists(),
                                "bytes": 0}
        with suppress(OSError):
            info["bytes"] = self.manifest_path.stat().st_size
        return info

    def close(self) -> None:
        """Save the manifest if the cache changed since it was last saved (after an autosave in flight)."""
        with self._mutex:
            wait_saved(self)
            if self._dirty:
                self.save_manifest()

    def __enter__(self) -> "EngramStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals: writing ---------------------------------------------------------------
    def _check_engram(self, engram: Engram) -> None:
        if not isinstance(engram, Engram):
            raise ValidationError(f"expected an Engram, got {type(engram).__name__} {engram!r:.60}")
        if len(engram.statement.encode("utf-8")) > self.max_statement_bytes:
            raise ValidationError(self._size_message(engram.statement))

    def _name_for(self, engram_id: str) -> str:
        return name_for(self.root, self._entries, self._unmoved, engram_id)

    def _free_id(self, e: Engram) -> Engram:
        for _ in range(100):
            if e.id not in self._by_id and id_is_free(self.root, self._entries, self._unmoved, e.id):
                return e
            e = dataclasses.replace(e, id=new_id(e.created))
        raise StoreError(f"could not find a free id for an engram created {e.created} after 100 tries; "
                         f"check {self.root} for an unusual number of files")

    def _write_engram(self, e: Engram, op: str, data: bytes | None = None, sync_folder: bool = True) -> Path:
        """Write ``e`` where its file is (:meth:`_name_for`); returns the folder written in."""
        data = e.to_yaml().encode("utf-8") if data is None else data
        name = self._name_for(e.id)
        path = self.root / name
        self._writes.append(name)  # intent first: a writer killed after this leaves a harmless extra name
        new_folder = self.fsync and not path.parent.is_dir()
        atomic_write(path, data, sync=self.fsync, sync_folder=sync_folder)
        if new_folder:  # a new month folder: its name in engrams/ made durable too
            fsync_dir(self.root)
        try:
            st = path.stat()
        except OSError as exc:
            raise StoreError(f"wrote {path} but cannot stat it ({exc})") from None
        self._set_entry(name, FileEntry((st.st_mtime_ns, st.st_size, st.st_ino), time.time_ns(),
                                        file_sha(data), e), op)
        return path.parent
