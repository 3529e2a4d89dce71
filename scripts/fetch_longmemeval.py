#!/usr/bin/env python3
"""Download LongMemEval (cleaned release, MIT) from its official Hugging Face dataset, pinned by sha256.

    python scripts/fetch_longmemeval.py                 # LongMemEval-S (277 MB) into ~/.cache/plur/data/longmemeval
    python scripts/fetch_longmemeval.py --file oracle   # the oracle file (15 MB)
    python scripts/fetch_longmemeval.py --dest DIR --file all

Then: ``python -m bench longmemeval --data <path printed here> --granularity session``.

Source: https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned at revision
98d7416c24c778c2fee6e6f3006e7a073259d48f (the 2025-09 cleaned release by the LongMemEval
authors; the README of github.com/xiaowu0162/LongMemEval links the dataset). The sha256
and sizes below are those several independent projects pin for that revision. A file
whose size or sha256 differs is deleted and the script exits non-zero. ``HF_ENDPOINT``
(e.g. a mirror) replaces ``https://huggingface.co``. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import urllib.request
from pathlib import Path

REPO = "xiaowu0162/longmemeval-cleaned"
REVISION = "98d7416c24c778c2fee6e6f3006e7a073259d48f"
FILES: dict[str, tuple[str, int, str]] = {  # key -> (file name, bytes, sha256)
    "s": ("longmemeval_s_cleaned.json", 277_383_467,
          "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442"),
    "oracle": ("longmemeval_oracle.json", 15_388_478,
               "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"),
}
DEFAULT_DEST = Path.home() / ".cache" / "plur" / "data" / "longmemeval"
CHUNK_BYTES = 1 << 20


def url_for(name: str) -> str:
    """Download URL of ``name`` at the pinned revision (``HF_ENDPOINT`` honoured)."""
    base = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    return f"{base}/datasets/{REPO}/resolve/{REVISION}/{name}"


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK_BYTES):
            h.update(block)
    return h.hexdigest()


def fetch(key: str, dest: Path, timeout_s: float = 60.0) -> Path:
    """Download one pinned file into ``dest`` (skipped when a verified copy is there).

    Returns:
        The verified file's path.

    Raises:
        SystemExit: on a network error or a size/sha256 mismatch (the partial file is removed).
    """
    name, size, sha = FILES[key]
    target = dest / name
    if target.is_file() and target.stat().st_size == size and sha256_of(target) == sha:
        print(f"{target}: already present, sha256 verified")
        return target
    dest.mkdir(parents=True, exist_ok=True)
    part = target.with_suffix(target.suffix + ".part")
    url = url_for(name)
    print(f"downloading {url}\n  -> {target} ({size / 1e6:.0f} MB)")
    h = hashlib.sha256()
    got = 0
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a plur dependency
        tqdm = None
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp, open(part, "wb") as fh:
            bar = tqdm(total=size, unit="B", unit_scale=True, desc=name) if tqdm else None
            while block := resp.read(CHUNK_BYTES):
                fh.write(block)
                h.update(block)
                got += len(block)
                if bar:
                    bar.update(len(block))
            if bar:
                bar.close()
    except OSError as exc:
        part.unlink(missing_ok=True)
        sys.exit(f"error: could not download {url} ({exc}); check the network or set HF_ENDPOINT to a mirror")
    if got != size or h.hexdigest() != sha:
        part.unlink(missing_ok=True)
        sys.exit(f"error: {name} is {got} bytes with sha256 {h.hexdigest()}, expected {size} bytes with sha256 "
                 f"{sha}; the file was deleted (a changed upstream file or a broken mirror)")
    os.replace(part, target)
    print(f"{target}: sha256 verified")
    return target


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--file", choices=("s", "oracle", "all"), default="s", help="which file (default s)")
    p.add_argument("--dest", type=Path, default=DEFAULT_DEST, help=f"folder (default {DEFAULT_DEST})")
    args = p.parse_args(argv)
    keys = list(FILES) if args.file == "all" else [args.file]
    for key in keys:
        path = fetch(key, args.dest)
        print(f"run: python -m bench longmemeval --data {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
