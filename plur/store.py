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
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from .engram import ID_RE, Engram, content_hash, format_time, new_id, validate_id
from .errors import NotFoundError, StoreError, ValidationError

#: Default statement limit in UTF-8 bytes (1 MiB); see the module docstring.
DEFAULT_MAX_STATEMENT_BYTES = 1 << 20
#: Entries whose mtime is this close (ns) to when they were read are re-checked by content.
#: 2 s covers coarse timestamps (FAT 2 s, HFS+ 1 s, ext4/xfs one jiffy).
RACY_WINDOW_NS = 2_000_000_000
#: Temp files of atomic writes start with this; loading skips every name starting with ".".
TMP_PREFIX = ".tmp-"
#: A temp file older than this (s) is stale even when seen without the lock.
STALE_TMP_S = 600.0
#: Save the manifest on refresh once this many files had to be read (not served by the manifest).
AUTOSAVE_READS = 32
MANIFEST_FORMAT = "plur-store-manifest"
JOURNAL_MAGIC = "plur-store-journal"
#: The journal is started afresh (new epoch) beyond this size, in bytes (~9,000 writes).
JOURNAL_MAX_BYTES = 256 * 1024
MANIFEST_VERSION = 1


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


@dataclass
class _Entry:
    """What the store knows about one file (by file name)."""

    key: tuple[int, int, int]  # (st_mtime_ns, st_size, st_ino)
    observed_ns: int  # wall clock (time.time_ns) when the bytes were last read
    sha: str  # sha256 hex of the file bytes (first 32 hex)
    engram: Engram | None  # None only for manifest entries not yet materialised
    data: dict[str, Any] | None = None  # Engram.to_dict() from the manifest

    def racy(self) -> bool:
        return self.key[0] + RACY_WINDOW_NS > self.observed_ns


def _merge_op(prev: str | None, new: str) -> str | None:
    """Combine two successive change kinds for one id (None = net no change)."""
    if prev is None:
        return new
    if prev == "added":
        return None if new == "removed" else "added"
    if prev == "removed":
        return "updated" if new == "added" else "removed"
    return "removed" if new == "removed" else "updated"  # prev == "updated"


def _overwrite(path: Path, data: bytes, width: int = 80) -> None:
    """Write a small file in place, padded with spaces to ``width`` bytes.

    No truncation: on ext4 (auto_da_alloc) truncating and rewriting a file forces a
    data flush, which cost ~4 ms per write here. Readers strip the padding.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data.ljust(width), 0)
        if os.fstat(fd).st_size > max(width, len(data)):
            os.ftruncate(fd, max(width, len(data)))
    finally:
        os.close(fd)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


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
        import filelock  # light, but only writers need it

        self.home = Path(home).expanduser()
        self.root = self.home / "engrams"
        self.quarantine_dir = self.home / "quarantine"
        self.manifest_path = self.home / "index" / "manifest-store.json"
        self.lock_path = self.home / ".lock"
        self._journal_path = self.home / "index" / "store-journal"
        self._owner_path = self.home / ".lock.owner"
        self.max_statement_bytes = int(max_statement_bytes)
        self.fsync = bool(fsync)
        self.lock_timeout_s = float(lock_timeout_s)
        self._filelock_mod = filelock
        # filelock polls a non-blocking flock; its 50 ms default makes 8 contending writers
        # spend most of their time asleep; 2 ms keeps the hand-over short at small CPU cost.
        self._lock = filelock.FileLock(str(self.lock_path), timeout=self.lock_timeout_s, poll_interval=0.002,
                                       thread_local=False, preserve_lock_file=True)
        self._mutex = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self._by_id: dict[str, Engram] = {}
        self._by_key: dict[tuple[str, str], set[str]] = {}  # (scope, content_hash) -> active ids
        self._sorted: list[Engram] | None = None
        self._pending: dict[str, str] = {}  # id -> "added" | "updated" | "removed"
        self._unmoved: dict[str, dict[str, Any]] = {}  # bad files we could not move aside
        self._loaded = False  # manifest read (entries may still be unmaterialised)
        self._scanned = False  # the folder was scanned at least once
        self._journal_pos: tuple[str, int] | None = None  # (epoch, byte offset) seen under the lock
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
        :func:`plur.engram.content_hash` (NFKC, case-folded, whitespace collapsed).
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
            self._journal(path.name)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StoreError(f"cannot remove {path} ({exc}); check the folder's permissions") from None
            if self.fsync:
                self._fsync_dir(self.root)
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
        out: list[dict[str, Any]] = []
        try:
            reasons = sorted(self.quarantine_dir.glob("*.reason"))
        except OSError:
            reasons = []
        for rp in reasons:
            try:
                info = yaml.safe_load(rp.read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError, UnicodeDecodeError):
                info = {}
            if not isinstance(info, dict):
                info = {}
            out.append({
                "path": str(rp.with_suffix("")),
                "original": str(info.get("original", "")),
                "reason": str(info.get("reason", "(unreadable .reason file)")),
                "when": str(info.get("when", "")),
                "moved": True,
            })
        with self._mutex:
            out.extend(dict(v) for v in self._unmoved.values())
        out.sort(key=lambda d: d["when"])
        return out

    def lock_state(self) -> dict[str, Any]:
        """Who holds the write lock, without waiting for it.

        Returns:
            ``{path, exists, held_here, locked, owner}``: ``locked`` is True when any
            process (this one included) holds it now; ``owner`` is the last holder's
            ``{pid, since}`` as recorded in ``<home>/.lock.owner`` (may be stale when
            ``locked`` is False).
        """
        state: dict[str, Any] = {"path": str(self.lock_path), "exists": self.lock_path.exists(),
                                 "held_here": bool(self._lock.is_locked), "locked": False, "owner": None}
        with suppress(OSError, yaml.YAMLError, UnicodeDecodeError):
            owner = yaml.safe_load(self._owner_path.read_text(encoding="utf-8"))
            if isinstance(owner, dict):
                state["owner"] = owner
        if state["held_here"]:
            state["locked"] = True
        elif state["exists"]:
            probe = self._filelock_mod.FileLock(str(self.lock_path), thread_local=False,
                                                preserve_lock_file=True)
            try:
                probe.acquire(blocking=False)
            except self._filelock_mod.Timeout:
                state["locked"] = True
            else:
                probe.release()
        return state

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
            files: dict[str, list[Any]] = {}
            for name, ent in self._entries.items():
                e = ent.engram
                data = ent.data if e is None else e.to_dict()
                files[name] = [ent.key[0], ent.key[1], ent.key[2], ent.observed_ns, ent.sha,
                               e.content_hash if e is not None else "", data]
            doc = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "root": str(self.root),
                   "saved_ns": time.time_ns(), "files": files}
            try:
                text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
            except (TypeError, ValueError):  # an unknown key holds a non-JSON value: keep it out
                for row in files.values():
                    try:
                        json.dumps(row[6])
                    except (TypeError, ValueError):
                        row[6] = None
                text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
            try:
                self.manifest_path.parent.mkdir(parents=True, exist_ok=True)
                self._atomic_write(self.manifest_path, text.encode("utf-8"), sync=False)
            except (OSError, StoreError):
                return  # a manifest is only a cache; a read-only home still works
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

    def _set_entry(self, name: str, ent: _Entry, op: str | None) -> None:
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
        try:
            doc = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return
        if (not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT
                or doc.get("version") != MANIFEST_VERSION or doc.get("root") != str(self.root)
                or not isinstance(doc.get("files"), dict)):
            return
        for name, row in doc["files"].items():
            try:
                mtime, size, ino, observed, sha, _chash, data = row
                ent = _Entry((int(mtime), int(size), int(ino)), int(observed), str(sha), None,
                             data if isinstance(data, dict) else None)
            except (TypeError, ValueError):
                continue
            if ent.data is not None:
                self._entries[name] = ent

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
        self._clean_temps(temps, locked)
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

    def _materialise(self, name: str, ent: _Entry) -> bool:
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
        sha = _sha(data)
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
        self._set_entry(name, _Entry(key, now, sha, engram), op)

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
            self._unmoved[name] = {"path": str(src), "original": str(src), "reason": reason,
                                   "when": format_time(datetime.now(timezone.utc)), "moved": False}
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
                self._set_entry(name, _Entry(key, time.time_ns(), _sha(data), engram), op)
                return engram
            stamp = _stamp()
            try:
                self.quarantine_dir.mkdir(parents=True, exist_ok=True)
                dst = self.quarantine_dir / f"{name}.{stamp}"
                n = 1
                while dst.exists() or dst.with_name(dst.name + ".reason").exists():
                    dst = self.quarantine_dir / f"{name}.{stamp}-{n}"
                    n += 1
                info = {"original": str(src), "reason": reason, "when": format_time(datetime.now(timezone.utc)),
                        "bytes": len(data)}
                self._atomic_write(dst.with_name(dst.name + ".reason"),
                                   yaml.safe_dump(info, allow_unicode=True, sort_keys=False).encode("utf-8"))
                self._journal(name)
                os.replace(src, dst)
                if self.fsync:
                    self._fsync_dir(self.root)
                    self._fsync_dir(self.quarantine_dir)
            except (OSError, StoreError):
                self._unmoved[name] = {"path": str(src), "original": str(src), "reason": reason,
                                       "when": format_time(datetime.now(timezone.utc)), "moved": False}
                return None
            self._unmoved.pop(name, None)
            return None
        finally:
            ctx.__exit__(None, None, None)

    def _clean_temps(self, temps: list[str], locked: bool) -> None:
        """Remove temp files left by killed writers: all of them under the lock, old ones otherwise."""
        now = time.time()
        for n in temps:
            p = self.root / n
            with suppress(OSError):
                if locked or now - p.stat().st_mtime > STALE_TMP_S:
                    p.unlink()

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
        with self._mutex:
            outer = not self._lock.is_locked
            try:
                self.home.mkdir(parents=True, exist_ok=True)
                self._lock.acquire(timeout=self.lock_timeout_s)
            except self._filelock_mod.Timeout:
                owner = ""
                with suppress(OSError):
                    owner = " (last holder: " + self._owner_path.read_text(encoding="utf-8").replace("\n", " ").strip() + ")"
                raise StoreError(
                    f"the store at {self.home} is locked by another process{owner}; waited "
                    f"{self.lock_timeout_s:g} s for {self.lock_path}. Retry when that process finishes"
                ) from None
            except OSError as exc:
                raise StoreError(f"cannot create or lock {self.lock_path} ({exc}); check that {self.home} "
                                 "is writable") from None
            try:
                if outer:
                    with suppress(OSError):
                        _overwrite(self._owner_path, f"pid: {os.getpid()}\nsince: "
                                   f"'{format_time(datetime.now(timezone.utc))}'\n".encode("ascii"))
                yield
            finally:
                self._lock.release()

    def _journal(self, name: str) -> None:
        """Under the lock, before touching ``name``: append it to the journal (rotating when large)."""
        try:
            size = self._journal_path.stat().st_size
        except OSError:
            size = -1
        # stale: others appended since our last sync (e.g. a quarantine during a lock-free refresh)
        stale = self._journal_pos is None or size != self._journal_pos[1]
        try:
            if stale or size < 0 or size > JOURNAL_MAX_BYTES or not self._journal_pos[0]:
                # new epoch: every other process does one full scan at its next write
                epoch = secrets.token_hex(8)
                header = f"{JOURNAL_MAGIC} {epoch}\n".encode("ascii")
                self._atomic_write(self._journal_path, header, sync=False)
                self._journal_pos = (epoch, len(header))
            with open(self._journal_path, "ab") as f:
                f.write(name.encode("ascii") + b"\n")
                self._journal_pos = (self._journal_pos[0], f.tell())
        except (OSError, StoreError):
            self._journal_pos = None  # others fall back to a full scan; the write itself goes on
        if stale:
            self._journal_pos = None  # we skipped others' names: our next write does a full scan

    def _sync_for_write(self) -> None:
        """Under the lock: catch up with other writers (journal tail, else a full scan)."""
        try:
            with open(self._journal_path, "rb") as f:
                header = f.readline()
                parts = header.decode("ascii", "replace").split()
                epoch = parts[1] if len(parts) == 2 and parts[0] == JOURNAL_MAGIC else None
                if (self._scanned and epoch is not None and self._journal_pos is not None
                        and self._journal_pos[0] == epoch):
                    f.seek(self._journal_pos[1])
                    tail = f.read()
                    if tail.endswith(b"\n") or not tail:
                        for name in set(tail.decode("ascii", "replace").split()):
                            if name.endswith(".yaml") and ID_RE.match(name[: -len(".yaml")]):
                                self._check_one(name)
                        self._journal_pos = (epoch, self._journal_pos[1] + len(tail))
                        return
                end = f.seek(0, os.SEEK_END)
        except OSError:
            epoch, end = None, -1
        # Other plur writers always replace files (new inode), so equal keys can be trusted
        # here; same-tick in-place hand edits are caught by the next refresh().
        self._full_refresh(locked=True, check_racy=False)
        # caught up; a missing (-1) or headerless journal ("" epoch) is started afresh by the next write
        self._journal_pos = (epoch, end) if epoch is not None else ("", end if end else -1)

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
        self._journal(path.name)  # intent first: a writer killed after this leaves a harmless extra name
        self._atomic_write(path, data)
        try:
            st = path.stat()
        except OSError as exc:
            raise StoreError(f"wrote {path} but cannot stat it ({exc})") from None
        self._set_entry(path.name, _Entry((st.st_mtime_ns, st.st_size, st.st_ino), time.time_ns(),
                                          _sha(data), e), op)

    def _atomic_write(self, path: Path, data: bytes, sync: bool | None = None) -> None:
        """temp file in the same folder -> write -> flush -> fsync -> os.replace -> fsync folder."""
        sync = self.fsync if sync is None else sync
        folder = path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=path.suffix or ".tmp", dir=folder)
        except OSError as exc:
            raise StoreError(f"cannot write in {folder} ({exc}); check that it exists and is writable") from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if sync:
                    os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException as exc:
            with suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise StoreError(f"cannot write {path} ({exc}); check free space and permissions") from None
            raise
        if sync:
            self._fsync_dir(folder)

    @staticmethod
    def _fsync_dir(folder: Path) -> None:
        try:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            return  # e.g. Windows: directories cannot be opened; rename is already durable enough there
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

