"""The child process of :func:`plur.embed.bundle_child.export_in_child`: build the embedder, which exports
and verifies the ONNX bundle, then exit (0 when a bundle serves it, 3 when none could be made).

    python -m plur.embed.bundle_main   # pickled {spec_or_path, folder, onnx_dir, batch_size} on stdin
"""

from __future__ import annotations

import logging
import pickle
import sys


def main() -> int:
    """Read the arguments from stdin, build the embedder on the CPU, report whether a bundle serves it."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    args = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - our own parent, same user, over a pipe
    from .embedder import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(args["spec_or_path"], device="cpu", batch_size=args["batch_size"],
                                      folder=args["folder"], onnx_dir=args["onnx_dir"])
    return 0 if emb.bundle is not None else 3


if __name__ == "__main__":
    sys.exit(main())
