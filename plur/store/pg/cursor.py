"""How far this home has applied the database's change feed, kept in ``<home>/index/pg-feed.json``.

A machine that was off while another forgot engrams learns of it from the feed rows after this cursor
(:meth:`plur.store.pg.mirror.PgMirror._load`) and erases its own derived copies. The file names the store
by a hash of its URI without the password, so pointing a home at another database starts afresh.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import suppress
from pathlib import Path

from .connect import redact


def _store_id(uri: str) -> str:
    return hashlib.sha256(redact(uri).encode("utf-8")).hexdigest()[:16]


def load_cursor(path: Path, uri: str) -> int | None:
    """The seq this home applied last for this store, or None (no file, another store, unreadable)."""
    with suppress(OSError, ValueError, TypeError, KeyError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["store"] == _store_id(uri) and isinstance(data["cursor"], int):
            return int(data["cursor"])
    return None


def home_id(path: Path) -> str:
    """This home's random name in ``plur_homes`` (kept in the cursor file; a new one when the file is gone)."""
    with suppress(OSError, ValueError, TypeError, KeyError):
        got = json.loads(path.read_text(encoding="utf-8"))["home"]
        if isinstance(got, str) and 8 <= len(got) <= 64:
            return got
    import secrets

    return secrets.token_hex(12)


def save_cursor(path: Path, uri: str, cursor: int, home: str | None = None) -> None:
    """Record ``cursor`` (atomically; a home that cannot be written keeps the old value, which only means
    erasing some derived copies a second time, or a full resync after a pruning)."""
    from ..atomic import atomic_write, private_dirs

    data = {"store": _store_id(uri), "cursor": int(cursor), **({"home": home} if home else {})}
    with suppress(OSError):
        private_dirs(path.parent)
        atomic_write(path, json.dumps(data).encode("utf-8"), sync=False)
