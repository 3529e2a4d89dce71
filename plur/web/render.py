"""Rendering for the local web page: the Jinja2 environment, its filters, JSON answers and security headers.

:mod:`plur.web.server` builds the app from these; nothing here touches memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ..errors import ValidationError, require
from . import charts
from .display import safe_text

if TYPE_CHECKING:  # pragma: no cover
    from starlette.requests import Request
    from starlette.responses import Response

TEMPLATES = Path(__file__).resolve().parent / "templates"

#: Sent with every response. No inline script/style is used anywhere, so none is allowed.
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                 b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` (and ``Cache-Control: no-store`` for pages)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        is_static = scope.get("path", "").startswith("/static/")

        async def send_wrapped(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", [])) + list(SECURITY_HEADERS)
                if not is_static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_wrapped)


def environment() -> Any:
    jinja2 = require("jinja2", "web")
    from markupsafe import Markup

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)

    def safe_svg(fn: Callable[..., str]) -> Callable[..., Any]:
        # charts.* escape every label themselves; mark their output safe for the template.
        return lambda *a, **kw: Markup(fn(*a, **kw))

    env.globals.update(bar_chart=safe_svg(charts.bar_chart), line_chart=safe_svg(charts.line_chart),
                       share_bar=safe_svg(charts.share_bar), qs=query_string)
    # visible: control and bidi characters of displayed statements shown as \uNNNN (plur.web.display);
    # the edit form and the JSON twins keep the exact text.
    env.filters.update(when=short_time, day=lambda v: (v or "")[:10], num=number, score=score, visible=safe_text)
    return env


def query_string(params: dict[str, Any], **changes: Any) -> str:
    """``?a=1&b=2`` from ``params`` updated with ``changes``; empty / ``None`` values dropped."""
    merged = {**params, **changes}
    clean = {k: v for k, v in merged.items() if v not in (None, "")}
    return "?" + urlencode(clean) if clean else "?"


def short_time(value: str | None) -> str:
    """``'2025-07-25T02:00:00Z'`` -> ``'2025-07-25 02:00'`` (UTC); ``None`` -> ``'—'``."""
    if not value:
        return "—"
    return value[:16].replace("T", " ")


def number(value: Any) -> str:
    """Thousands-separated integer, or ``'—'`` for ``None``."""
    if value is None:
        return "—"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def score(value: float | None, digits: int = 4) -> str:
    """A score with ``digits`` significant digits, or ``'—'``."""
    return "—" if value is None else f"{value:.{digits}g}"


def json_response(data: Any, status: int = 200) -> "Response":
    from starlette.responses import Response

    body = json.dumps(data, ensure_ascii=False, default=str, indent=None)
    return Response(body, status_code=status, media_type="application/json")


def wants_json(request: "Request") -> bool:
    """True for ``?format=json`` (the one way to ask for a JSON twin).

    Raises:
        ValidationError: ``format`` is neither ``json`` nor ``html``.
    """
    fmt = request.query_params.get("format", "html")
    if fmt not in ("html", "json"):
        raise ValidationError(f"format={fmt!r}; use format=json for the JSON twin or omit it for HTML")
    return fmt == "json"


