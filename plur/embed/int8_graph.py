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
Measured on 3,635 ``bench_recall`` document chunks (2 AVX2 cores, ONNX Runtime 1.32): 7,944-8,880 tokens/s
against 6,792-6,932 for the float32 graph (README "int8 embeddings").

:data:`WEIGHT_BITS` is 7: on x86 without AVX-VNNI, MLAS multiplies ``uint8 x int8`` with ``VPMADDUBSW``, which
saturates a pair of products at 32,767; ``255 x 63 x 2 = 32,130`` cannot (ONNX Runtime's quantisation guide,
"reduce_range"; 8-bit weights measured no better than noise here).

Smoothing (SmoothQuant, Xiao et al. 2023, migration strength :data:`SMOOTH_ALPHA`): a product's input has a few
outlier channels (after LayerNorm one channel reaches 28 where the median is 2.0), and a per-token scale set by
them leaves the other channels few levels. Given calibration runs (:func:`channel_maxima`), each input channel
``k`` is divided by ``s_k = sqrt(amax_act_k / amax_weight_k)`` (one ``Mul`` per distinct input) and the weight's
row ``k`` multiplied by it, which leaves the product unchanged in exact arithmetic and evens out the ranges
before quantisation. Calibrated on :data:`plur.embed.calibration.TEXTS` (48 sentences): cosine to float32 mean
0.9951 -> 0.9979, min 0.976 -> 0.991 on 1,000 document chunks; no measurable speed cost (8,688 against 8,454
tokens/s, same process, alternating).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

#: Bits of the symmetric per-column weight quantisation (range ``+-(2^(bits-1) - 1)``).
WEIGHT_BITS = 7
#: Bits of the symmetric per-token activation quantisation (``uint8`` around the zero point 128).
ACTIVATION_BITS = 8
#: Names this rewrite in a vector identity (bumped when its arithmetic changes).
TAG = "int8rows2"
#: SmoothQuant's migration strength: 0.5 splits each channel's range evenly between activation and weight.
SMOOTH_ALPHA = 0.5

__all__ = ["ACTIVATION_BITS", "SMOOTH_ALPHA", "TAG", "WEIGHT_BITS", "channel_maxima", "quantize_rows"]


def _weight_products(graph) -> dict[str, list[int]]:
    """Input name -> positions in ``graph.node`` of the ``MatMul`` nodes multiplying it by a constant 2-d weight."""
    weights = {init.name: init for init in graph.initializer}
    out: dict[str, list[int]] = {}
    for i, node in enumerate(graph.node):
        w = weights.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if w is not None and len(w.dims) == 2:
            out.setdefault(node.input[0], []).append(i)
    return out


def channel_maxima(src: Path, feeds: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Largest ``|value|`` per channel of each weight product's input over the runs ``feeds``: ``{name: [K] float32}``.

    Raises:
        ImportError: ``onnx`` or ``onnxruntime`` missing; onnxruntime errors for feeds that do not fit the graph.
    """
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    model = onnx.load(str(src))
    names = list(_weight_products(model.graph))
    model.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    out: dict[str, np.ndarray] = {}
    for feed in feeds:
        for name, value in zip(names, session.run(names, feed)):
            m = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            out[name] = np.maximum(out[name], m) if name in out else m
    return out


def quantize_rows(src: Path, dst: Path, maxima: dict[str, np.ndarray] | None = None) -> int:
    """Write to ``dst`` the graph at ``src`` with each constant-weight ``MatMul`` on per-token int8.

    Args:
        src: an ONNX graph (opset >= 13: ``ReduceMax`` with an ``axes`` attribute, as the bundle's opset 17).
        dst: where the rewritten graph goes (overwritten).
        maxima: :func:`channel_maxima` of calibration runs; given, each input is smoothed first (module doc).

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
    products = _weight_products(graph)
    smooth: dict[str, np.ndarray] = {}  # input name -> s_k (weights' rows x s, activations / s)
    for a, users in products.items():
        if a not in (maxima or {}):
            continue
        w_rows = np.max([np.abs(numpy_helper.to_array(weights[graph.node[i].input[1]])).max(axis=1) for i in users],
                        axis=0)
        s = np.maximum(maxima[a], 1e-5) ** SMOOTH_ALPHA / np.maximum(w_rows, 1e-5) ** (1 - SMOOTH_ALPHA)
        smooth[a] = (s / np.exp(np.mean(np.log(s)))).astype(np.float32)  # geometric mean 1: ranges stay put
    nodes: list = []
    quantised: dict[str, str] = {}  # input name -> prefix of its quantised row tensors
    count = 0
    targets = {i for users in products.values() for i in users}
    for i, node in enumerate(graph.node):
        if i not in targets:
            nodes.append(node)
            continue
        array = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
        p = f"q8_{count}_"
        count += 1
        a = node.input[0]
        if a in smooth:
            array = array * smooth[a][:, None]
        scale = np.maximum(np.abs(array).max(axis=0), 1e-12) / w_max
        q = np.clip(np.round(array / scale), -w_max, w_max).astype(np.int8)
        graph.initializer.extend([numpy_helper.from_array(q, p + "w"),
                                  numpy_helper.from_array(scale.astype(np.float32), p + "ws")])
        if a not in quantised:
            quantised[a] = p
            x = a
            if a in smooth:
                graph.initializer.append(numpy_helper.from_array((1 / smooth[a]).astype(np.float32), p + "inv_s"))
                nodes.append(helper.make_node("Mul", [a, p + "inv_s"], [p + "smoothed"]))
                x = p + "smoothed"
            nodes += [
                helper.make_node("Abs", [x], [p + "abs"]),
                helper.make_node("ReduceMax", [p + "abs"], [p + "max"], axes=[-1], keepdims=1),
                helper.make_node("Max", [p + "max", "q8_eps"], [p + "maxe"]),
                helper.make_node("Div", [p + "maxe", "q8_amax"], [p + "s"]),
                helper.make_node("Div", [x, p + "s"], [p + "x"]),
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
