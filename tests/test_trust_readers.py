"""Issue 47: every reader of outside data streams or caps what it decompresses and parses.

Each bomb is made in the test's folder without ever being held (the test stays small): Zstandard frames of 64
MiB repeated (the stream reads across frames), a zip whose deflate stream repeats one fully flushed block. Then
the real ``plur ingest`` / ``plur import`` runs as a child process, and its peak resident memory (the kernel's
``ru_maxrss`` of that child, from ``os.wait4``) must stay under 400 MiB, ending in one line that names the limit
and the setting. Before, a 32 KB DSH log of 1 GiB of newlines peaked at 9.5 GB (the child here runs under an
address-space cap of 3 GiB, so such a read dies at once instead of taking the machine's memory).
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MIB = 1 << 20
#: The bound every read must keep (issue 47), and the child's address-space cap (a runaway dies, not the machine).
PEAK_MIB = 400
ADDRESS_CAP = 3 << 30


#: ``python -m plur ARGS`` that writes its own peak RSS (VmHWM, KiB) to the file named first, however it ends.
MEASURED = (
    "import runpy, sys\n"
    "out = sys.argv.pop(1)\n"
    "sys.argv[0] = 'plur'\n"
    "try:\n"
    "    runpy.run_module('plur', run_name='__main__', alter_sys=True)\n"
    "finally:\n"
    "    with open('/proc/self/status') as f:\n"
    "        hwm = next(line.split()[1] for line in f if line.startswith('VmHWM:'))\n"
    "    with open(out, 'w') as f:\n"
    "        f.write(hwm)\n"
)


def plur_measured(home: Path, tmp: Path, *args: str, timeout_s: float = 300.0) -> tuple[int, str, int]:
    """``python -m plur ARGS`` in a child process: ``(exit status, stderr, peak RSS in MiB)``."""
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "0",
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    err_path = tmp / "stderr.txt"

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_CAP, ADDRESS_CAP))

    hwm_path = tmp / "vmhwm.txt"
    hwm_path.unlink(missing_ok=True)
    with open(err_path, "wb") as err, open(os.devnull, "wb") as out:
        child = subprocess.Popen([sys.executable, "-c", MEASURED, str(hwm_path), *args], stdout=out, stderr=err,
                                 env=env, cwd=REPO, preexec_fn=cap)
    guard = threading.Timer(timeout_s, child.kill)  # a hang is a failure, never a stuck suite
    guard.start()
    try:
        _, status, usage = os.wait4(child.pid, 0)
    finally:
        guard.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    # the child's own high-water mark (VmHWM): ru_maxrss of a forked child also counts the parent's pages at the
    # fork, so a test process grown large by earlier tests read as a child over 400 MiB
    peak_kib = int(hwm_path.read_text()) if hwm_path.exists() else usage.ru_maxrss
    return child.returncode, err_path.read_text(encoding="utf-8", errors="replace"), peak_kib // 1024


def assert_refused_in_one_line(rc: int, stderr: str, peak_mib: int, needle: str = "max_input_bytes") -> None:
    assert peak_mib < PEAK_MIB, f"peak RSS {peak_mib} MiB; stderr: {stderr[-2000:]}"
    lines = stderr.strip().splitlines()
    assert rc == 2 and len(lines) == 1, stderr[-2000:]
    assert needle in lines[0] and "Traceback" not in stderr, lines[0]


def zstd_bomb(path: Path, total: int, fill: bytes, head: bytes = b"") -> None:
    """A Zstandard file of ``head`` then ``total`` bytes of ``fill`` (one 64 MiB frame, written again and again)."""
    import zstandard

    frame = zstandard.ZstdCompressor(level=19).compress(fill * (64 * MIB))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        if head:
            fh.write(zstandard.ZstdCompressor().compress(head))
        for _ in range(total // (64 * MIB)):
            fh.write(frame)


def zip_bomb(path: Path, name: str, head: bytes, fill: bytes, total: int, tail: bytes) -> None:
    """A zip holding ``name`` = ``head`` + ``total`` bytes of ``fill`` + ``tail``, deflated, written as it streams:
    after a full flush deflate forgets its history, so one compressed 1 MiB block stands for every block."""
    block = fill * MIB
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = z.compress(head) + z.flush(zlib.Z_FULL_FLUSH)
    again = z.compress(block) + z.flush(zlib.Z_FULL_FLUSH)
    assert z.compress(block) + z.flush(zlib.Z_FULL_FLUSH) == again
    last = z.compress(tail) + z.flush(zlib.Z_FINISH)
    count = total // MIB
    crc = zlib.crc32(head)
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + count * MIB + len(tail)
    packed = len(first) + count * len(again) + len(last)
    raw = name.encode()
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, packed, size, len(raw), 0) + raw)
        fh.write(first)
        for _ in range(count):
            fh.write(again)
        fh.write(last)
        where = fh.tell()
        central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, packed, size,
                              len(raw), 0, 0, 0, 0, 0o644 << 16, 0) + raw
        fh.write(central)
        fh.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), where, 0))


DSH_HEADER = json.dumps({"type": "session", "version": 0, "id": "s-bomb", "cwd": "/nowhere", "createdAt": 1}).encode()


@pytest.mark.parametrize("given", ["file", "home"])
def test_a_dsh_log_of_a_gibibyte_of_newlines_is_refused_within_400_mib(plur_home: Path, tmp_path: Path,
                                                                        given: str) -> None:
    dsh_home = tmp_path / "dsh"
    log = dsh_home / "sessions" / "--nowhere--" / "s-bomb" / "session.jsonl.zstd"
    zstd_bomb(log, 1 << 30, b"\n", DSH_HEADER + b"\n")
    assert log.stat().st_size < 64 * 1024
    rc, err, peak = plur_measured(plur_home, tmp_path, "ingest", str(log if given == "file" else dsh_home))
    assert_refused_in_one_line(rc, err, peak)


def test_a_zstd_of_4_gib_in_one_line_is_refused_within_400_mib(plur_home: Path, tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl.zstd"
    zstd_bomb(log, 4 << 30, b"\0", DSH_HEADER + b"\n")
    assert log.stat().st_size < 200 * 1024
    rc, err, peak = plur_measured(plur_home, tmp_path, "ingest", str(log))
    assert_refused_in_one_line(rc, err, peak)


def test_a_chatgpt_zip_with_a_gibibyte_inside_is_refused_within_400_mib(plur_home: Path, tmp_path: Path) -> None:
    export = tmp_path / "export.zip"
    zip_bomb(export, "conversations.json", b'[{"id": "c1", "mapping": {}, "title": "', b" ", 1 << 30, b'"}]')
    assert export.stat().st_size < 2 * MIB
    rc, err, peak = plur_measured(plur_home, tmp_path, "ingest", str(export))
    assert_refused_in_one_line(rc, err, peak)

    convo = [{"id": "c1", "title": "t", "current_node": "b", "mapping": {   # an export of a sane size still reads
        "a": {"id": "a", "parent": None, "children": ["b"], "message": None},
        "b": {"id": "b", "parent": "a", "children": [], "message": {
            "author": {"role": "user"}, "create_time": 1700000000,
            "content": {"content_type": "text", "parts": ["My cat is called Miso \U0001f408"]}}}}}]
    zip_bomb(export, "conversations.json", json.dumps(convo).encode(), b" ", MIB, b"")
    rc, err, peak = plur_measured(plur_home, tmp_path, "ingest", str(export))
    assert rc == 0 and peak < PEAK_MIB, err


def test_json_of_millions_of_empty_objects_is_refused_before_it_is_parsed(plur_home: Path, tmp_path: Path) -> None:
    src = tmp_path / "messages.json"  # 24 MiB on disk, about 700 MiB once parsed by json.loads
    with open(src, "wb") as fh:
        fh.write(b"[")
        for _ in range(24):
            fh.write(b"{}," * (MIB // 3))
        fh.write(b"{}]")
    rc, err, peak = plur_measured(plur_home, tmp_path, "ingest", str(src))
    assert_refused_in_one_line(rc, err, peak)


def test_notes_of_nothing_but_line_breaks_are_refused_before_they_are_split(plur_home: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ok.md").write_text("# Setup\n\nThe staging box runs Debian.\n", encoding="utf-8")
    with open(notes / "blank.md", "wb") as fh:  # 64 MiB of line breaks: a list of 64 million lines once split
        for _ in range(64):
            fh.write(b"\n" * MIB)
    rc, err, peak = plur_measured(plur_home, tmp_path, "import", "--format", "notes", str(notes / "blank.md"))
    assert_refused_in_one_line(rc, err, peak)


@pytest.mark.parametrize("door", ["ingest .json", "ingest .zip", "import .jsonl", "import a .jsonl 900 deep",
                                  "import frontmatter 900 deep"])
def test_deep_nesting_is_one_line_not_a_traceback(plur_home: Path, tmp_path: Path, door: str) -> None:
    deep, parsable = b"[" * 200_000, b"[" * 900 + b"]" * 900   # past every parser; within json's and libyaml's
    if door == "ingest .json":
        (src := tmp_path / "deep.json").write_bytes(deep)
    elif door == "ingest .zip":
        zip_bomb(src := tmp_path / "deep.zip", "conversations.json", deep, b" ", MIB, b"")
    elif door == "import .jsonl":
        (src := tmp_path / "deep.jsonl").write_bytes(deep + b"\n")
    elif door == "import a .jsonl 900 deep":
        (src := tmp_path / "deep.jsonl").write_bytes(b'{"statement": "a note", "deep": ' + parsable + b"}\n")
    else:
        (src := tmp_path / "memory").mkdir()
        (src / "user_x.md").write_bytes(b"---\nname: x\ndescription: y\ntype: user\nz: " + parsable + b"\n---\n\nhi\n")
    rc, err, peak = plur_measured(plur_home, tmp_path, door.split()[0], str(src))
    assert_refused_in_one_line(rc, err, peak, needle="nested too deeply")
