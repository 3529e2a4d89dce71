"""The project of a folder, resolved the same way at every door (CLI, hook, MCP, service, DSH plugin).

A folder's project is, walking up from the folder, the first of:

1. a folder bound to a project (``plur project bind FOLDER --to project:x``): that scope;
2. a git repository's root (:func:`plur.project.root.git_root`; a worktree leads to its main
   repository, a submodule is its own): the scope the registry gave that root, or, for a root not
   registered yet, the one it would give (:meth:`~plur.project.registry.Registry.scope_for_new`);
3. with neither, the folder itself, named like a root.

So ``repo/packages/web`` is ``repo``'s project, two clones named ``app`` are ``project:app`` and
``project:app-2``, ``/home/u/我的项目`` is ``project:我的项目``, and nothing resolves to ``global``.

Registration (:func:`resolve` with ``register=True``): a root seen for the first time is written to
``<home>/projects.json`` *only when the home and the root exist*; in a home that does not exist yet the name
is computed without registering and nothing is created (a pure read never creates the home), and a folder
that does not exist takes no name. The first write to the home then registers it the next time any door
resolves that folder. ``plur project which`` only reads: it prints the scope without registering.

Migration from basename scopes: the DSH plugin used the folder's last name (``project:web``). The
first root registered with that name keeps the plain name, so its notes stay its own; notes filed
under another name (a nested package folder's ``project:web`` inside ``repo``, or names with
punctuation the old rule spelled differently) stay in that scope: bind the folder to it
(``plur project bind repo/packages/web --to project:web``) or read it with ``--scope project:web``.
"""

from __future__ import annotations

import os
from collections import namedtuple
from pathlib import Path

from ..errors import StoreError, ValidationError
from .registry import Registry, load, register, update
from .root import canonical, git_root, plain_name

#: The ``--scope`` value every door reads as "the project of the current folder".
HERE = "here"


class Project(namedtuple("Project", "folder root scope how registered")):
    """A folder's project (immutable; a named tuple, not a dataclass, to keep the hook's imports light).

    Attributes:
        folder: the folder asked about (canonical: absolute, symlinks resolved).
        root: the folder that is the project: a bound folder, a repository root, or ``folder`` itself.
        scope: ``project:<name>``.
        how: ``"bound"``, ``"git"`` or ``"folder"``.
        registered: whether ``<home>/projects.json`` holds ``root`` (always True for ``bound``).
    """

    __slots__ = ()


def find(folder: str | os.PathLike[str], registry: Registry) -> Project:
    """The project of ``folder`` given ``registry``; reads the file system, writes nothing."""
    start = canonical(folder)
    here = start
    root, how = start, "folder"
    while True:
        if here in registry.bound:
            return Project(start, here, registry.bound[here], "bound", True)
        if os.path.lexists(os.path.join(here, ".git")):
            root, how = git_root(here) or here, "git"
            if root in registry.bound:
                return Project(start, root, registry.bound[root], "bound", True)
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if root in registry.roots:
        return Project(start, root, registry.roots[root], how, True)
    return Project(start, root, registry.scope_for_new(root), how, False)


def resolve(folder: str | os.PathLike[str], home: str | os.PathLike[str], register_new: bool = True) -> Project:
    """The project of ``folder`` in ``home``, registering a new root when the home exists.

    Args:
        folder: any folder (need not exist; a missing one is named as it is spelled).
        home: the plur home (its ``projects.json``).
        register_new: write a new root to the registry (only ever when the home and the root exist).

    Raises:
        StoreError: ``projects.json`` is unreadable or invalid. A registration that fails (home not
            writable, lock held too long) is not an error: the computed scope is returned unregistered.
    """
    home_path = Path(home)
    project = find(folder, load(home_path))
    if project.registered or not register_new or not home_path.is_dir() or not os.path.isdir(project.root):
        return project  # a folder that does not exist is named, never registered (a typo takes no name)
    try:
        return project._replace(scope=register(home_path, project.root), registered=True)
    except StoreError:
        return project


#: Longest folder path a host may register (the service's ``/project``), bytes: Linux's ``PATH_MAX``.
MAX_FOLDER_BYTES = 4096
#: Folders of the operating system itself, never a project (macOS's too); and trees that are no folders at all.
SYSTEM_FOLDERS = frozenset(("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
                            "/media", "/mnt", "/opt", "/proc", "/run", "/sbin", "/srv", "/sys", "/usr", "/var",
                            "/Applications", "/Library", "/System", "/Users", "/Volumes", "/private",
                            "/private/etc", "/private/var"))
SYSTEM_TREES = ("/proc/", "/sys/", "/dev/")


def checked_folder(folder: str, home: str | os.PathLike[str]) -> str:
    """``folder`` canonical, when a host may register a project for it (the service's ``/project``).

    A registered root stays in ``projects.json`` for good, so the door takes only an existing folder, by an
    absolute path of at most :data:`MAX_FOLDER_BYTES` bytes without control characters, outside plur's home
    (not the home, not in it), whose project root is not a folder of the operating system
    (:data:`SYSTEM_FOLDERS`: ``/``, ``/etc``, ``/usr``...; anything under ``/proc``, ``/sys``, ``/dev``).

    Raises:
        ValidationError: which rule ``folder`` breaks, with the value and the fix.
    """
    said = f"field 'folder' {folder!r:.200}"
    size = len(folder.encode("utf-8", "surrogatepass"))
    if size > MAX_FOLDER_BYTES:
        raise ValidationError(f"field 'folder' is {size} bytes, too large: a folder path is at most "
                              f"{MAX_FOLDER_BYTES} bytes")
    bad = next((ch for ch in folder if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F), None)
    if bad is not None:
        raise ValidationError(f"{said} holds a control character (U+{ord(bad):04X}); give the folder's path as it is")
    if not os.path.isabs(folder):
        raise ValidationError(f"{said} must be an absolute folder path")
    where = canonical(folder)
    if not os.path.isdir(where):
        raise ValidationError(f"{said} is not an existing folder; give the folder the host works in")
    own = canonical(home)
    for path in (where, git_root(where) or where):
        if path == own or path.startswith(own.rstrip("/") + "/"):
            raise ValidationError(f"{said} is plur's home ({own}) or in it; a project is a folder outside the home")
        if path in SYSTEM_FOLDERS or path.startswith(SYSTEM_TREES):
            raise ValidationError(f"{said} belongs to the operating system ({path}), not a project; give the "
                                  "folder the host works in")
    return where


def scope_here(home: str | os.PathLike[str], folder: str | os.PathLike[str] | None = None) -> str:
    """The scope of ``folder`` (default: the current folder): what ``--scope here`` means."""
    return resolve(os.getcwd() if folder is None else folder, home).scope


def _checked_project_scope(scope: str) -> str:
    from ..store.engram import check_scope

    scope = check_scope(scope)
    if not scope.startswith("project:"):
        raise ValidationError(f"cannot bind a folder to {scope!r}: bind it to a project scope, e.g. "
                              "--to project:web (see `plur project list`)")
    return scope


def bind(home: str | os.PathLike[str], folder: str | os.PathLike[str], scope: str) -> Project:
    """Bind ``folder`` (and everything under it) to ``scope`` (``project:<name>``).

    Raises:
        ValidationError: ``folder`` is not an existing folder, or ``scope`` is not a project scope.
        StoreError: the registry could not be written.
    """
    scope = _checked_project_scope(scope)
    where = canonical(folder)
    if not os.path.isdir(where):
        raise ValidationError(f"cannot bind {os.fspath(folder)!r}: not an existing folder; give a folder path")
    update(Path(home), lambda reg: Registry(roots=reg.roots, bound={**reg.bound, where: scope}))
    return Project(where, where, scope, "bound", True)


def unbind(home: str | os.PathLike[str], folder: str | os.PathLike[str]) -> str:
    """Remove ``folder``'s binding; the scope it was bound to.

    Raises:
        ValidationError: ``folder`` is not bound (the message lists the bound folders).
    """
    where = canonical(folder)
    current = load(Path(home))
    if where not in current.bound:
        known = ", ".join(sorted(current.bound)) or "none"
        raise ValidationError(f"{os.fspath(folder)!r} is not bound to a project (bound folders: {known}); "
                              "see `plur project list`")
    was = current.bound[where]
    update(Path(home), lambda reg: Registry(roots=reg.roots, bound={k: v for k, v in reg.bound.items() if k != where}))
    return was


__all__ = ["HERE", "MAX_FOLDER_BYTES", "Project", "Registry", "bind", "canonical", "checked_folder", "find", "git_root", "load", "plain_name", "resolve",
           "scope_here", "unbind"]
