"""Login links for the owner's pages: a per-start path prefix and one-time, short-lived login codes.

Two facts of browsers shape this (issue 38):

* **Cookies ignore ports.** A cookie set by ``127.0.0.1:7777`` with ``Path=/`` is sent to any server on
  ``127.0.0.1``, another local account's on port 8000 included, which could replay it. So the pages live
  under an unguessable prefix, ``/w/<22 random characters>/``, and every cookie they set says
  ``Path=/w/<...>/``: the browser sends it to URLs under that prefix only, and a server on another port
  never learns the prefix (it is derived from the service's login secret, in ``service.json`` (0600), and
  shown only in the owner's browser and terminal). See :func:`page_prefix`.
* **Command lines and histories are not secret.** A login URL handed to a browser launcher sits in
  ``ps`` for the browser's life, and in its history. So a login URL carries a *code* that works once and
  for :data:`CODE_TTL_S` seconds: ``<expiry>.<nonce>.<HMAC-SHA256(login secret, expiry.nonce)>``. Any
  process that can read ``service.json`` (the owner's) can mint one (:func:`login_url`); the server checks
  the signature and the expiry and remembers the nonces it has redeemed (:class:`CodeBook`).

Sources: RFC 6265 section 8.5 ("cookies do not provide isolation by port"); Jupyter Server opens a local
file that redirects, not a token URL on a command line (``ServerApp.launch_browser``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from urllib.parse import urlencode

#: How long a login code works, in seconds (and it works once).
CODE_TTL_S = 300
#: Query parameter that carries a login code.
CODE_PARAM = "login"


def new_login_secret() -> str:
    """A fresh login secret (per service start): 256 random bits, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def page_prefix(login_secret: str) -> str:
    """The pages' path prefix for a login secret: ``/w/<22 URL-safe characters>`` (no trailing slash).

    Derived (HMAC-SHA256, 128 bits kept) so every process that can read ``service.json`` builds the same
    URLs without a second value to store; unguessable without the secret.
    """
    digest = hmac.new(login_secret.encode("utf-8"), b"plur-page-prefix", hashlib.sha256).digest()[:16]
    return "/w/" + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def _sign(login_secret: str, body: str) -> str:
    return hmac.new(login_secret.encode("utf-8"), b"plur-login-code:" + body.encode("ascii"),
                    hashlib.sha256).hexdigest()


def mint_code(login_secret: str, now: float | None = None, ttl_s: int = CODE_TTL_S) -> str:
    """A new login code ``<expiry unix s>.<nonce>.<hex HMAC>``, valid once until ``now + ttl_s``."""
    expiry = int(now if now is not None else time.time()) + int(ttl_s)
    body = f"{expiry}.{secrets.token_urlsafe(16)}"
    return f"{body}.{_sign(login_secret, body)}"


def login_url(base_url: str, login_secret: str, path: str = "/") -> str:
    """A fresh one-time login URL: ``<base_url><prefix><path>?login=<code>``.

    Args:
        base_url: ``http://127.0.0.1:7777`` (no prefix).
        login_secret: the service's login secret (``service.json``'s ``login``).
        path: the page to land on, e.g. ``/`` or ``/stats``.
    """
    return (base_url.rstrip("/") + page_prefix(login_secret) + "/" + path.lstrip("/") + "?"
            + urlencode({CODE_PARAM: mint_code(login_secret)}))


class CodeBook:
    """The server's side: checks login codes and remembers redeemed nonces until they expire.

    Args:
        login_secret: the secret codes are signed with.
    """

    #: :meth:`redeem` answers
    OK, BAD, EXPIRED, USED = "ok", "bad", "expired", "used"

    def __init__(self, login_secret: str) -> None:
        self._secret = login_secret
        self._used: dict[str, int] = {}   # nonce -> expiry
        self._lock = threading.Lock()

    def redeem(self, code: str, now: float | None = None) -> str:
        """Check ``code`` and use it up: :data:`OK`, or why not (:data:`BAD`, :data:`EXPIRED`, :data:`USED`)."""
        parts = code.split(".")
        if len(parts) != 3 or not parts[0].isdigit() or len(parts[0]) > 12 or not code.isascii():
            return self.BAD
        body = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(_sign(self._secret, body), parts[2]):
            return self.BAD
        expiry, nonce = int(parts[0]), parts[1]
        t = int(now if now is not None else time.time())
        with self._lock:
            for old in [n for n, e in self._used.items() if e < t]:
                del self._used[old]
            if expiry < t or expiry > t + 10 * CODE_TTL_S:
                return self.EXPIRED
            if nonce in self._used:
                return self.USED
            self._used[nonce] = expiry
        return self.OK
