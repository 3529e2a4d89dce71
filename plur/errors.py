"""One error hierarchy for plur.

Every message names the bad value and says how to fix it. The CLI turns any
:class:`PlurError` into a single line on stderr and a non-zero exit code
(see ``plur.cli``); library callers can catch the subclasses.
"""

from __future__ import annotations

from types import ModuleType


class PlurError(Exception):
    """Base class of every error plur raises on purpose.

    Attributes:
        exit_code: process exit status the CLI uses for this kind of error.
    """

    exit_code: int = 1


class ValidationError(PlurError, ValueError):
    """A value (statement, scope, type, timestamp, setting...) is malformed."""

    exit_code = 2


class InvalidIdError(ValidationError):
    """An engram id does not match ``ENG-YYYY-MM-DD-<6 hex>`` (and so could be a path)."""


class NotFoundError(PlurError, KeyError):
    """No engram with the given id exists in the store."""

    exit_code = 3

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "not found"


class StoreError(PlurError):
    """The store on disk cannot be read or written (permissions, corrupt manifest...)."""

    exit_code = 4


class DatabaseUnavailableError(StoreError):
    """The PostgreSQL store (setting ``store``) cannot be reached: server down, restarting, refused.

    Nothing is half-written: every write is one transaction. Exit code 9; the service answers 503.
    """

    exit_code = 9


class ConfigError(ValidationError):
    """A setting in config.toml, a PLUR_* variable or an argument is invalid."""


class ConflictError(PlurError):
    """A write would lose someone else's change or break a store rule; nothing was written.

    Raised when an update's ``expected`` version no longer matches the stored engram
    ("changed since you opened it"), or when an edit would give an engram the exact text of
    another active engram in the same scope (see :class:`DuplicateError`). Exit code 8; the web
    page answers 409.
    """

    exit_code = 8


class DuplicateError(ConflictError):
    """An edit would make an engram an exact duplicate of another active engram in its scope.

    Attributes:
        other_id: the id of the engram that already holds that text.
    """

    def __init__(self, message: str, other_id: str) -> None:
        super().__init__(message)
        self.other_id = other_id


class ModelError(PlurError):
    """An embedding model cannot be resolved, verified or loaded."""

    exit_code = 5


class MissingDependencyError(PlurError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    exit_code = 6


def install_hint(extra: str) -> str:
    """The command that installs plur's optional ``extra`` into this interpreter.

    From a source checkout (the folder above the imported ``plur`` package holds plur's ``pyproject.toml``):
    ``pip install -e '<checkout>[extra]'``. From a wheel (no checkout to point at; the project called ``plur``
    on PyPI is another one, so ``plur[extra]`` would fetch the wrong package): the extra's own requirements as
    the installed ``plur-memory`` lists them, e.g. ``pip install 'mcp<3,>=2.3'``.
    """
    import shlex
    import sys

    root = _checkout()
    if root is not None:
        return f"{sys.executable} -m pip install -e '{root}[{extra}]'"
    try:
        from importlib.metadata import PackageNotFoundError, requires

        listed = requires("plur-memory") or []
    except PackageNotFoundError:
        listed = []
    reqs = [r.split(";")[0].strip() for r in listed if f'extra == "{extra}"' in r.replace("'", '"')]
    if reqs:
        return f"{sys.executable} -m pip install " + " ".join(shlex.quote(r) for r in reqs)
    return f"{sys.executable} -m pip install '<the plur-memory wheel>[{extra}]'"


def _checkout() -> str | None:
    """The source checkout plur is imported from, or ``None`` (an installed wheel)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    try:
        ours = 'name = "plur-memory"' in (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        ours = False
    return str(root) if ours else None


def require(module: str, extra: str) -> ModuleType:
    """Import an optional module or raise :class:`MissingDependencyError`.

    Args:
        module: dotted module name, e.g. ``"usearch.index"``.
        extra: the pip extra that provides it, e.g. ``"embed"``.

    Returns:
        The imported module.

    Raises:
        MissingDependencyError: naming :func:`install_hint` as the fix.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        import sys

        top = sys.modules.get(module.partition(".")[0])
        origin = getattr(top, "__file__", None)
        if "." in module and top is not None and getattr(top, "__path__", None) is None and origin:
            # e.g. a script saved as anthropic.py: `import anthropic` finds it, not the installed package
            raise MissingDependencyError(
                f"{module.partition('.')[0]!r} is {origin}, a file that hides the installed package "
                f"(so {module!r} cannot load); rename that file"
            ) from exc
        raise MissingDependencyError(
            f"optional dependency {module!r} is not installed ({exc}); "
            f"install it with: {install_hint(extra)}"
        ) from exc


class ServiceError(PlurError):
    """The local plur service cannot start (port in use, bad address) or does not answer in time."""

    exit_code = 7


class AuthError(ServiceError):
    """A request to the service's JSON API carried no token or the wrong one (HTTP 401)."""


class ForbiddenError(PlurError):
    """A team member's request reads or writes a scope it has no grant for (HTTP 403); nothing was written.

    Exit code 10. The message names the scope and the command the team's administrator runs to grant it.
    """

    exit_code = 10
