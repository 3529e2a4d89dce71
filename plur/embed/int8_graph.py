"""An int8 copy of an exported encoder graph whose vectors do not depend on a text's batch-mates.

Every ``MatMul`` with a constant ``[K, N]`` weight (per MiniLM layer: query, key, value, attention
output and the two feed-forward products, 82.5% of ONNX Runtime's time on documents) becomes an
integer product on the CPU's 8-bit multiply-add instructions:

* weights quantised once, per output column (symmetric, :data:`WEIGHT_BITS` bits);
* activations quantised at run time, **per token**: each row of ``A`` gets its own scale
  ``max|row| / 127`` and zero point 128 (``uint8``). ONNX Runtime's ``quantize_dynamic`` uses one scale per
  tensor, i.e. per batch, so a text's vector changed with the texts batched beside it (by up to 0.029 per
  element on 1,000 document chunks); per token, a row is quantised alike in any batch (single and batched
  vectors equal to 6e-8), which an embedding cache (one text, one vector) needs;
* ``MatMulInteger(A_q, W_q) -> int32``, then ``x scale_row x scale_column`` back to float32. Inputs shared by
  several products (query, key and value read the same row) are quantised once.

Everything else (embeddings, LayerNorm, softmax, GELU, pooling, normalisation) stays float32.
Measured on 3,635 ``bench_recall`` document chunks (2 AVX2 cores, ONNX Runtime 1.32): 8,479-8,707 tokens/s
against 6,907-6,932 for the float32 graph; cosine to the float32 vectors mean 0.995, min 0.976 (1,000
chunks). :data:`WEIGHT_BITS` is 7: on x86 without AVX-VNNI, MLAS multiplies ``uint8 x int8`` with
``VPMADDUBSW``, which saturates a pair of products at 32,767; ``255 x 63 x 2 = 32,130`` cannot (ONNX
Runtime's quantisation guide, "reduce_range"; 8-bit weights measured no better than noise here).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: Bits of the symmetric per-column weight quantisation (range ``+-(2^(bits-1) - 1)``).
WEIGHT_BITS = 7
#: Bits of the symmetric per-token activation quantisation (``uint8`` around the zero point 128).
ACTIVATION_BITS = 8
#: Names this rewrite in a vector identity (bumped when its arithmetic changes).
TAG = "int8rows1"

__all__ = ["ACTIVATION_BITS", "TAG", "WEIGHT_BITS", "quantize_rows"]


def quantize_rows(src: Path, dst: Path) -> int:
    """Write to ``dst`` the graph at ``src`` with each constant-weight ``MatMul`` on per-token int8.

    Args:
        src: an ONNX graph (opset >= 13: ``ReduceMax`` with an ``axes`` attribute, as the bundle's opset 17).
        dst: where the rewritten graph goes (overwritten).

    Returns:
        The number of products rewritten (36 for a 6-layer BERT encoder).

    Raises:
        ImportError: the ``onnx`` package is missing (extra ``onnx``); ``ValueError``: no product to rewrite.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    a_max = float(2 ** (ACTIVATION_BITS - 1) - 1)
    w_max = float(2 ** (WEIGHT_BITS - 1) - 1)
    zero = 2 ** (ACTIVATION_BITS - 1)
    graph.initializer.extend([
        numpy_helper.from_array(np.array(a_max, np.float32), "q8_amax"),
        numpy_helper.from_array(np.array(1e-12, np.float32), "q8_eps"),
        numpy_helper.from_array(np.array(float(zero), np.float32), "q8_zero_f"),
        numpy_helper.from_array(np.array(zero, np.uint8), "q8_zero"),
    ])
    nodes: list = []
    quantised: dict[str, str] = {}  # input name -> prefix of its quantised row tensors
    count = 0
    for node in graph.node:
        w = weights.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        array = numpy_helper.to_array(w).astype(np.float32) if w is not None else None
        if array is None or array.ndim != 2:
            nodes.append(node)
            continue
        p = f"q8_{count}_"
        count += 1
        scale = np.maximum(np.abs(array).max(axis=0), 1e-12) / w_max
        q = np.clip(np.round(array / scale), -w_max, w_max).astype(np.int8)
        graph.initializer.extend([numpy_helper.from_array(q, p + "w"),
                                  numpy_helper.from_array(scale.astype(np.float32), p + "ws")])
        a = node.input[0]
        if a not in quantised:
            quantised[a] = p
            nodes += [
                helper.make_node("Abs", [a], [p + "abs"]),
                helper.make_node("ReduceMax", [p + "abs"], [p + "max"], axes=[-1], keepdims=1),
                helper.make_node("Max", [p + "max", "q8_eps"], [p + "maxe"]),
                helper.make_node("Div", [p + "maxe", "q8_amax"], [p + "s"]),
                helper.make_node("Div", [a, p + "s"], [p + "x"]),
                helper.make_node("Round", [p + "x"], [p + "xr"]),
                helper.make_node("Add", [p + "xr", "q8_zero_f"], [p + "xz"]),
                helper.make_node("Cast", [p + "xz"], [p + "xq"], to=TensorProto.UINT8),
            ]
        a_p = quantised[a]
        nodes += [
            helper.make_node("MatMulInteger", [a_p + "xq", p + "w", "q8_zero"], [p + "yi"]),
            helper.make_node("Cast", [p + "yi"], [p + "yf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [p + "yf", p + "ws"], [p + "yw"]),
            helper.make_node("Mul", [p + "yw", a_p + "s"], [node.output[0]]),
        ]
    if not count:
        raise ValueError(f"{src}: no MatMul with a constant 2-d weight to quantise")
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for n in graph.node for name in n.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    onnx.save(model, str(dst))
    return count
