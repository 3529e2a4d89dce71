"""EngramStore: one YAML file per engram under ``<home>/engrams/<id>.yaml``.

Layout of a home folder as far as the store is concerned::

    <home>/engrams/<id>.yaml               one engram per file (Engram.to_yaml, UTF-8)
    <home>/engrams/.tmp-*.yaml             in-flight atomic writes; never loaded, removed when stale
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
* **Nothing is lost to bad input.** A file that fails to parse or validate, or
  whose name does not match its ``id``, is moved to ``<home>/quarantine/`` with
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
:mod:`plur.store.manifest` (the manifest and the writer journal),
:mod:`plur.store.lock` (the write lock and its owner record).
"""

from __future__ import annotations

import dataclasses
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import manifest as store_manifest
from .atomic import STALE_TMP_S, TMP_PREFIX, atomic_write, clean_stale_temps, fsync_dir
from .engram import Engram, content_hash, new_id, validate_id
from ..errors import NotFoundError, StoreError, ValidationError
from .quarantine import list_quarantined, move_aside, unmoved_record
from .lock import StoreLock
from .manifest import (
    JOURNAL_MAGIC,
    JOURNAL_MAX_BYTES,
    MANIFEST_FORMAT,
    MANIFEST_VERSION,
    RACY_WINDOW_NS,
    FileEntry,
    JournalTail,
    WriterJournal,
    file_sha,
    load_manifest,
)

__all__ = [
    "AUTOSAVE_READS", "DEFAULT_MAX_STATEMENT_BYTES", "JOURNAL_MAGIC", "JOURNAL_MAX_BYTES", "MANIFEST_FORMAT",
    "MANIFEST_VERSION", "RACY_WINDOW_NS", "STALE_TMP_S", "TMP_PREFIX", "Changes", "EngramStore",
]

#: Default statement limit in UTF-8 bytes (1 MiB); see the module docstring.
DEFAULT_MAX_STATEMENT_BYTES = 1 << 20
#: Save the manifest on refresh once this many files had to be read (not served by the manifest).
AUTOSAVE_READS = 32


@dataclass(frozen=True)
class Changes:
    """Ids of engrams that changed since the previous :meth:`EngramStore.refresh`.

    Includes every change, whoever made it: writes through this instance, other
    processes, hand edits. ``bool(changes)`` is False when nothing changed.
    """

    added: frozenset[str] = frozenset()
    updated: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def _merge_op(prev: str | None, new: str) -> str | None:
    """Combine two successive change kinds for one id (None = net no change)."""
    if prev is None:
        return new
    if prev == "added":
        return None if new == "removed" else "added"
    if prev == "removed":
        return "updated" if new == "added" else "removed"
    return "removed" if new == "removed" else "updated"  # prev == "updated"


class EngramStore:
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

    def __init__(self, home: str | os.PathLike[str], max_statement_bytes: int = DEFAULT_MAX_STATEMENT_BYTES,
                 fsync: bool = True, lock_timeout_s: float = 30.0) -> None:
        self.home = Path(home).expanduser()
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
        self._by_key: dict[tuple[str, str], set[str]] = {}  # (scope, content_hash) -> active ids
        self._sorted: list[Engram] | None = None
        self._pending: dict[str, str] = {}  # id -> "added" | "updated" | "removed"
        self._unmoved: dict[str, dict[str, Any]] = {}  # bad files we could not move aside
        self._loaded = False  # manifest read (entries may still be unmaterialised)
        self._scanned = False  # the folder was scanned at least once
        self._dirty = False  # in-memory state differs from the saved manifest

    # -- paths ----------------------------------------------------------------------------
    def path_for(self, engram_id: str) -> Path:
        """``<home>/engrams/<id>.yaml`` for a valid id.

        Raises:
            InvalidIdError: ``engram_id`` is not ``ENG-YYYY-MM-DD-<6 hex>`` (so never a path).
        """
        return self.root / f"{validate_id(engram_id)}.yaml"

    def iter_files(self) -> Iterator[Path]:
        """Paths of the engram files on disk now (``*.yaml``, temp files excluded), unsorted."""
        try:
            it = os.scandir(self.root)
        except FileNotFoundError:
            return
        with it:
            for e in it:
                if not e.name.startswith(".") and e.name.endswith(".yaml") and e.is_file():
                    yield Path(e.path)

    # -- reading --------------------------------------------------------------------------
    def refresh(self) -> Changes:
        """Bring the cache up to date with the folder; re-read only files that changed.

        A file is re-read when its ``(mtime_ns, size, inode)`` differs from what
        the cache (or the manifest, in a fresh process) recorded, or when it is
        "racy" (see :data:`RACY_WINDOW_NS`), in which case only its bytes are
        hashed and it is parsed only if they changed. Unparseable files are
        quarantined.

        Returns:
            :class:`Changes` since the previous call (first call: every engram is "added").
        """
        with self._mutex:
            self._full_refresh(locked=self._lock.is_locked)
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
            if self._sorted is None:
                self._sorted = sorted(self._by_id.values(), key=lambda e: (e.created, e.id))
            return list(self._sorted)

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
        name = self.path_for(engram_id).name
        with self._mutex:
            if not self._loaded:
                self._load_manifest()
            self._check_one(name)
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

    def add_many(self, engrams: Iterable[Engram]) -> list[tuple[Engram, bool]]:
        """:meth:`add` for a batch under one lock; duplicates inside the batch merge too.

        Every engram is validated before anything is written.

        Returns:
            One ``(stored engram, created)`` per input, in order.
        """
        batch = list(engrams)
        for e in batch:
            self._check_engram(e)
        out: list[tuple[Engram, bool]] = []
        with self._write_lock():
            self._sync_for_write()
            for e in batch:
                dup = self._duplicate_of(e.scope, e.content_hash) if e.status == "active" else None
                if dup is not None:
                    out.append((dup, False))
                    continue
                e = self._free_id(e)
                self._write_engram(e, "added")
                out.append((e, True))
        if sum(1 for _, c in out if c) >= AUTOSAVE_READS:
            self.save_manifest()
        return out

    def put(self, engram: Engram) -> Engram:
        """Overwrite the stored engram with the same id (an update).

        Byte-stable: when the YAML is identical to the file on disk nothing is written.

        Raises:
            NotFoundError: no engram with this id is stored (use :meth:`add`).
            ValidationError: statement over ``max_statement_bytes``.
            StoreError: the lock could not be taken or the disk write failed.
        """
        self._check_engram(engram)
        with self._write_lock():
            self._sync_for_write()
            name = f"{engram.id}.yaml"
            self._check_one(name)
            if engram.id not in self._by_id:
                raise NotFoundError(self._not_found_message(engram.id) + "; use add() for a new engram")
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
        path = self.path_for(engram_id)
        with self._write_lock():
            self._sync_for_write()
            self._check_one(path.name)
            gone = self._by_id.get(engram_id)
            if gone is None:
                raise NotFoundError(self._not_found_message(engram_id))
            self._writes.append(path.name)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StoreError(f"cannot remove {path} ({exc}); check the folder's permissions") from None
            if self.fsync:
                fsync_dir(self.root)
            self._forget_entry(path.name)
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

    def save_manifest(self) -> None:
        """Write ``<home>/index/manifest-store.json`` now (atomic; no fsync: it is a cache)."""
        with self._mutex:
            if not self._loaded:
                return
            if store_manifest.save_manifest(self.manifest_path, self.root, self._entries):
                self._dirty = False

    def close(self) -> None:
        """Save the manifest if the cache changed since it was last saved."""
        with self._mutex:
            if self._dirty:
                self.save_manifest()

    def __enter__(self) -> "EngramStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals: cache -----------------------------------------------------------------
    def _index_add(self, e: Engram) -> None:
        self._by_id[e.id] = e
        if e.status == "active":
            self._by_key.setdefault((e.scope, e.content_hash), set()).add(e.id)
        self._sorted = None

    def _index_remove(self, engram_id: str) -> None:
        old = self._by_id.pop(engram_id, None)
        if old is None:
            return
        key = (old.scope, old.content_hash)
        ids = self._by_key.get(key)
        if ids is not None:
            ids.discard(engram_id)
            if not ids:
                del self._by_key[key]
        self._sorted = None

    def _duplicate_of(self, scope: str, chash: str) -> Engram | None:
        """The oldest active engram with this content hash in this scope."""
        ids = self._by_key.get((scope, chash))
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
        engram_id = name[: -len(".yaml")]
        self._index_remove(engram_id)
        if old.engram is not None or old.data is not None:
            self._note(engram_id, "removed")
        self._dirty = True

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

    def _scan(self) -> tuple[dict[str, os.stat_result], list[str]]:
        files: dict[str, os.stat_result] = {}
        temps: list[str] = []
        try:
            it = os.scandir(self.root)
        except FileNotFoundError:
            return files, temps
        except OSError as exc:
            raise StoreError(f"cannot read the engram folder {self.root} ({exc}); check its permissions") from None
        with it:
            for e in it:
                n = e.name
                if n.startswith("."):
                    if n.startswith(TMP_PREFIX):
                        temps.append(n)
                    continue
                if not n.endswith(".yaml"):
                    continue
                try:
                    st = e.stat()
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    files[n] = st
        return files, temps

    def _full_refresh(self, locked: bool, check_racy: bool = True) -> None:
        """Scan the folder; ``check_racy=False`` trusts equal (mtime, size, inode) even for recent files."""
        if not self._loaded:
            self._load_manifest()
        files, temps = self._scan()
        clean_stale_temps(self.root, temps, locked)
        reads = 0
        for name, st in files.items():
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            ent = self._entries.get(name)
            if ent is not None and ent.key == key and not (check_racy and ent.racy()):
                if ent.engram is not None:
                    continue
                if self._materialise(name, ent):
                    continue
            reads += 1
            self._read_file(name)
        for name in [n for n in self._entries if n not in files]:
            self._forget_entry(name)
        for name in [n for n in self._unmoved if n not in files]:
            del self._unmoved[name]
        self._scanned = True
        if reads >= AUTOSAVE_READS or (self._dirty and not self.manifest_path.exists() and self._entries):
            self.save_manifest()

    def _materialise(self, name: str, ent: FileEntry) -> bool:
        """Turn a manifest entry into an Engram; False if the data no longer validates."""
        try:
            e = Engram.from_dict(ent.data or {})
        except (ValidationError, TypeError, ValueError):
            return False
        if f"{e.id}.yaml" != name:
            return False
        ent.engram, ent.data = e, None
        self._index_add(e)
        self._note(e.id, "added")
        return True

    def _check_one(self, name: str) -> None:
        """Re-check a single file (for get/put/delete)."""
        path = self.root / name
        try:
            st = path.stat()
        except FileNotFoundError:
            if name in self._entries:
                self._forget_entry(name)
            return
        ent = self._entries.get(name)
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if ent is not None and ent.key == key and not ent.racy():
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
        try:
            engram = self._parse(name, data)
        except ValidationError as exc:
            if self._quarantine(name, str(exc)) is None:  # else: it loaded when re-read under the lock
                self._forget_entry(name)
            return
        # a manifest entry never materialised was never reported: it is "added"
        op = "updated" if ent is not None and ent.engram is not None else "added"
        self._set_entry(name, FileEntry(key, now, sha, engram), op)

    def _parse(self, name: str, data: bytes) -> Engram:
        stem = name[: -len(".yaml")]
        try:
            validate_id(stem)
        except ValidationError:
            raise ValidationError(
                f"file name {name!r} is not an engram id (ENG-YYYY-MM-DD-<6 hex>.yaml); "
                "rename it to its id or import it with `plur import`") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"file is not UTF-8 text ({exc}); re-save it as UTF-8") from None
        engram = Engram.from_yaml(text)
        if engram.id != stem:
            raise ValidationError(
                f"file name {name!r} does not match its id field {engram.id!r}; "
                f"rename the file to {engram.id}.yaml or fix the id")
        if len(engram.statement.encode("utf-8")) > self.max_statement_bytes:
            raise ValidationError(self._size_message(engram.statement))
        return engram

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

    # -- internals: writing ---------------------------------------------------------------
    def _size_message(self, statement: str) -> str:
        size = len(statement.encode("utf-8"))
        return (f"statement is {size} bytes, over the limit of {self.max_statement_bytes} bytes "
                "(setting max_statement_bytes, default 1 MiB); split it or raise the limit")

    def _check_engram(self, engram: Engram) -> None:
        if not isinstance(engram, Engram):
            raise ValidationError(f"expected an Engram, got {type(engram).__name__} {engram!r:.60}")
        if len(engram.statement.encode("utf-8")) > self.max_statement_bytes:
            raise ValidationError(self._size_message(engram.statement))

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        with self._mutex, self._lock.hold():
            yield

    def _sync_for_write(self) -> None:
        """Under the lock: catch up with other writers (journal tail, else a full scan)."""
        tail = self._writes.read_tail(self._scanned)
        if tail.names is not None:
            try:
                for name in tail.names:
                    self._check_one(name)
            except OSError:
                tail = JournalTail(None, -1)
            else:
                self._writes.advance(tail)
                return
        # Other plur writers always replace files (new inode), so equal keys can be trusted
        # here; same-tick in-place hand edits are caught by the next refresh().
        self._full_refresh(locked=True, check_racy=False)
        self._writes.caught_up(tail)

    def _free_id(self, e: Engram) -> Engram:
        for _ in range(100):
            if (e.id not in self._by_id and f"{e.id}.yaml" not in self._entries
                    and f"{e.id}.yaml" not in self._unmoved and not (self.root / f"{e.id}.yaml").exists()):
                return e
            e = dataclasses.replace(e, id=new_id(e.created))
        raise StoreError(f"could not find a free id for an engram created {e.created} after 100 tries; "
                         f"check {self.root} for an unusual number of files")

    def _write_engram(self, e: Engram, op: str, data: bytes | None = None) -> None:
        data = e.to_yaml().encode("utf-8") if data is None else data
        path = self.root / f"{e.id}.yaml"
        self._writes.append(path.name)  # intent first: a writer killed after this leaves a harmless extra name
        atomic_write(path, data, sync=self.fsync)
        try:
            st = path.stat()
        except OSError as exc:
            raise StoreError(f"wrote {path} but cannot stat it ({exc})") from None
        self._set_entry(path.name, FileEntry((st.st_mtime_ns, st.st_size, st.st_ino), time.time_ns(),
                                             file_sha(data), e), op)
