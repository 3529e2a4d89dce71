"""Issue 47: a reader given a folder reads only that folder, and a linked folder only files that hold still.

* A symlink out of the folder (``leak.md -> ../secret.txt``, ``-> /etc/hostname``) never becomes an engram, at
  ``plur link claude-code`` (and for links added later, while the service's watcher runs), ``plur import --format
  notes DIR``, the claude-dir import and ``plur ingest DIR``; each file left out is said once, in one line. The
  proof is a grep of the whole home for the secret's text.
* The link reads a file only once its size, mtime and inode held still between two looks, checks the size before
  reading, and holds no lock of the memory while it reads: a 109 MB file written into a linked folder never
  becomes a partial engram. The looks run on a clock the test moves, so no verdict waits for time to pass.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from plur.cli import cli
from plur.hosts.claude_link import Link, reconcile, save_link
from plur.memory import Memory

SECRET = "the vault code is 4417-PLUM-ORCHARD"
LATER = "the backup passphrase is tangerine-lantern-42"
MEMO = "---\nname: deploys\ndescription: how we deploy\ntype: project\n---\n\nStaging deploys go through Argo CD.\n"


def in_home(home: Path, text: str) -> list[Path]:
    """Every file under the home whose bytes hold ``text``."""
    return [p for p in home.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def plur(home: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--home", str(home), *args], env={"PLUR_MODEL": "none"}, catch_exceptions=False)


def warnings_about(stderr: str, name: str) -> list[str]:
    return [line for line in stderr.splitlines() if name in line and "not read" in line]


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    (tmp_path / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    return tmp_path / "secret.txt"


@pytest.fixture
def mem(plur_home: Path) -> Any:
    m = Memory(plur_home, model="none")
    yield m
    m.close()


def test_plur_link_never_reads_a_link_out_of_the_folder_now_or_later(plur_home: Path, tmp_path: Path,
                                                                     secret: Path, capsys: Any) -> None:
    project, memory = tmp_path / "app", tmp_path / "app-memory"
    project.mkdir()
    memory.mkdir()
    (memory / "project_deploys.md").write_text(MEMO, encoding="utf-8")
    (memory / "leak.md").symlink_to("../secret.txt")
    (memory / "host.md").symlink_to("/etc/hostname")
    r = plur(plur_home, "link", "claude-code", str(project), "--memory-dir", str(memory))
    assert r.exit_code == 0, r.output
    assert len(warnings_about(r.stderr, "leak.md")) == 1 and len(warnings_about(r.stderr, "host.md")) == 1, r.stderr
    assert in_home(plur_home, SECRET) == []

    from plur.hosts.claude_link.watch import LinkWatcher

    m = Memory(plur_home, model="none")
    watcher = LinkWatcher(m, period_s=0.05)
    try:
        (tmp_path / "later.txt").write_text(LATER, encoding="utf-8")
        (memory / "later.md").symlink_to(tmp_path / "later.txt")  # a link added while the service runs
        (memory / "user_editor.md").write_text(MEMO.replace("Staging deploys go through Argo CD.",
                                                            "The user edits in Helix."), encoding="utf-8")
        deadline = time.monotonic() + 120
        while not any("Helix" in e.statement for e in m.list()) and time.monotonic() < deadline:
            watcher.wait_passes(1)   # the file beside it is read once it has held still for a second
        assert any("Helix" in e.statement for e in m.list())
        assert watcher.wait_passes(3)
    finally:
        watcher.stop()
        m.close()
    said = capsys.readouterr().err
    assert len(warnings_about(said, "later.md")) == 1, said  # said once, however many passes
    assert in_home(plur_home, SECRET) == [] and in_home(plur_home, LATER) == []


@pytest.mark.parametrize("fmt", ["notes", None])
def test_notes_import_of_a_folder_never_follows_a_link_out(plur_home: Path, tmp_path: Path, secret: Path,
                                                           fmt: str | None) -> None:
    notes = tmp_path / "notes"
    (notes / "deep").mkdir(parents=True)
    (notes / "setup.md").write_text("# Setup\n\nThe staging box runs Debian.\n", encoding="utf-8")
    (notes / "leak.md").symlink_to("../secret.txt")
    (notes / "deep" / "also.txt").symlink_to(secret)
    r = plur(plur_home, "import", *(["--format", fmt] if fmt else []), str(notes))
    assert r.exit_code == 0, r.output
    assert "1 new engram" in r.stdout
    assert len(warnings_about(r.stderr, "leak.md")) == 1 and len(warnings_about(r.stderr, "also.txt")) == 1, r.stderr
    assert in_home(plur_home, SECRET) == []


def test_claude_dir_import_says_once_for_each_file_out_of_the_folder(plur_home: Path, tmp_path: Path,
                                                                    secret: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (tmp_path / "secret.md").write_text(f"---\nname: s\ndescription: s\ntype: user\n---\n\n{SECRET}\n",
                                        encoding="utf-8")
    (folder / "project_deploys.md").write_text(MEMO, encoding="utf-8")
    (folder / "leak.md").symlink_to("../secret.md")
    (folder / "MEMORY.md").write_text("# Memory index\n\n- [Deploys](project_deploys.md) — how\n"
                                      "- [Leak](leak.md) — a link out\n- [Up](../secret.md) — a path out\n",
                                      encoding="utf-8")
    r = plur(plur_home, "import", str(folder))
    assert r.exit_code == 0, r.output
    assert "1 new engram" in r.stdout
    assert len(warnings_about(r.stderr, "leak.md")) == 1, r.stderr
    assert len(warnings_about(r.stderr, "secret.md")) == 2, r.stderr  # the MEMORY.md line, and where leak.md leads
    assert in_home(plur_home, SECRET) == []


def test_ingest_of_a_folder_never_follows_a_link_out(plur_home: Path, tmp_path: Path) -> None:
    private, chats = tmp_path / "private", tmp_path / "chats"
    private.mkdir()
    chats.mkdir()
    (private / "other.json").write_text(json.dumps([{"role": "user", "content": SECRET}]), encoding="utf-8")
    (chats / "mine.json").write_text(json.dumps([{"role": "user", "content": "I moved to Lisbon in May."}]),
                                     encoding="utf-8")
    (chats / "theirs.json").symlink_to(private / "other.json")
    r = plur(plur_home, "ingest", str(chats))
    assert r.exit_code == 0, r.output
    assert len(warnings_about(r.stderr, "theirs.json")) == 1, r.stderr
    assert in_home(plur_home, SECRET) == [] and in_home(plur_home, "Lisbon")


class Clock:
    """A wall clock the test moves (the links' looks compare it with mtimes)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_a_file_still_being_written_never_becomes_a_partial_engram(mem: Any, tmp_path: Path) -> None:
    from plur.hosts.claude_link import reading

    folder = tmp_path / "memory"
    folder.mkdir()
    link = Link("claude-code", str(folder), "project:app", str(tmp_path))
    save_link(Path(mem.home), link)
    clock = Clock()
    looks = reading.Looks(settle_s=1.0, clock=clock)
    text = MEMO.replace("Staging deploys go through Argo CD.", "Deploys: " + "step by step. " * 50_000)
    with open(folder / "project_deploys.md", "w", encoding="utf-8") as fh:  # 650 KB, written in four parts
        for part in range(4):
            fh.write(text[part * len(text) // 4:(part + 1) * len(text) // 4])
            fh.flush()
            report = reconcile(mem, link, looks)
            assert report.waiting == ["project_deploys.md"] and mem.list() == [], part
    assert reconcile(mem, link, looks).waiting == ["project_deploys.md"]   # written: one look at the whole file
    clock.now += 1.0                                                        # ...and it held still for a second
    report = reconcile(mem, link, looks)
    assert report.to_engrams == ["project_deploys.md"] and report.waiting == []
    (e,) = mem.list()
    assert e.statement == text.split("---\n\n", 1)[1].strip()               # whole, never a part

    big = folder / "reference_dump.md"  # 109 MB, looked at while written: never read, refused by its size
    with open(big, "wb") as fh:
        fh.write(b"---\nname: dump\ndescription: d\ntype: reference\n---\n\n")
        for mib in range(109):
            fh.write(b"0123456789abcdef" * 65536)
            if mib % 8 == 0:
                fh.flush()  # a part under 2 MiB is looked at, still changing; a larger one is not even looked into
                assert "reference_dump.md" not in reconcile(mem, link, looks).to_engrams and len(mem.list()) == 1
    clock.now += 1.0
    report = reconcile(mem, link, looks)
    assert [p for p in report.problems if "reference_dump.md" in p and "not read" in p and "max_statement_bytes" in p]
    assert len(mem.list()) == 1 and len(mem.list()[0].statement) < 1 << 20

    held: list[bool] = []
    real_read = reading._read

    def read_and_probe(p: Path, st: os.stat_result) -> Any:   # while a file is read, the memory's lock is free
        probe = threading.Thread(target=lambda: held.append(not _free(mem._lock)))
        probe.start()
        probe.join()
        return real_read(p, st)

    (folder / "user_editor.md").write_text(MEMO.replace("Staging deploys go through Argo CD.", "Uses Helix."))
    os.utime(folder / "user_editor.md", (clock.now, clock.now))   # written "now" on the test's clock, however
    reconcile(mem, link, looks)                                     # long the real writes above took
    clock.now += 1.0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reading, "_read", read_and_probe)
        assert reconcile(mem, link, looks).to_engrams == ["user_editor.md"]
    assert held and not any(held)


def _free(lock: Any) -> bool:
    if lock.acquire(timeout=120):   # a background catch-up may hold it a while on a loaded machine
        lock.release()
        return True
    return False


def test_a_one_time_sync_checks_the_size_before_reading(mem: Any, tmp_path: Path, monkeypatch: Any) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    link = Link("claude-code", str(folder), "project:app", str(tmp_path))
    save_link(Path(mem.home), link)
    with open(folder / "reference_dump.md", "wb") as fh:
        fh.write(b"---\nname: dump\ndescription: d\ntype: reference\n---\n\n" + b"x" * (3 << 20))
    from plur.hosts.claude_link import reading

    opened: list[str] = []
    real_read = reading._read
    monkeypatch.setattr(reading, "_read", lambda p, st: opened.append(p.name) or real_read(p, st))
    report = reconcile(mem, link)
    assert opened == []
    assert [p for p in report.problems if "not read" in p and "max_statement_bytes" in p]
    assert mem.list() == []
