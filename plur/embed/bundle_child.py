"""Export a model's ONNX bundle in a child process, so the process that needs it never loads torch.

The first start on a machine without the bundle (:mod:`plur.embed.onnx_bundle`) must load the model
with torch and sentence-transformers once to export it. Done in-process, torch and its libraries stay
resident for the life of the process (~450 MiB: a first-time 100k-engram index build peaked at
1,828 MiB with them, against the cached path's figure without). Here a child Python process builds the
same :class:`~plur.embed.embedder.SentenceTransformerEmbedder` (same spec, folder and verification),
which writes and verifies the bundle, and exits; the parent then opens the bundle like any later start.

The child runs :mod:`plur.embed.bundle_main` (``python -m plur.embed.bundle_main``: pickled arguments on
stdin, exit 0 = bundle written).
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger("plur.embed.bundle_child")

#: Longest a child export may take (load the model, export, check the probes), seconds.
TIMEOUT_S = 900
#: Set in the child's environment, so a child never starts another child.
_IN_CHILD = "PLUR_BUNDLE_CHILD"

__all__ = ["TIMEOUT_S", "export_in_child"]


def export_in_child(spec_or_path: Any, folder: Path | None, onnx_dir: Path, batch_size: int) -> bool:
    """Write the bundle of ``spec_or_path`` under ``onnx_dir`` from a child process.

    Args:
        spec_or_path: a :class:`~plur.embed.models_lock.ModelSpec` or a model folder path, as given to
            :class:`~plur.embed.embedder.SentenceTransformerEmbedder`.
        folder: where the spec's files are (``None``: by name).
        onnx_dir: the graph cache folder (the bundle goes to its ``onnx/`` subfolder).
        batch_size: texts per forward pass.

    Returns:
        True when the child wrote a verified bundle; False when it did not (the reason, with the child's
        last output lines, is logged at INFO), when this is already a child, on a timeout, or without
        onnxruntime (no bundle can serve: the caller loads the model itself).
    """
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    if os.environ.get(_IN_CHILD):
        return False
    args = pickle.dumps({"spec_or_path": spec_or_path, "folder": folder, "onnx_dir": Path(onnx_dir),
                         "batch_size": int(batch_size)})
    env = dict(os.environ, **{_IN_CHILD: "1"})
    try:
        proc = subprocess.run([sys.executable, "-P", "-m", "plur.embed.bundle_main"], input=args, env=env,
                              capture_output=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("ONNX bundle not exported in a child process (%s); exporting in this process", exc)
        return False
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        log.info("ONNX bundle not exported in a child process (exit %s: %s); exporting in this process",
                 proc.returncode, " | ".join(tail))
        return False
    return True
