"""The local web page (``plur serve``): engrams, recall statistics and a recall playground.

Needs the ``web`` extra (starlette, uvicorn, jinja2, python-multipart); those load only
when :func:`create_app` or :func:`serve` is called, so ``import plur.web`` stays light.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the thin CLI client imports plur.web.display (typing: ~2 ms)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

__all__ = ["create_app", "serve"]

if TYPE_CHECKING:  # pragma: no cover
    from .server import create_app, serve


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module 'plur.web' has no attribute {name!r}")
