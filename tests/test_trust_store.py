"""A damaged store never reads as empty; lost updates and duplicate edits are refused; a read-only,
full or misplaced home ends in one clear line while reads keep working."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import learn_id

from plur.errors import ConflictError, DuplicateError
from plur.memory import Memory
from plur.store.engram import engram_version


def _truncate(plur_home: Path, eid: str) -> Path:
    path = plur_home / "engrams" / eid[4:11] / f"{eid}.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.index("scope:")], encoding="utf-8")  # a truncated file (disk full, bad sync)
    return path


# -- quarantine: said every time, restorable ---------------------------------------------
def test_every_reading_command_says_files_are_quarantined(run, plur_home: Path) -> None:
    a = learn_id(run, "The dog is Rex.")
    b = learn_id(run, "The cat is Tom.")
    _truncate(plur_home, a)
    _truncate(plur_home, b)
    for args in (("list",), ("recall", "dog"), ("show", a), ("section", "--agent", "x", "dog"),
                 ("learn", "new fact"), ("export", str(plur_home.parent / "out.jsonl"))):
        for _ in range(2):  # every time, not only when the file is first moved aside
            r = run(*args)
            assert "2 files are quarantined" in r.stderr and "plur doctor" in r.stderr, (args, r.stderr)
    r = run("list", "--json")
    assert json.loads(r.stdout) == [json.loads(run("list", "--json").stdout)[0]]  # the JSON list keeps its shape
    assert json.loads(r.stderr.strip().splitlines()[-1]) == {"warning": "quarantined", "quarantined": 2,
                                                             "see": "plur doctor"}
    r = run("learn", "another", "--json")
    assert json.loads(r.stdout)["quarantined"] == 2


def test_doctor_restore_brings_a_fixed_file_back_and_validates_first(run, plur_home: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    original = (plur_home / "engrams" / eid[4:11] / f"{eid}.yaml").read_text(encoding="utf-8")
    _truncate(plur_home, eid)
    report = json.loads(run("doctor", "--no-model", "--json").stdout)
    q = report["quarantined"][0]
    name = Path(q["path"]).name
    r = run("doctor", "--restore", name)  # still broken: refused, stays quarantined
    assert r.exit_code == 2 and "still does not load" in r.stderr
    assert Path(q["path"]).is_file()
    Path(q["path"]).write_text(original, encoding="utf-8")  # the person fixes it
    r = run("doctor", "--restore", name)
    assert r.exit_code == 0 and f"restored: {eid}" in r.stdout
    assert [e["id"] for e in json.loads(run("list", "--json").stdout)] == [eid]
    r = run("list")
    assert "quarantined" not in r.stderr
    assert run("doctor", "--restore", name).exit_code == 3


def test_doctor_discard_deletes_a_quarantined_file_and_the_warning_goes(run, plur_home: Path) -> None:
    keep = learn_id(run, "The dog is Rex.")
    drop = learn_id(run, "A stray copy.")
    _truncate(plur_home, drop)
    assert "1 file is quarantined" in run("list").stderr
    q = json.loads(run("doctor", "--no-model", "--json").stdout)["quarantined"][0]
    assert "plur doctor --discard NAME" in run("doctor", "--no-model").stdout
    assert run("doctor", "--discard", "no-such-file").exit_code == 3
    r = run("doctor", "--discard", drop)                     # by engram id: its newest quarantined file
    assert r.exit_code == 0 and r.stdout.strip() == f"discarded: {q['path']}", r.output
    assert not Path(q["path"]).exists() and not Path(q["path"] + ".reason").exists()
    listed = run("list")
    assert "quarantined" not in listed.stderr and keep in listed.stdout
    assert json.loads(run("doctor", "--no-model", "--json").stdout)["quarantined"] == []


def test_restore_by_engram_id_and_refusals(run, plur_home: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    original = (plur_home / "engrams" / eid[4:11] / f"{eid}.yaml").read_text(encoding="utf-8")
    _truncate(plur_home, eid)
    run("list")
    q = json.loads(run("doctor", "--no-model", "--json").stdout)["quarantined"][0]
    Path(q["path"]).write_text(original, encoding="utf-8")
    learn_id(run, "the dog is rex.")  # the same text learned again meanwhile
    r = run("doctor", "--restore", eid)
    assert r.exit_code == 8 and "already says exactly" in r.stderr


# -- lost updates ------------------------------------------------------------------------
def test_update_with_a_stale_version_is_refused(plur_home: Path) -> None:
    with Memory(plur_home, model="none") as a, Memory(plur_home, model="none") as b:
        e = a.learn("The dog is Rex.")
        opened = engram_version(e)
        b.update(e.id, statement="The dog is Max.")   # someone else saves first
        with pytest.raises(ConflictError, match="changed since you opened it"):
            a.update(e.id, statement="The dog is Rex, a beagle.", expected=opened)
        assert a.get(e.id).statement == "The dog is Max."
        again = a.update(e.id, tags=["pets"], expected=engram_version(a.get(e.id)))
        assert again.tags == ("pets",)


def _editor(tmp_path: Path, body: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    return f'"{sys.executable}" "{script}"'


def test_plur_edit_does_not_overwrite_a_change_made_while_it_was_open(run, plur_home: Path, tmp_path: Path) -> None:
    eid = learn_id(run, "The dog is Rex.")
    # The "editor" saves a change through another process (as the web page would) before the person saves.
    cmd = _editor(tmp_path, f"""
        import sys, subprocess
        subprocess.run([{sys.executable!r}, "-m", "plur", "--home", {str(plur_home)!r}, "learn", "unrelated"], check=True)
        from plur.memory import Memory
        with Memory({str(plur_home)!r}, model="none") as m:
            m.update({eid!r}, statement="Changed on the web page.")
        p = sys.argv[1]
        t = open(p, encoding="utf-8").read().replace("The dog is Rex.", "The dog is Rex, a beagle.")
        open(p, "w", encoding="utf-8").write(t)
    """)
    r = run("edit", eid, env={"EDITOR": cmd, "VISUAL": cmd})
    assert r.exit_code == 8 and "changed since you opened it" in r.stderr
    kept = Path(r.stderr.split("kept in ")[1].split()[0].rstrip(";"))
    assert "a beagle" in kept.read_text(encoding="utf-8") and kept.parent == plur_home / "edit"
    assert json.loads(run("show", eid, "--json").stdout)["statement"] == "Changed on the web page."
    assert run("forget", eid, "--yes").exit_code == 0 and not kept.exists()  # forget takes the kept text too


# -- duplicates by edit ------------------------------------------------------------------
def test_edit_to_the_text_of_another_engram_is_refused_with_its_id(plur_home: Path) -> None:
    with Memory(plur_home, model="none") as mem:
        a = mem.learn("The dog is Rex.")
        b = mem.learn("The cat is Tom.")
        with pytest.raises(DuplicateError) as err:
            mem.update(b.id, statement="the dog is  REX.")
        assert err.value.other_id == a.id and a.id in str(err.value)
        assert mem.get(b.id).statement == "The cat is Tom."
        c = mem.learn("The bird is Kiwi.", scope="project:x")
        mem.update(c.id, statement="The dog is Rex.")          # another scope: allowed
        with pytest.raises(DuplicateError):
            mem.update(c.id, scope="global")                   # moving it into a scope with that text: refused
        mem.update(a.id, status="retired")
        mem.update(b.id, statement="The dog is Rex.")          # the other is retired: allowed
        with pytest.raises(DuplicateError):
            mem.update(a.id, status="active")                  # restoring it would duplicate


def test_cli_edit_to_a_duplicate_names_the_other_id(run, tmp_path: Path) -> None:
    a = learn_id(run, "The dog is Rex.")
    b = learn_id(run, "The cat is Tom.")
    cmd = _editor(tmp_path, """
        import sys
        p = sys.argv[1]
        t = open(p, encoding="utf-8").read().replace("The cat is Tom.", "The dog is Rex.")
        open(p, "w", encoding="utf-8").write(t)
    """)
    r = run("edit", b, env={"EDITOR": cmd, "VISUAL": cmd})
    assert r.exit_code == 8 and a in r.stderr


# -- a home that is a file, read-only, or full -------------------------------------------
def _plur(home: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none"}
    return subprocess.run([sys.executable, "-m", "plur", *args], env=env, capture_output=True, text=True,
                          timeout=120, **kw)


@pytest.mark.parametrize("sub", ["", "below"])
def test_a_home_that_is_a_file_is_one_line(tmp_path: Path, sub: str) -> None:
    f = tmp_path / "afile"
    f.write_text("x", encoding="utf-8")
    home = f / sub if sub else f
    for args in (("list",), ("recall", "x"), ("doctor", "--no-model"), ("section", "--agent", "a", "x"),
                 ("learn", "y")):
        r = _plur(home, *args)
        assert r.returncode == 4 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
        assert "point PLUR_HOME or --home at a folder" in r.stderr
        r = _plur(tmp_path / "unused", "--home", str(home), *args)  # the option says the same as the variable
        assert r.returncode == 4 and r.stderr.count("\n") == 1 and "at a folder" in r.stderr, (args, r.stderr)


@pytest.fixture
def read_only_home(plur_home: Path, tmp_path: Path):
    """A home with engrams, an index, stats and a cache, then made read-only (a read-only bind mount as
    root, since root ignores file modes; else chmod)."""
    with Memory(plur_home, model="none") as mem:
        mem.learn("The dog is Rex.")
        mem.recall("dog")
    view = tmp_path / "ro-view"
    if os.geteuid() == 0:
        view.mkdir()
        if subprocess.run(["mount", "--bind", str(plur_home), str(view)]).returncode != 0:
            pytest.skip("cannot bind-mount here")
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        try:
            yield view
        finally:
            subprocess.run(["umount", str(view)])
    else:
        for p in [plur_home, *plur_home.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
        try:
            yield plur_home
        finally:
            for p in [plur_home, *plur_home.rglob("*")]:
                p.chmod(p.stat().st_mode | 0o200)


def test_a_read_only_home_keeps_reads_working(read_only_home: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in read_only_home.rglob("*")}
    for args in (("list",), ("recall", "dog"), ("recall", "dog", "--json"), ("section", "--agent", "a", "dog"),
                 ("doctor", "--no-model"), ("show", "ENG-2025-01-01-aaaaaa")):
        r = _plur(read_only_home, *args)
        assert "Traceback" not in r.stderr, (args, r.stderr)
        if args[0] != "show":
            assert r.returncode == 0, (args, r.stderr)
    assert "Rex" in _plur(read_only_home, "recall", "dog").stdout
    r = _plur(read_only_home, "learn", "new")
    assert r.returncode == 4 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    assert {p: p.stat().st_mtime_ns for p in read_only_home.rglob("*")} == before


def _limit_file_size(nbytes: int):
    def setup() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return setup


def test_a_full_disk_fails_writes_cleanly_and_reads_keep_working(plur_home: Path) -> None:
    """The OS refuses the bytes (RLIMIT_FSIZE: EFBIG, as ENOSPC would): one line, nothing half-written."""
    with Memory(plur_home, model="none") as mem:
        kept = mem.learn("The dog is Rex.")
    files_before = sorted(p.name for p in (plur_home / "engrams").iterdir())
    big = "word " * 4000  # 20 KB: over the 8 KiB the OS allows this process to write in one file
    r = _plur(plur_home, "learn", big, preexec_fn=_limit_file_size(8192))
    assert r.returncode == 4 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "free space" in r.stderr
    assert sorted(p.name for p in (plur_home / "engrams").iterdir()) == files_before  # no temp, no partial file
    r = _plur(plur_home, "recall", "dog", preexec_fn=_limit_file_size(8192))
    assert r.returncode == 0 and kept.id in r.stdout, r.stderr
    r = _plur(plur_home, "list")
    assert r.returncode == 0 and kept.id in r.stdout and "quarantined" not in r.stderr


def test_a_full_tmpfs_fails_writes_cleanly(tmp_path: Path) -> None:
    """A really full filesystem (ENOSPC), where this machine lets us mount a small tmpfs."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a tmpfs")
    try:
        home = mnt / "home"
        with Memory(home, model="none") as mem:
            kept = mem.learn("The dog is Rex.")
            mem.recall("dog")
        # fill the disk
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        r = _plur(home, "learn", "word " * 2000)
        assert r.returncode == 4 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert not [p for p in (home / "engrams").iterdir() if p.name.startswith(".")]
        r = _plur(home, "recall", "dog")
        assert r.returncode == 0 and kept.id in r.stdout, r.stderr
        (mnt / "filler").unlink()
        r = _plur(home, "learn", "after the cleanup")
        assert r.returncode == 0, (r.stderr, subprocess.run(["du", "-a", str(mnt)], capture_output=True, text=True).stdout,
                                   subprocess.run(["df", str(mnt)], capture_output=True, text=True).stdout)
    finally:
        subprocess.run(["umount", str(mnt)])


def test_a_new_home_is_readable_by_its_owner_only(run, plur_home: Path) -> None:
    """Statements, recall queries (stats.db), embeddings and index vocabularies must not be world-readable."""
    import os
    import stat

    old = os.umask(0o022)  # the usual default: files 0644, folders 0755
    try:
        learn_id(run, "The locker code is 7731.")
        assert run("recall", "locker").exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(plur_home.stat().st_mode) == 0o700
    for sub in ("engrams", "index", "cache"):
        if (plur_home / sub).exists():
            assert stat.S_IMODE((plur_home / sub).stat().st_mode) == 0o700, sub


def test_doctor_warns_about_a_home_others_can_read(run, plur_home: Path) -> None:
    """A home made by an older plur (or by hand) with mode 0755: doctor says so and how to fix it."""
    learn_id(run, "The locker code is 7731.")
    plur_home.chmod(0o755)
    r = run("doctor", "--no-model")
    assert r.exit_code == 0 and "other users can read 1 entry" in r.stdout and "0755" in r.stdout
    assert "plur doctor --fix" in r.stdout
    report = json.loads(run("doctor", "--no-model", "--json").stdout)
    assert report["home_mode"] == "0755" and report["home_private"] is False
    plur_home.chmod(0o700)
    r = run("doctor", "--no-model")
    assert "other users can read" not in r.stdout
    assert json.loads(run("doctor", "--no-model", "--json").stdout)["home_private"] is True
