"""Open a login URL in the owner's browser without putting it on a command line (``--open``).

A URL passed to a browser launcher is an argument of that process, and of the browser it starts, for
that browser's whole life: ``ps -eo args`` shows it to every local account. So, as Jupyter does, the
login URL goes into a small HTML file that redirects to it, written owner-only (mode 0600, in a folder of
mode 0700 inside the home), and the browser is given the file's path. The URL in the file carries a
one-time, short-lived login code (:mod:`plur.net.logincode`), so the file is worthless once used or a few
minutes old; older files are removed at the next open.

Source: Jupyter Server ``ServerApp.launch_browser`` (``jpserver-<pid>-open.html``).
"""

from __future__ import annotations

import html
import os
import secrets
import time
from pathlib import Path

#: Folder under the home for the redirect files (mode 0700).
OPEN_DIR = "open"


def redirect_file(home: Path, url: str, keep_s: float = 3600.0) -> Path:
    """Write ``<home>/open/login-<random>.html`` (0600) that sends the browser on to ``url``.

    Files older than ``keep_s`` seconds are removed first. Returns the file's path.

    Raises:
        OSError: the home is not writable.
    """
    folder = Path(home) / OPEN_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    cutoff = time.time() - keep_s
    for old in folder.glob("login-*.html"):
        try:
            if old.stat().st_mtime < cutoff:
                old.unlink()
        except OSError:
            pass
    path = folder / f"login-{secrets.token_hex(8)}.html"
    target = html.escape(url, quote=True)
    text = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"refresh\" content=\"0;url={target}\">"
            "<meta name=\"referrer\" content=\"no-referrer\"><title>plur: logging in</title></head>\n"
            f"<body><p>Opening plur's pages: <a href=\"{target}\">continue</a> (this link logs you in once).</p>"
            "</body></html>\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(text)
    return path


def open_login(home: Path, url: str) -> tuple[bool, Path]:
    """Open ``url`` in the default browser through an owner-only redirect file.

    Returns:
        ``(opened, file)``: whether a browser was launched (``webbrowser`` found one and it did not fail),
        and the redirect file (open it by hand when ``opened`` is false).
    """
    import webbrowser

    path = redirect_file(home, url)
    try:
        opened = bool(webbrowser.open(path.as_uri()))
    except webbrowser.Error:
        opened = False
    return opened, path


def no_browser_line(path: Path) -> str:
    """What ``--open`` says when no browser could be launched (``$BROWSER`` unset, no desktop)."""
    return (f"plur: no web browser could be opened (set $BROWSER, or open {path.as_uri()} in yours; "
            "`plur service url` prints a fresh login URL)")
