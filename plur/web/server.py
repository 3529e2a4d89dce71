"""The ASGI app behind ``plur serve``: routes, HTML/JSON rendering, guards, and the uvicorn runner.

Routes, under the per-start prefix ``/w/<random>`` (:mod:`plur.web.login`; each page has a JSON twin at the
same URL with ``?format=json``)::

    GET  /                          engrams table   (views.engrams_page)
    GET  /engrams/<id>              engram detail   (views.engram_page)
    GET  /stats                     statistics      (views.stats_page)
    GET  /playground                recall playground (views.playground_page)
    GET  /conversations             conversations memory holds turns of (logs.conversations_page)
    GET  /injections                the injection log: which block went to which agent when, for which
                                    message (logs.injections_page)
    POST /engrams                   add a note (views.add)
    POST /engrams/<id>/<action>     pin | unpin | retire | restore | edit | forget (views.act)
    POST /conversations/forget      forget a conversation whole (logs.forget_conversation)
    GET  /static/...                style.css, app.js

Guards, outermost first: :class:`~plur.web.security.HostGuard` (foreign ``Host`` -> 400),
security headers (CSP without inline script or style, no framing, ``no-store``),
:class:`~plur.web.login.LoginGuard` (the pages under their secret prefix ``/w/<random>``; a one-time
``?login=`` code and the cookie it sets, else 401),
:class:`~plur.web.security.SessionCookie` (session id cookie + CSRF token), and on the
POST routes :func:`~plur.web.security.check_mutation` (same-origin ``Origin`` + token -> else 403).

Starlette, Jinja2 and uvicorn are imported lazily (the ``web`` extra).
"""

from __future__ import annotations

import secrets
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ..net.bodylimit import BodyLimit
from ..jsonio import request_json
from ..errors import (ConflictError, DatabaseUnavailableError, InvalidIdError, NotFoundError, PlurError,
                      ValidationError, require)
from . import login, logs, security, views
from .render import SecurityHeaders, environment, json_response, wants_json

if TYPE_CHECKING:  # pragma: no cover
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ..memory import Memory

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


def _status_for(exc: PlurError) -> int:
    if isinstance(exc, DatabaseUnavailableError):
        return 503
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, ValidationError):
        return 400
    return 500


def create_app(memory: "Memory", *, bound_host: str | None = None, allow_hosts: Iterable[str] = (),
               secret: bytes | None = None, lock: threading.Lock | None = None,
               login_token: str | None = None) -> "Starlette":
    """Build the web app over an open :class:`plur.memory.Memory` (not closed by the app).

    Args:
        memory: the facade every view and action goes through.
        bound_host: the address the server listens on; accepted in the ``Host`` header
            besides 127.0.0.1, localhost and ::1.
        allow_hosts: further host names to accept (e.g. this machine's name on a LAN bind).
        secret: HMAC key for CSRF tokens (32 random bytes by default, new per process).
        lock: serialises the page's Memory calls; pass the service API's lock to share it
            (default: a lock of its own).
        login_token: the token a login URL carries (:mod:`plur.web.login`); default a fresh one,
            readable as ``app.state.login_token``.

    Returns:
        A Starlette ASGI application. Memory calls run in a worker thread, one at a time.
    """
    require("starlette", "web")
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.responses import HTMLResponse, RedirectResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from .queries import UsageCounts

    env = environment()
    for name in ("engrams.html", "engram.html", "stats.html", "playground.html", "conversations.html", "injections.html",
                 "error.html"):
        env.get_template(name)  # compile now: a template error fails at start, and the first page is not slower
    key = secret or secrets.token_bytes(32)
    login_token = login_token or login.new_login_token()
    caches = views.Caches(usage=UsageCounts(memory.stats.path))
    # One memory call at a time: page loads are short, and the store's refresh is not meant to race.
    lock = lock or threading.Lock()
    home = str(memory.settings.home)

    async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def locked() -> Any:
            with lock:
                return fn(*args, **kwargs)
        return await run_in_threadpool(locked)

    def render(request: Request, page: views.Page, nav: str) -> Response:
        if wants_json(request):
            return json_response(page.data, page.status)
        params = dict(request.query_params)
        params["format"] = "json"
        context = {**page.data, "d": page.data, "nav": nav, "home": home, "base": request.scope.get("root_path", ""),
                   "csrf_token": request.state.csrf_token,
                   "json_url": request.url.path + "?" + urlencode(params)}
        html = env.get_template(page.template).render(context)
        return HTMLResponse(html, status_code=page.status)

    def error(request: Request, exc: PlurError) -> Response:
        code = _status_for(exc)
        try:
            as_json = wants_json(request)
        except ValidationError:
            as_json = False
        if as_json:
            return json_response({"error": str(exc), "kind": type(exc).__name__}, code)
        return render_error(request, str(exc), code)

    def render_error(request: Request, message: str, code: int) -> Response:
        html = env.get_template("error.html").render(
            message=message, status=code, nav="", home=home, csrf_token=request.state.csrf_token,
            base=request.scope.get("root_path", ""),
            json_url=request.url.path + "?format=json")
        return HTMLResponse(html, status_code=code)

    async def page(request: Request, nav: str, fn: Callable[..., views.Page], *args: Any) -> Response:
        try:
            wants_json(request)
            result = await call(fn, memory, *args, caches=caches)
        except PlurError as exc:
            return error(request, exc)
        return render(request, result, nav)

    async def engrams(request: Request) -> Response:
        return await page(request, "engrams", views.engrams_page, dict(request.query_params))

    async def engram(request: Request) -> Response:
        added = request.query_params.get("added")

        def shown(memory: Memory, engram_id: str, caches: views.Caches) -> views.Page:
            return views.engram_page(memory, engram_id, caches=caches, added=added)
        return await page(request, "engrams", shown, request.path_params["engram_id"])

    async def conversations(request: Request) -> Response:
        return await page(request, "conversations", logs.conversations_page, dict(request.query_params))

    async def injections(request: Request) -> Response:
        return await page(request, "injections", logs.injections_page, dict(request.query_params))

    async def stats(request: Request) -> Response:
        return await page(request, "stats", views.stats_page)

    async def playground(request: Request) -> Response:
        return await page(request, "playground", views.playground_page, dict(request.query_params))

    async def posted(request: Request) -> tuple[dict[str, str], bool, Response | None]:
        """A POST's fields (a form, or a JSON object whose lists are joined by commas), whether it asks for
        JSON, and the answer that refuses it (a bad body, a cross-origin or token-less request) or None."""
        if request.headers.get("content-type", "").startswith("application/json"):
            try:
                body = request_json(await request.body(), "the JSON body")
            except ValidationError as exc:
                return {}, True, error(request, exc)
            if not isinstance(body, dict):
                return {}, True, error(request, ValidationError("the JSON body must be an object of form fields"))
            form = {str(k): ", ".join(map(str, v)) if isinstance(v, list) else str(v)
                    for k, v in body.items() if v is not None}
        else:
            form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        try:
            as_json = wants_json(request)
        except ValidationError as exc:
            return form, False, error(request, exc)
        token = request.headers.get(security.HEADER_NAME) or form.get(security.FORM_FIELD)
        refusal = security.check_mutation(
            method=request.method, secret=key, session_id=request.state.session_id,
            session_valid=request.state.session_valid, token=token, origin=request.headers.get("origin"),
            referer=request.headers.get("referer"), host=request.headers.get("host"),
            scheme=request.url.scheme)
        if refusal:
            if as_json:
                return form, as_json, json_response({"error": refusal, "kind": "Forbidden"}, 403)
            return form, as_json, render_error(request, refusal, 403)
        return form, as_json, None

    async def add(request: Request) -> Response:
        form, as_json, refused = await posted(request)
        if refused is not None:
            return refused
        try:
            engram, created = await call(views.add, memory, form)
        except PlurError as exc:
            return error(request, exc)
        if as_json:
            return json_response({"ok": True, "action": "add", "created": created, "engram": engram.to_dict()},
                                        201 if created else 200)
        base = request.scope.get("root_path", "")
        return RedirectResponse(f"{base}/engrams/{engram.id}?added={'new' if created else 'known'}", status_code=303)

    async def forget_conversation(request: Request) -> Response:
        form, as_json, refused = await posted(request)
        if refused is not None:
            return refused
        try:
            session, n = await call(logs.forget_conversation, memory, form)
        except PlurError as exc:
            return error(request, exc)
        if as_json:
            return json_response({"ok": True, "action": "forget-conversation", "session": session,
                                         "forgotten": n})
        base = request.scope.get("root_path", "")
        return RedirectResponse(base + "/conversations?" + urlencode({"forgotten": session, "n": n}), status_code=303)

    async def action(request: Request) -> Response:
        engram_id = request.path_params["engram_id"]
        name = request.path_params["action"]
        form, as_json, refused = await posted(request)
        if refused is not None:
            return refused
        try:
            changed = await call(views.act, memory, engram_id, name, form)
        except ConflictError as exc:
            if name == "edit" and not as_json:
                # 409: changed meanwhile (or a duplicate). The current engram, the reason, a reload link,
                # and the person's text still in the form.
                try:
                    shown = await call(views.engram_page, memory, engram_id, error=str(exc), caches=caches,
                                       status=409, draft=form.get("statement"))
                except PlurError:
                    return error(request, exc)
                return render(request, shown, "engrams")
            return error(request, exc)
        except ValidationError as exc:
            if name == "edit" and not as_json and not isinstance(exc, InvalidIdError):
                # Show the edit form again with the reason, keeping the page the person was on.
                try:
                    shown = await call(views.engram_page, memory, engram_id, error=str(exc), caches=caches,
                                       draft=form.get("statement"))
                except PlurError:
                    return error(request, exc)
                return render(request, shown, "engrams")
            return error(request, exc)
        except PlurError as exc:
            return error(request, exc)
        if as_json:
            return json_response({"ok": True, "action": name, "engram": changed.to_dict()})
        base = request.scope.get("root_path", "")
        if name == "forget":
            return RedirectResponse(base + "/?" + urlencode({"forgotten": changed.id}), status_code=303)
        return RedirectResponse(f"{base}/engrams/{changed.id}", status_code=303)

    routes = [
        Route("/", engrams, methods=["GET", "HEAD"], name="engrams"),
        Route("/engrams", add, methods=["POST"], name="add"),
        Route("/engrams/{engram_id}", engram, methods=["GET", "HEAD"], name="engram"),
        Route("/engrams/{engram_id}/{action}", action, methods=["POST"], name="action"),
        Route("/stats", stats, methods=["GET", "HEAD"], name="stats"),
        Route("/playground", playground, methods=["GET", "HEAD"], name="playground"),
        Route("/conversations", conversations, methods=["GET", "HEAD"], name="conversations"),
        Route("/conversations/forget", forget_conversation, methods=["POST"], name="forget_conversation"),
        Route("/injections", injections, methods=["GET", "HEAD"], name="injections"),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]
    middleware = [
        Middleware(BodyLimit),   # every body bounded as it streams, chunked ones too (plur.net.bodylimit)
        Middleware(security.HostGuard, allowed=security.allowed_hosts(bound_host, allow_hosts)),
        Middleware(SecurityHeaders),
        Middleware(login.LoginGuard, secret=key, login_token=login_token),
        Middleware(security.SessionCookie, secret=key),
    ]
    async def http_error(request: Request, exc: Exception) -> Response:
        from starlette.exceptions import HTTPException

        code = exc.status_code if isinstance(exc, HTTPException) else 500
        message = {404: f"no page at {request.url.path!r}; start from the engrams table at /",
                   405: f"{request.method} is not allowed at {request.url.path!r}"}.get(code, "request failed")
        if request.query_params.get("format") == "json":
            return json_response({"error": message, "kind": "HTTPError"}, code)
        return render_error(request, message, code)

    app = Starlette(routes=routes, middleware=middleware, exception_handlers={404: http_error, 405: http_error})
    app.state.memory = memory
    app.state.login_token = login_token
    app.state.caches = caches  # serve() closes caches.usage on exit
    return app


def serve(home: str | Path | None = None, host: str = "127.0.0.1", port: int = 7777,
          open_browser: bool = False, *, allow_hosts: Iterable[str] = ()) -> None:
    """Run the web page alone with uvicorn until interrupted (Ctrl-C).

    ``plur serve`` runs :func:`plur.service.runner.run` instead (the page plus the JSON API);
    this is the page alone, for embedding. Both bind before printing (:mod:`plur.net.addresses`).

    Args:
        home: plur home folder (default ``$PLUR_HOME`` or ``~/.plur``).
        host: address to bind; loopback by default. Any other address prints a warning
            to stderr (:func:`plur.web.security.bind_warning`); a wildcard (0.0.0.0, ::) accepts
            this machine's host name and addresses in the ``Host`` header, printed.
        port: TCP port (0: any free port).
        open_browser: open the page in the default browser once listening.
        allow_hosts: extra ``Host`` header names to accept.

    Raises:
        MissingDependencyError: the ``web`` extra is not installed.
        ServiceError: the port is in use or the address is not this machine's (nothing printed before).
        ConfigError, StoreError: the home cannot be opened.
    """
    uvicorn = require("uvicorn", "web")
    from ..memory import Memory
    from ..net.addresses import bind_tcp, host_names, urls

    sock = bind_tcp(host, port)
    port = sock.getsockname()[1]
    names = host_names(host, tuple(allow_hosts))
    warning = security.bind_warning(host)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    memory = Memory(home)
    try:
        app = create_app(memory, bound_host=host, allow_hosts=names)
        n = len(memory.list())  # read every engram file now, not on the first page load
        shown = urls(host, port, names)
        entry = login.login_url(shown[0], app.state.login_token)
        print(f"plur: serving {n} engrams from {memory.settings.home} at {'  '.join(shown)} (Ctrl-C to stop); "
              f"Host names accepted: {', '.join(names)}; log in at {entry} (works once, for 5 minutes)",
              file=sys.stderr, flush=True)
        if open_browser:
            from ..net.browser import no_browser_line, open_login

            def launch() -> None:
                opened, path = open_login(memory.settings.home, login.login_url(shown[0], app.state.login_token))
                if not opened:
                    print(no_browser_line(path), file=sys.stderr, flush=True)

            threading.Thread(target=launch, daemon=True).start()
        try:
            uvicorn.Server(uvicorn.Config(app, log_level="warning", server_header=False)).run(sockets=[sock])
        except KeyboardInterrupt:
            pass
        app.state.caches.usage.close()
    finally:
        sock.close()
        memory.close()
