"""Provenance of a benchmark run: git commit, dataset hash, library versions, machine."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

#: Distributions whose versions go into every manifest.
PACKAGES: tuple[str, ...] = ("plur", "numpy", "torch", "sentence-transformers", "transformers", "usearch",
                             "PyStemmer", "tqdm", "matplotlib")


def sha256_file(path: str | Path, chunk_bytes: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in ``chunk_bytes`` chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk_bytes):
            h.update(block)
    return h.hexdigest()


def dataset_info(path: str | Path) -> dict[str, Any]:
    """``{path, sha256, bytes}`` of a data file."""
    p = Path(path)
    return {"path": str(p), "sha256": sha256_file(p), "bytes": p.stat().st_size}


def git_state(repo: str | Path | None = None) -> dict[str, Any]:
    """``{sha, dirty}`` of the repository holding this package (``sha`` None outside git or before a commit)."""
    cwd = Path(repo) if repo else Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    sha = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"sha": sha, "dirty": bool(status) if status is not None else None}


def versions() -> dict[str, str | None]:
    """Python and :data:`PACKAGES` versions (None when not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def machine() -> dict[str, Any]:
    """OS, CPU, logical core count and RAM (bytes) of this machine."""
    info: dict[str, Any] = {"system": platform.system(), "release": platform.release(),
                            "machine": platform.machine(), "processor": platform.processor() or None,
                            "cpu_count": os.cpu_count()}
    try:
        info["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        info["memory_bytes"] = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return info


def base_manifest() -> dict[str, Any]:
    """The fields every manifest shares: git, versions, machine, command line."""
    return {"git": git_state(), "versions": versions(), "machine": machine(), "argv": sys.argv[:]}
