"""``<home>/projects.json``: which scope each project root has, and which folders are bound to a project.

The file (JSON, owner-only, written atomically under the store's lock ``<home>/.lock``)::

    {"version": 1,
     "roots": {"/home/u/web": "project:web", "/home/u/clone2/web": "project:web-2"},
     "bound": {"/home/u/api": "project:web"}}

``roots`` is first come, first served: the first root registered with a name keeps the plain name
(:func:`plur.project.root.plain_name`), the next one of that name gets ``-2``, then ``-3``... A root's
scope never changes once registered, so its notes stay where they are. ``bound`` folders (and
everything under them) belong to the project named, whatever repository they sit in.

Readers never lock and never write: a missing file is an empty registry. A file that is not a valid
registry is an error naming it (it is never overwritten silently).
"""

from __future__ import annotations

import json
import os
from collections import namedtuple
from contextlib import suppress
from pathlib import Path

from ..errors import StoreError
from .root import plain_name, with_suffix

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the hook resolves a project per prompt, importing typing is ~2 ms
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

FILE_NAME = "projects.json"
VERSION = 1
#: Largest registry file read, bytes (tens of thousands of projects).
MAX_BYTES = 16 * 1024 * 1024
#: Seconds a registration waits for another process's write lock (a hook answers within 10 s).
LOCK_TIMEOUT_S = 5.0


class Registry(namedtuple("Registry", "roots bound")):
    """What ``<home>/projects.json`` holds (immutable; a change makes a new one).

    A named tuple rather than a dataclass: the Claude Code hook imports this for every prompt, and
    ``dataclasses`` pulls in ``inspect`` (~10 ms of a cold process).

    Attributes:
        roots: canonical root folder -> ``project:<name>``.
        bound: canonical bound folder -> ``project:<name>``.
    """

    __slots__ = ()

    def __new__(cls, roots: dict[str, str] | None = None, bound: dict[str, str] | None = None) -> "Registry":
        return super().__new__(cls, dict(roots or {}), dict(bound or {}))

    def scope_for_new(self, root: str) -> str:
        """The scope ``root`` would get if registered now (its plain name, or the first free suffix)."""
        taken = set(self.roots.values())
        base = plain_name(root)
        scope, n = f"project:{base}", 1
        while scope in taken:
            n += 1
            scope = f"project:{with_suffix(base, n)}"
        return scope

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "roots": dict(sorted(self.roots.items())), "bound": dict(sorted(self.bound.items()))}


def path_of(home: Path) -> Path:
    return Path(home) / FILE_NAME


def _check_map(data: dict[str, Any], key: str, where: Path) -> dict[str, str]:
    value = data.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.startswith("project:")
                                              for k, v in value.items()):
        raise StoreError(f"{where}: '{key}' must map folder paths to 'project:<name>' scopes; fix the file by hand "
                         "or move it aside (plur recreates it)")
    return dict(value)


def load(home: Path) -> Registry:
    """The registry of ``home`` (empty when the file or the home does not exist).

    Raises:
        StoreError: the file is over :data:`MAX_BYTES` ("too large"), not JSON or not a registry (the message
            names it and the fix).
    """
    where = path_of(home)
    try:
        with open(where, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
            size = os.fstat(fh.fileno()).st_size
    except FileNotFoundError:
        return Registry()
    except NotADirectoryError:
        return Registry()
    except OSError as exc:
        raise StoreError(f"cannot read {where} ({exc}); check its permissions") from None
    if len(raw) > MAX_BYTES:
        raise StoreError(f"{where} is {max(size, len(raw))} bytes, too large: a project registry is at most "
                         f"{MAX_BYTES} bytes; move it aside (plur recreates it; roots then register again, first "
                         "come first served)")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise StoreError(f"{where} is not valid JSON ({exc}); fix it by hand or move it aside "
                         "(plur recreates it; roots then register again, first come first served)") from None
    if not isinstance(data, dict) or data.get("version", VERSION) != VERSION:
        raise StoreError(f"{where} is not a plur project registry of version {VERSION}; move it aside")
    return Registry(roots=_check_map(data, "roots", where), bound=_check_map(data, "bound", where))


def _save(home: Path, registry: Registry) -> None:
    from ..store.atomic import atomic_write

    data = json.dumps(registry.to_json(), ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    atomic_write(path_of(home), data)
    with suppress(OSError):
        os.chmod(path_of(home), 0o600)


def update(home: Path, change: Any) -> Registry:
    """Apply ``change(registry) -> Registry`` to the file under the store's write lock; the new registry.

    Raises:
        StoreError: the lock was held too long, the home is not writable, or the file is invalid.
    """
    from ..store.lock import StoreLock

    with StoreLock(Path(home), LOCK_TIMEOUT_S).hold():
        old = load(home)
        new = change(old)
        if new != old:
            _save(home, new)
        return new


def register(home: Path, root: str) -> str:
    """The scope of ``root``, registering it (first come keeps the plain name) when it is new."""
    def change(reg: Registry) -> Registry:
        if root in reg.roots:
            return reg
        return Registry(roots={**reg.roots, root: reg.scope_for_new(root)}, bound=reg.bound)

    return update(home, change).roots[root]
