"""The README's quickstart, run verbatim in a fresh shell, prints what the README shows (issue 41).

The block (the ```` ```bash runnable ```` fence under "## Quickstart") runs with ``bash`` in the checkout
after set-up, with a fresh ``$HOME`` (so ``~/.plur`` is new) and nothing else of the caller's environment but
``PATH`` and, offline, ``HF_HUB_OFFLINE``. Its output (stdout and stderr, as a terminal shows them) is compared
line by line with the ```` ```text ```` block that follows it, after replacing what differs per run: engram
ids (kept consistent: the same id twice must be the same id), dates, the pid, the home folder, the port and
the one-time login URL's secrets. Then the printed URL is opened: it must log a client in to the web page.

``test_the_wheel_runs_the_quickstart`` does the same against a wheel built from the checkout and installed into
a fresh virtual environment (torch pinned first), which is what a user without the checkout's ``.venv`` gets.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def quickstart() -> tuple[str, str]:
    """(the runnable block, the output the README shows for it)."""
    text = README.read_text(encoding="utf-8")
    part = text[text.index("\n## Quickstart\n"):]
    m = re.search(r"^```bash runnable\n(.*?)^```\n.*?^```text\n(.*?)^```$", part, flags=re.S | re.M)
    assert m, "README: no ```bash runnable block followed by a ```text block under ## Quickstart"
    return m.group(1), m.group(2)


def normalise(output: str, home: str) -> list[str]:
    """Lines with the per-run parts replaced (see the module docstring)."""
    ids: dict[str, str] = {}

    def eng(m: re.Match[str]) -> str:
        return ids.setdefault(m.group(0), f"ENG-{len(ids) + 1}")

    lines = []
    for line in output.splitlines():
        if line.startswith("plur: port 7777 is in use"):  # a busy machine: said, and a free port taken
            continue
        line = line.replace(home, "/home/you")
        line = re.sub(r"ENG-\d{4}-\d{2}-\d{2}-[0-9a-f]{6}", eng, line)
        line = re.sub(r"\d{4}-\d{2}-\d{2}", "DATE", line)
        line = re.sub(r"pid \d+", "pid N", line)
        line = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line)
        line = re.sub(r"/w/[A-Za-z0-9_-]+/\?login=\S+", "/w/SECRET/?login=LOGIN", line)  # the one-time login URL
        lines.append(line.rstrip())
    return lines


def fresh_env(home: Path) -> dict[str, str]:
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    for name in ("HF_HUB_OFFLINE", "PYTHONPATH"):  # PYTHONPATH: a worktree's tests run its own plur
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def run_quickstart(checkout: Path, home: Path) -> str:
    """Run the block in ``checkout`` (which has ``.venv``) with a fresh home; its output, then stop the service."""
    block, _ = quickstart()
    env = fresh_env(home)
    try:
        out = subprocess.run(["bash", "-c", block], cwd=checkout, env=env, capture_output=False, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        assert out.returncode == 0, out.stdout
        url = out.stdout.strip().splitlines()[-1]
        assert url.startswith("http://127.0.0.1:") and "login=" in url, out.stdout
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with opener.open(url, timeout=60) as page:  # the login URL: a cookie, then the engrams page
            body = page.read().decode("utf-8")
            assert page.status == 200 and "The user&#39;s dog is called Rex." in body, body[:500]
        return out.stdout
    finally:
        subprocess.run([str(checkout / ".venv" / "bin" / "plur"), "service", "stop"], env=env, cwd=checkout,
                       capture_output=True, timeout=120)


def assert_same(printed: str, home: Path) -> None:
    _, shown = quickstart()
    assert normalise(printed, str(home)) == normalise(shown, "/home/you"), printed


@pytest.mark.slow
def test_the_readme_quickstart_prints_what_the_readme_shows(tmp_path: Path) -> None:
    home = tmp_path / "you"
    home.mkdir()
    assert_same(run_quickstart(ROOT, home), home)


@pytest.mark.slow
def test_the_wheel_runs_the_quickstart(tmp_path: Path) -> None:
    """``python -m build`` -> a fresh venv (torch==2.13.0 first, as scripts/setup) -> the quickstart."""
    dist = tmp_path / "dist"
    src = tmp_path / "src"  # a clean copy of the tracked files: no build/ or egg-info of the checkout leaks in
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(src)],
                   check=True, capture_output=True, timeout=600)
    wheels = list(dist.glob("plur_memory-*.whl"))
    assert len(wheels) == 1, list(dist.iterdir())
    user = tmp_path / "user"  # what a user has: a folder with a venv in it, no checkout
    subprocess.run([sys.executable, "-m", "venv", str(user / ".venv")], check=True, timeout=300)
    pip = [str(user / ".venv" / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "torch==2.13.0"], check=True, timeout=1800)
    subprocess.run([*pip, f"{wheels[0]}[embed,web]"], check=True, timeout=1800)
    home = tmp_path / "you"
    home.mkdir()
    env_pythonpath = os.environ.pop("PYTHONPATH", None)  # the wheel's plur, not a worktree's
    try:
        printed = run_quickstart(user, home)
    finally:
        if env_pythonpath is not None:
            os.environ["PYTHONPATH"] = env_pythonpath
    assert_same(printed, home)
    plur_exe = str(user / ".venv" / "bin" / "plur")  # hints that fit a wheel (issue 48): no checkout, no scripts/
    mcp = subprocess.run([plur_exe, "mcp"], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                         env={**os.environ, "HOME": str(home)})
    assert mcp.returncode == 6 and "pip install 'mcp" in mcp.stderr and "checkout" not in mcp.stderr, mcp.stderr
    fetch = subprocess.run([str(user / ".venv" / "bin" / "python"), "-m", "plur.embed.fetch", "list"],
                           capture_output=True, text=True, timeout=300)
    assert fetch.returncode == 0 and "BAAI/bge-small-en-v1.5" in fetch.stdout, fetch.stderr
    licence = subprocess.run([str(user / ".venv" / "bin" / "python"), "-c",
                              "from importlib.metadata import metadata; m = metadata('plur-memory'); "
                              "print(m['License-Expression'] or m['License'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert licence == "MIT"
