"""The store's bookkeeping files: the manifest (a cache) and the writer journal.

Manifest, ``<home>/index/manifest-store.json``: JSON Lines, a header object, then one row per engram file,
``[name, mtime_ns, size, inode, observed_ns, sha256, content_hash, engram dict]`` (``name``: the file's path
under the engram folder, ``YYYY-MM/<id>.yaml`` or, flat as older plur wrote it, ``<id>.yaml``),
so a fresh process re-reads only files whose ``(mtime_ns, size, inode)`` changed. Rows are read one line
at a time and turned into engrams as they come (issue 49: version 1, one JSON document, was read whole,
then parsed whole: 57 MB of text and a dict per row at 100k engrams, ~0.6 GB of text at a million, all
held at once on top of the engrams built from it).
Entries whose mtime is within :data:`RACY_WINDOW_NS` of when they were read are
re-checked by content hash, because filesystem timestamps are coarse (the "racy
git" problem, see git's Documentation/technical/racy-git.txt). Any problem with
the file (missing, torn, other format, other root) means "no manifest".

The writer journal, ``<home>/index/store-journal``, lives in :mod:`plur.store.journal` (re-exported here).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from ..jsonio import INT_RANGE, loads
from .atomic import private_dirs
from .engram import Engram
from .journal import JOURNAL_MAGIC, JOURNAL_MAX_BYTES, JournalTail, WriterJournal  # noqa: F401 - re-exported

#: Entries whose mtime is this close (ns) to when they were read are re-checked by content.
#: 2 s covers coarse timestamps (FAT 2 s, HFS+ 1 s, ext4/xfs one jiffy).
RACY_WINDOW_NS = 2_000_000_000
MANIFEST_FORMAT = "plur-store-manifest"
#: 3 (issue 49): names may be in month folders (``YYYY-MM/<id>.yaml``). A version-2 manifest (flat names only,
#: rows alike) is read as it is; an older plur reads a version-3 one as none and scans its flat files.
MANIFEST_VERSION = 3
#: Versions :func:`load_manifest` reads.
MANIFEST_READS = (2, 3)
#: Longest header line :func:`load_manifest` reads (a version-2 or 3 header is ~150 bytes plus the root's path).
_HEAD_MAX_BYTES = 64 * 1024


def file_sha(data: bytes) -> str:
    """sha256 of a file's bytes, first 32 hex digits (128 bits)."""
    return hashlib.sha256(data).hexdigest()[:32]


#: A :class:`FileEntry`'s numbers and sha packed in one bytes object: mtime_ns, size, inode,
#: observed_ns (signed/unsigned 64-bit), the sha's 16 raw bytes.
_PACKED = struct.Struct("<qqQq16s")


class FileEntry:
    """What the store knows about one engram file (by file name).

    One per engram, so kept small (issue 30): the stat key, the time it was read and the sha live
    packed in one 48-byte ``bytes`` (81 bytes an entry, against ~330 for a dataclass holding a
    tuple, four ints and the hex text), and the class has slots.

    Args / attributes:
        key: ``(st_mtime_ns, st_size, st_ino)`` (also readable as ``mtime_ns``, ``size``, ``ino``).
        observed_ns: wall clock (``time.time_ns``) when the bytes were last read.
        sha: :func:`file_sha` of the file bytes (32 lower-case hex digits).
        engram: the parsed engram; ``None`` only for manifest entries not yet materialised.
        data: until materialised, the engram the manifest row was built into, or the row's
            ``Engram.to_dict()`` when it could not be built without a full check.
        chash: the row's ``content_hash`` (``Engram.from_manifest`` checks it against ``data``).

    Raises:
        ValueError: ``sha`` is not 32 hex digits, or a number is outside 64 bits (a damaged
            manifest row; :func:`load_manifest` skips it).
    """

    __slots__ = ("_packed", "engram", "data", "chash")

    def __init__(self, key: tuple[int, int, int], observed_ns: int, sha: str, engram: Engram | None,
                 data: dict[str, Any] | Engram | None = None, chash: str = "") -> None:
        raw = bytes.fromhex(sha)
        if len(raw) != 16:
            raise ValueError(f"file sha {sha!r} is not 32 hex digits")
        self._packed = _pack(key[0], key[1], key[2], observed_ns, raw)
        self.engram = engram
        self.data = data
        self.chash = chash

    @property
    def key(self) -> tuple[int, int, int]:
        """``(st_mtime_ns, st_size, st_ino)`` when the file was last read."""
        return _PACKED.unpack(self._packed)[:3]

    @key.setter
    def key(self, key: tuple[int, int, int]) -> None:
        *_, observed, raw = _PACKED.unpack(self._packed)
        self._packed = _pack(key[0], key[1], key[2], observed, raw)

    @property
    def mtime_ns(self) -> int:
        """``st_mtime_ns`` of the file when last read."""
        return _PACKED.unpack(self._packed)[0]

    @property
    def size(self) -> int:
        """``st_size`` in bytes."""
        return _PACKED.unpack(self._packed)[1]

    @property
    def ino(self) -> int:
        """``st_ino``."""
        return _PACKED.unpack(self._packed)[2]

    def numbers(self) -> tuple[int, int, int, int, str]:
        """``(mtime_ns, size, ino, observed_ns, sha)`` in one unpack (the manifest row's head)."""
        mtime, size, ino, observed, raw = _PACKED.unpack(self._packed)
        return mtime, size, ino, observed, raw.hex()

    @property
    def observed_ns(self) -> int:
        """Wall clock (``time.time_ns``) when the bytes were last read."""
        return _PACKED.unpack(self._packed)[3]

    @observed_ns.setter
    def observed_ns(self, value: int) -> None:
        mtime, size, ino, _, raw = _PACKED.unpack(self._packed)
        self._packed = _pack(mtime, size, ino, value, raw)

    @property
    def sha(self) -> str:
        """:func:`file_sha` of the bytes last read (hex)."""
        return _PACKED.unpack(self._packed)[4].hex()

    def racy(self) -> bool:
        """True when the file's mtime is within :data:`RACY_WINDOW_NS` of when it was read."""
        mtime, _, _, observed, _ = _PACKED.unpack(self._packed)
        return mtime + RACY_WINDOW_NS > observed

    def __repr__(self) -> str:
        return f"FileEntry(key={self.key}, observed_ns={self.observed_ns}, sha={self.sha!r}, engram={self.engram!r})"


def _pack(mtime_ns: int, size: int, ino: int, observed_ns: int, raw_sha: bytes) -> bytes:
    try:
        return _PACKED.pack(mtime_ns, size, ino, observed_ns, raw_sha)
    except struct.error as exc:
        raise ValueError(f"file entry out of range: {exc}") from None


def load_manifest(path: Path, root: Path) -> dict[str, FileEntry]:
    """Entries of the manifest at ``path`` written for the engram folder ``root``, unmaterialised.

    The file is read a line at a time and each row's engram is built as it is read
    (:meth:`Engram.from_manifest`), so no more than one row's text and dict is held beyond the entries.

    Returns:
        ``{file name: FileEntry}`` with ``engram=None`` and ``data`` set (the row's engram already built,
        or its dict when :meth:`Engram.from_manifest` was unsure); empty when the file is missing,
        unreadable, of another format/version or for another root. Malformed rows are skipped.
    """
    out: dict[str, FileEntry] = {}
    try:
        with open(path, "rb") as fh:
            first = fh.readline(_HEAD_MAX_BYTES)
            if not first.endswith(b"\n"):  # not a header line (a version-1 manifest is one long line): no manifest
                return out
            head = loads(first)
            if (not isinstance(head, dict) or head.get("format") != MANIFEST_FORMAT
                    or head.get("version") not in MANIFEST_READS or head.get("root") != root_text(root)):
                return out
            for line in fh:
                try:
                    name, mtime, size, ino, observed, sha, chash, data = loads(line)
                    ent = FileEntry((int(mtime), int(size), int(ino)), int(observed), str(sha), None,
                                    data if isinstance(data, dict) else None, str(chash))
                except (TypeError, ValueError):
                    continue
                if ent.data is not None and type(name) is str:
                    built = Engram.from_manifest(ent.data, ent.chash)
                    if built is not None:
                        ent.data = built
                    out[name] = ent
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return out


def save_behind(mirror: Any) -> None:
    """A :class:`~plur.store.mirror.FolderMirror`'s autosave off its caller's path (the caller holds its mutex).

    The entries are copied (one small object each, ~5 ms at 10k) and written by a thread of their own: a save
    in the refresh that found it due made that refresh, and the recall waiting on it, slower by the whole
    save (issue 49: up to 600 ms at 10k engrams under 4 writers on 2 busy cores). One save at a time; the
    mirror counts as saved from the copy on (a change after it marks it dirty again; a failed write too).
    """
    if not mirror._loaded or not mirror.home.is_dir():   # a deleted home is not written again (issue 38)
        return
    running = getattr(mirror, "_save_thread", None)
    if running is not None and running.is_alive():
        return
    mirror._saved_at = time.monotonic()
    snapshot: dict[str, FileEntry] = {}
    for name, ent in mirror._entries.items():
        copy = FileEntry.__new__(FileEntry)
        copy._packed, copy.engram, copy.data, copy.chash = ent._packed, ent.engram, ent.data, ent.chash
        snapshot[name] = copy
    mirror._dirty = False

    def write() -> None:
        t0 = time.perf_counter()
        if not save_manifest(mirror.manifest_path, mirror.root, snapshot):
            mirror._dirty = True
        mirror._save_cost_s = time.perf_counter() - t0  # the next autosave waits ten times this (mirror._autosave)

    import threading

    mirror._save_thread = threading.Thread(target=write, name="plur-manifest-save", daemon=True)
    mirror._save_thread.start()


def wait_saved(mirror: Any, timeout_s: float = 120.0) -> None:
    """Wait for :func:`save_behind`'s write in flight, if any (before a save of its own, at close)."""
    running = getattr(mirror, "_save_thread", None)
    if running is not None:
        running.join(timeout_s)


def _wide_int(value: Any) -> bool:
    """True when ``value`` holds an int outside :data:`plur.jsonio.INT_RANGE` (anywhere inside lists/dicts)."""
    if type(value) is int:
        return not INT_RANGE[0] <= value < INT_RANGE[1]
    if isinstance(value, dict):
        return any(_wide_int(v) for v in value.values() if type(v) is not str)
    if isinstance(value, (list, tuple)):
        return any(_wide_int(v) for v in value if type(v) is not str)
    return False


def root_text(root: Path) -> str:
    """The engram folder's path as manifest text: its bytes as UTF-8, any other byte as ``\\xNN``.

    A path that is not UTF-8 (``PLUR_HOME=$'home\\xff'``) reaches Python with surrogate escapes, which
    no UTF-8 file can hold; this spelling can, and equals ``str(root)`` for every UTF-8 path.
    """
    return os.fsencode(root).decode("utf-8", "backslashreplace")


def save_manifest(path: Path, root: Path, entries: dict[str, FileEntry]) -> bool:
    """Write the manifest atomically (temp file + rename; no fsync: it is a cache).

    Rows are streamed to the temp file one at a time, so saving a 100k-engram
    manifest never holds the whole document (tens of MB of dicts and text) in memory.
    An engram field holding a non-JSON value, or an integer outside :data:`plur.jsonio.INT_RANGE`
    (which the fast parser would read as a float), drops that row's engram data (the file is then
    re-read on the next open).

    Returns:
        True when written; False when the write failed (e.g. a read-only home).
    """
    head = json.dumps({"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "root": root_text(root),
                       "saved_ns": time.time_ns()}, ensure_ascii=False, separators=(",", ":"))
    tmp: str | None = None
    try:
        private_dirs(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-manifest-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(head + "\n")
            for name, ent in entries.items():
                e = ent.engram if ent.engram is not None else ent.data
                row = [name, *ent.numbers(), e.content_hash if isinstance(e, Engram) else ent.chash,
                       e.to_dict() if isinstance(e, Engram) else e]
                try:
                    if _wide_int(row[7]):  # loads() would read it as a float: re-read the file instead
                        raise ValueError("integer outside the 64-bit range")
                    text = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
                except (TypeError, ValueError):  # an unknown key holds a non-JSON value: keep it out
                    row[7] = None
                    text = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
                fh.write(text + "\n")
        os.replace(tmp, path)
        tmp = None
    except (OSError, UnicodeEncodeError):  # a text no UTF-8 file can hold: the manifest is only a cache
        return False
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return True
