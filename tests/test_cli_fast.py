"""The thin client (plur.cli.fast) prints exactly what the click CLI prints, or leaves the command to click.

One real service (BM25 only) on a small store with a retired, an expired and a quarantined engram; a
matrix of argument forms runs once with the thin client and once with it switched off (the click
path), each in its own real process, and every form must give the same stdout, stderr and exit code.
The forms the thin client is meant to answer must be answered by it (else the comparison proves nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

#: Runs each form of the matrix (argv[2], JSON) through plur.cli.main with stdout/stderr captured;
#: argv[1] == "click" switches the thin client off. Prints [[stdout, stderr, code, answered_by_fast], ...].
DRIVER = r"""
import io, json, sys
import plur.cli.fast as fast
mode, forms = sys.argv[1], json.loads(sys.argv[2])
real = fast.run
answered = []
def spy(argv):
    code = None if mode == "click" else real(argv)
    answered.append(code is not None)
    return code
fast.run = spy
from plur.cli import main
out = []
for argv in forms:
    o, e = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = o, e
    try:
        code = main(argv)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    out.append([o.getvalue(), e.getvalue(), code, answered[-1]])
print(json.dumps(out))
"""


def plur(home: Path, *args: str) -> subprocess.CompletedProcess:
    # PLUR_CAPTURE=off as conftest gives each test: the module's service then has the settings the tests'
    # own processes compare against (a module fixture starts before conftest's per-test environment).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PLUR_MODEL": "none", "PLUR_CAPTURE": "off"}
    return subprocess.run([sys.executable, "-m", "plur", "--home", str(home), *args], capture_output=True, text=True,
                          env=env, timeout=240)


@pytest.fixture(scope="module")
def served() -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="plur-fast-", dir="/tmp")) / "home"
    assert plur(home, "learn", "The user's dog is called Rex and loves the beach.", "--scope", "project:a",
                "--tag", "pets").returncode == 0
    plur(home, "learn", "Deploys to production happen on Tuesdays.", "--scope", "project:b", "--type", "procedure")
    plur(home, "learn", "The dog's old vet was Dr Ames \x1b]0;title\x07 in town.", "--valid-until", "2020-01-01T00:00Z")
    old = json.loads(plur(home, "learn", "The dog sleeps in the kitchen.", "--json").stdout)["engram"]["id"]
    plur(home, "supersede", old, "The dog sleeps on the sofa now.")
    broken = json.loads(plur(home, "learn", "soon broken dog", "--json").stdout)["engram"]["id"]
    (home / "engrams" / broken[4:11] / f"{broken}.yaml").write_text("statement: [unclosed\n", encoding="utf-8")
    started = plur(home, "service", "start", "--port", "0")
    assert started.returncode == 0, started.stderr + started.stdout
    yield home
    plur(home, "service", "stop")
    shutil.rmtree(home.parent, ignore_errors=True)


def forms(home: Path) -> tuple[list[list[str]], list[list[str]]]:
    """(forms the thin client answers, forms it must leave to click), each with ``--home`` first."""
    h = ["--home", str(home)]
    fast = [
        ["recall", "dog"], ["recall", "Rex beach", "-k", "2"], ["recall", "dog", "-k", "0"], ["recall", "dog Rex beach"],
        ["recall", "dog", "--scope", "project:a"], ["recall", "dog", "--scope=project:b"],
        ["recall", "dog", "--mode", "bm25"], ["recall", "dog", "--mode=hybrid", "--json"], ["recall", "--json", "dog"],
        ["recall", "dog", "--type", "fact", "--type", "procedure"], ["recall", "dog", "--tag", "pets", "--tag=x"],
        ["recall", "dog", "--min-score", "0.2"], ["recall", "dog", "--min-score", "1"],
        ["recall", "dog", "--include-expired"], ["recall", "dog", "--include-expired", "--json"],
        ["recall", "dog", "--agent", "a1"], ["recall", "zzzqqq"], ["recall", "zzzqqq", "--json"],
        ["recall", "dog", "--mode", "dense"], ["recall", "dog", "-k", "5000"],
        ["recall", "-", "-k", "3"],
        ["section", "dog", "--agent", "a1"], ["section", "dog", "--agent=a1", "--scope", "project:a"],
        ["section", "zzzqqq", "--agent", "a2"], ["section", "dog", "--agent", "a1", "--scope", "nope:x"],
    ]
    fast = [h + f for f in fast] + [["-v", *h, "recall", "dog"], [*h, "--verbose", "recall", "dog", "--json"],
                                    [f"--home={home}", "recall", "dog"], [*h, "-v", "section", "dog", "--agent", "a"]]
    slow = [
        ["recall", "--help"], ["recall", "dog", "--explain"], ["recall", "dog", "-k", "-1"], ["recall", "dog", "-k", "x"],
        ["recall", "dog", "-k5"], ["recall", "dog", "-k", " 5"], ["recall", "dog", "--min-score", "2"],
        ["recall", "dog", "--min-score", "nan"], ["recall", "dog", "--mode", "nope"], ["recall", "dog", "--type", "x"],
        ["recall"], ["recall", "a", "b"], ["recall", "dog", "--scope"], ["recall", "dog", "--bogus"],
        ["recall", "dog", "-k", "1", "-k", "2"], ["recall", "--", "-dash"], ["recall", "dog", "--json=1"],
        ["section", "dog"], ["section", "--help"], ["section", "dog", "--agent", ""], ["list"], ["--version"],
        ["recall", "bad \udcff byte"], ["recall", ""], ["recall", "  "],
    ]
    return fast, [h + f for f in slow] + [["recall", "dog", "--home", str(home)]]


def drive(mode: str, matrix: list[list[str]]) -> list[list]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PLUR_MODEL": "none"}
    out = subprocess.run([sys.executable, "-c", DRIVER, mode, json.dumps(matrix)], capture_output=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    return json.loads(out.stdout)


def test_the_thin_client_prints_what_click_prints_for_every_form(served: Path) -> None:
    fast, slow = forms(served)
    matrix = fast + slow
    got_fast, got_click = drive("fast", matrix), drive("click", matrix)
    differ = [(argv, f, c) for argv, f, c in zip(matrix, got_fast, got_click) if f[:3] != c[:3]]
    assert not differ, differ
    answered = [argv for argv, f in zip(matrix, got_fast) if f[3]]
    assert answered == fast  # every common form taken by the thin client, every other one left to click
    outputs = "".join(c[0] + c[1] for c in got_click)
    for seen in ("[retired]", "[expired]", "quarantined", "no engrams recalled", "plur: error:", "via the service",
                 "[below floor]", "stay out of the memory block"):
        assert seen in outputs, seen   # the matrix reaches each kind of output


def test_without_a_service_every_form_goes_to_click(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert plur(home, "learn", "The user's dog is called Rex.").returncode == 0
    fast, _ = forms(home)
    got = drive("fast", fast)
    assert not any(g[3] for g in got)
    assert got == drive("click", fast)


def test_a_cold_recall_through_the_service_imports_no_click(served: Path) -> None:
    code = ("import sys\nfrom plur.cli import main\nrc = main(['--home', sys.argv[1], 'recall', 'dog'])\n"
            "bad = ('click', 'plur.store.engram', 'plur.index.recall', 'plur.cli.root', 'plur.cli.output',\n"
            "       'logging', 'typing', 'threading', 'plur.values', 'zlib')\n"
            "print('LOADED=' + ','.join(m for m in bad if m in sys.modules), rc)")
    out = subprocess.run([sys.executable, "-c", code, str(served)], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0 and "Rex" in out.stdout, out.stderr
    assert out.stdout.rstrip().endswith("LOADED= 0"), out.stdout


def test_the_thin_clients_modes_and_types_are_clicks() -> None:
    from plur.cli import fast
    from plur.index.recall import MODES
    from plur.store.engram import TYPES

    assert fast.MODES == tuple(MODES) and fast.TYPES == TYPES
