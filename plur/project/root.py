"""The folder a project is: its git repository's root, and the plain scope name that folder gives.

Pure reads of the file system, no writes, no registry (that is :mod:`plur.project.registry`):

* :func:`git_root` walks up from a folder to the first one holding ``.git``. A ``.git`` *folder* makes
  that folder the root. A ``.git`` *file* (``gitdir: <path>``) is a linked worktree or a submodule: a
  worktree's git dir holds ``commondir``, which leads to the main repository's ``.git``, so every
  worktree of a repository is that repository's project, but only a worktree that repository lists
  (git's own backlink check, see :func:`_main_root`): a planted ``.git`` file is its folder's own
  project. A submodule's git dir has no ``commondir``, so a submodule is its own project. No
  repository above the folder: the folder itself.
* :func:`plain_name` keeps the letters and digits of any script of the root's last name (NFC, so a
  macOS NFD name gives the same scope as a Linux one) plus ``_ . @ -``; every run of other characters
  (spaces, emoji, punctuation, combining marks that do not compose) becomes one ``-``, and ``-`` at
  either end is dropped. A name with nothing left (``/``, a folder named only ``🚀``) is
  ``folder-<8 hex of sha256(path)>``: never ``global``.

The DeepSeek Harness plugin carries the same rules in JavaScript (``hosts/dsh/src/project.js``);
``tests/data/project_identity.json`` is the one table of cases both test suites run.
"""

from __future__ import annotations

import os
import unicodedata

#: Longest scope name after ``project:``, characters (as :data:`plur.store.engram.SCOPE_RE`).
NAME_MAX_CHARS = 128
#: Largest ``.git`` file or ``commondir`` file read, bytes (they hold one path).
_MAX_POINTER_BYTES = 4096


def canonical(folder: str | os.PathLike[str]) -> str:
    """The absolute, symlink-free form of ``folder`` (``~`` expanded) that the registry keys by."""
    return os.path.realpath(os.path.abspath(os.path.expanduser(os.fspath(folder))))


def _read_pointer(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_MAX_POINTER_BYTES)
    except OSError:
        return None
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def _pointed(base: str, text: str) -> str:
    """``text`` (a path a git pointer file holds) made absolute against ``base``, normalised."""
    return os.path.normpath(text if os.path.isabs(text) else os.path.join(base, text))


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _main_root(folder: str) -> str:
    """The root of the repository whose ``.git`` file sits in ``folder`` (a worktree: the main one).

    A ``.git`` file is followed only to a worktree its repository lists, as ``git worktree`` checks
    one (``validate_worktree`` in git's ``worktree.c``): the git dir it names sits in the common
    dir's ``worktrees/``, and that admin dir's own ``gitdir`` file points back to this ``.git``
    file. Anything else (a ``.git`` file planted in a downloaded folder naming another repository,
    an admin dir borrowed from a real worktree) leaves ``folder`` its own project.
    """
    text = _read_pointer(os.path.join(folder, ".git"))
    if not text or not text.startswith("gitdir:"):
        return folder
    gitdir = _pointed(folder, text[len("gitdir:"):].strip())
    common = _read_pointer(os.path.join(gitdir, "commondir"))
    if not common:
        return folder  # a submodule (or a plain gitdir link): its own repository
    common = _pointed(gitdir, common)
    if os.path.basename(common) != ".git":
        return folder  # a worktree of a bare repository or a submodule: the worktree is the project
    back = _read_pointer(os.path.join(gitdir, "gitdir"))
    if not back or not _same(_pointed(gitdir, back), os.path.join(folder, ".git")):
        return folder  # the repository does not list this folder as its worktree
    if not _same(os.path.dirname(os.path.realpath(gitdir)), os.path.join(common, "worktrees")):
        return folder  # not an admin dir of that repository
    return os.path.realpath(os.path.dirname(common))


def git_root(folder: str) -> str | None:
    """The repository root of canonical ``folder`` (see the module docstring), ``None`` outside any."""
    here = folder
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here if os.path.isdir(os.path.join(here, ".git")) else _main_root(here)
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _kept(ch: str) -> bool:
    return ch.isalnum() or ch in "_.@-"


def plain_name(root: str) -> str:
    """The scope name ``root`` gives before the registry tells clones apart (see the module docstring).

    Returns:
        1..128 characters that :data:`plur.store.engram.SCOPE_RE` accepts after ``project:``.
    """
    base = unicodedata.normalize("NFC", os.path.basename(root.rstrip("/\\")) if root.strip("/\\") else "")
    out: list[str] = []
    for ch in base:
        if _kept(ch):
            out.append(ch)
        elif out and out[-1] != "-":
            out.append("-")
    name = "".join(out).strip("-")[:NAME_MAX_CHARS].rstrip("-")
    if not name or not any(c.isalnum() for c in name):
        import hashlib

        name = "folder-" + hashlib.sha256(unicodedata.normalize("NFC", root).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return name


def with_suffix(name: str, n: int) -> str:
    """``name`` told apart as the ``n``-th root of that name (``app`` -> ``app-2``), within 128 characters."""
    tail = f"-{n}"
    return name[: NAME_MAX_CHARS - len(tail)] + tail
