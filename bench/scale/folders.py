"""Does one folder of a million engram files hurt?  ``python -m bench.scale.folders`` (issue 49).

    python -m bench.scale.folders [--n 1000000] [--work DIR] [--repeat 3] [--git] [--keep]

Writes ``--n`` small engram-shaped YAML files (~380 bytes, one 4 KiB block each on ext4) once in one flat
folder, and hard-links the same files into two sharded trees: 120 month folders (``YYYY-MM/``, the layout
plur writes, :mod:`plur.store.layout`) and 1,000 folders of 1,000. Then, interleaved (flat, month, k1000,
flat, ...) so a busy machine's load falls on each alike, it times what plur and a person do with the folder:

* ``names``: every file name by ``os.scandir`` (the quick refresh's listing), recursing into shards;
* ``stat pass``: a name and ``stat`` per file (the store's full scan, :mod:`plur.store.folder_scan`);
* ``open``: opening and reading 10,000 files by name, in random order (``plur show``, ``get``);
* ``ls``: ``ls`` of the folder a person opens first (the flat folder; the month tree's top and one month);
* ``du -s``, ``grep -rl`` of a word across the tree, and a shell glob of ``*.yaml`` (``grep x engrams/*.yaml``);
* with ``--git``: ``git status`` of the flat and month trees committed (fast-import, then an index refresh).

Each figure is CPU seconds (user + sys, the process's or the child's) and wall seconds, printed as it is
taken with the 1-minute load, then as the median of ``--repeat`` (``grep -rl`` runs once). Hard links share inodes, so the trees differ only in their
folders, which is what is measured. The scratch tree is deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LAYOUTS = ("flat", "month", "k1000")
MONTHS = 120


def _ids(n: int) -> list[str]:
    """``n`` engram ids spread evenly over :data:`MONTHS` months from 2017-01, seeded."""
    rng = random.Random(49)
    out: dict[str, None] = {}
    while len(out) < n:
        m = len(out) * MONTHS // n
        y, mo = 2017 + m // 12, m % 12 + 1
        out[f"ENG-{y:04d}-{mo:02d}-{rng.randint(1, 28):02d}-{rng.getrandbits(24):06x}"] = None
    return list(out)


def _text(eid: str, i: int) -> bytes:
    return (f"id: {eid}\nstatement: turn {i} of a long conversation about the garden, the build and the "
            f"weekend plans (note {i * 7919 % 100003})\ntype: fact\nscope: global\nsource:\n  kind: conversation\n"
            f"  format: scale\n  session: s{i // 40}\n  turn: {i % 40}\n  role: user\n"
            f"created: '{eid[4:14]}T12:00:00Z'\npinned: false\nstatus: active\n"
            f"content_hash: sha256:{i:016x}\n").encode()


def rel(layout: str, eid: str, i: int) -> str:
    """The file's path under the tree's root in ``layout``."""
    if layout == "flat":
        return f"{eid}.yaml"
    if layout == "month":
        return f"{eid[4:11]}/{eid}.yaml"
    return f"{i // 1000:03d}/{eid}.yaml"


def build(work: Path, ids: list[str]) -> float:
    """Write the flat tree and link the two others; returns wall seconds."""
    t0 = time.monotonic()
    for layout in LAYOUTS:
        (work / layout).mkdir(parents=True, exist_ok=True)
    flat = work / "flat"
    for i, eid in enumerate(ids):
        p = flat / f"{eid}.yaml"
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, _text(eid, i))
        os.close(fd)
        for layout in LAYOUTS[1:]:
            q = work / layout / rel(layout, eid, i)
            try:
                os.link(p, q)
            except FileNotFoundError:
                q.parent.mkdir()
                os.link(p, q)
    return time.monotonic() - t0


def _walk(root: str, with_stat: bool) -> int:
    n = 0
    with os.scandir(root) as it:
        for e in it:
            if e.is_dir(follow_symlinks=False):
                n += _walk(e.path, with_stat)
            elif e.name.endswith(".yaml"):
                if with_stat:
                    e.stat()
                n += 1
    return n


def _in_process(fn: Callable[[], Any]) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.monotonic()
    fn()
    return time.process_time() - c0, time.monotonic() - w0


def _child(cmd: list[str] | str, cwd: Path, shell: bool = False,
           env: dict[str, str] | None = None) -> tuple[float, float, str]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       executable="/bin/bash" if shell else None, env=env)
    w = time.monotonic() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return cpu, w, p.stderr.decode(errors="replace").strip()[:80]


def _open_many(root: Path, names: list[str]) -> None:
    for name in names:
        with open(root / name, "rb") as f:
            f.read()


def _git_env(tree: Path) -> dict[str, str]:
    """The repository of ``tree`` lives beside it (``<tree>.git``), so ``du``, ``grep -r`` and the walks skip it."""
    return {**os.environ, "GIT_DIR": f"{tree}.git", "GIT_WORK_TREE": str(tree)}


def git_commit(tree: Path) -> None:
    """Commit ``tree`` through one fast-import pack (no loose object per file), then refresh its index."""
    env = _git_env(tree)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True, env=env)
    fi = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=tree, stdin=subprocess.PIPE, env=env)
    assert fi.stdin is not None
    w = fi.stdin.write
    w(b"commit refs/heads/main\ncommitter b <b@b> 0 +0000\ndata 1\nx\n")
    for dirpath, _dirs, files in os.walk(tree):
        for f in files:
            p = Path(dirpath) / f
            data = p.read_bytes()
            w(b"M 100644 inline " + str(p.relative_to(tree)).encode() + b"\ndata %d\n" % len(data) + data + b"\n")
    fi.stdin.close()
    fi.wait()
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/main"], cwd=tree, check=True, env=env)
    subprocess.run(["git", "reset", "-q"], cwd=tree, check=True, env=env)
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=tree, env=env)


def measure(work: Path, ids: list[str], repeat: int, git: bool) -> dict[str, dict[str, list[tuple[float, float]]]]:
    rng = random.Random(7)
    sample = rng.sample(range(len(ids)), min(10_000, len(ids)))
    month = ids[len(ids) // 2][4:11]
    out: dict[str, dict[str, list[tuple[float, float]]]] = {lay: {} for lay in LAYOUTS}

    def add(lay: str, what: str, cpu: float, wall: float) -> None:
        out[lay].setdefault(what, []).append((cpu, wall))
        print(f"  {lay:6s} {what}: {cpu:.3f} s CPU / {wall:.3f} s wall, load {os.getloadavg()[0]:.1f}", flush=True)

    for rnd in range(repeat):
        for lay in LAYOUTS:
            root = work / lay
            add(lay, "names (os.scandir)", *_in_process(lambda: _walk(str(root), False)))
            add(lay, "stat pass (scandir + stat)", *_in_process(lambda: _walk(str(root), True)))
            names = [rel(lay, ids[i], i) for i in sample]
            add(lay, "open+read 10,000 by name", *_in_process(lambda: _open_many(root, names)))
            first = ["ls"] if lay != "month" else ["ls", "--", "."]
            add(lay, "ls (the folder a person opens)", *_child(first, root)[:2])
            if lay == "month":
                add(lay, f"ls {month}/ (one month)", *_child(["ls", month], root)[:2])
            add(lay, "ls -R (every name)", *_child(["ls", "-R"], root)[:2])
            add(lay, "du -s", *_child(["du", "-s", "."], root)[:2])
            if rnd == 0:  # reads every file (minutes at 1M on a busy machine) and is alike in every layout: once
                add(lay, "grep -rl (whole tree)", *_child(["grep", "-rl", "--include=*.yaml", "note 4242)", "."], root)[:2])
            glob = "grep -l garden -- *.yaml" if lay == "flat" else f"grep -l garden -- {month if lay == 'month' else '000'}/*.yaml"
            cpu, wall, err = _child(glob, root, shell=True)
            add(lay, "shell glob: grep x <folder>/*.yaml" + (f" [{err}]" if err else ""), cpu, wall)
            if git and Path(f"{root}.git").is_dir():
                add(lay, "git status", *_child(["git", "status", "--porcelain"], root, env=_git_env(root))[:2])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale.folders", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--work", default="/tmp/plur-folders", help="scratch folder (deleted after unless --keep)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--git", action="store_true", help="also commit the flat and month trees and time git status")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    work = Path(args.work)
    ids = _ids(args.n)
    try:
        if not (work / "flat").is_dir():
            print(f"writing {args.n:,} files and linking them into two sharded trees ...", flush=True)
            print(f"  {build(work, ids):.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
        if args.git:
            for lay in ("flat", "month"):
                if not (work / f"{lay}.git").is_dir():
                    t0 = time.monotonic()
                    git_commit(work / lay)
                    print(f"  git commit of {lay}: {time.monotonic() - t0:.0f} s", flush=True)
        load0 = os.getloadavg()[0]
        res = measure(work, ids, args.repeat, args.git)
        load1 = os.getloadavg()[0]
        print(f"\n{args.n:,} files; CPU s / wall s, median of {args.repeat}; load {load0:.1f} -> {load1:.1f}")
        whats = list(dict.fromkeys(w for lay in LAYOUTS for w in res[lay]))
        print(f"{'':44s}" + "".join(f"{lay:>20s}" for lay in LAYOUTS))
        for w in whats:
            cells = []
            for lay in LAYOUTS:
                xs = res[lay].get(w)
                cells.append("-" if not xs else f"{statistics.median(c for c, _ in xs):.3f} / "
                                                f"{statistics.median(x for _, x in xs):.3f}")
            print(f"{w[:44]:44s}" + "".join(f"{c:>20s}" for c in cells))
    finally:
        if not args.keep and work.exists():
            t0 = time.monotonic()
            shutil.rmtree(work)
            print(f"deleted {work} in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
