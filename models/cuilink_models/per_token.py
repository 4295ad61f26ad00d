"""Per-token activation quantization for an onnxruntime dynamic-int8 graph.

`quantize_dynamic` inserts DynamicQuantizeLinear, which picks one scale and zero point for a whole
activation tensor: a row's output then depends on the other rows of its batch (up to 3 logits on
the context cross-encoder), so the linker had to run every mention and pair alone. This rewrite
quantizes each token's row on its own, symmetrically:

    scale = max|x| / 127 (last axis)      q = QuantizeLinear(x / scale, 1, 128)    (uint8)
    y     = MatMulIntegerToFloat(q, W, 1, w_scale, 128, w_zero_point) * scale

Integer products are exact and every float step is per row, so a row's output is the same alone
or in any batch (with any padding), and closer to fp32 than one scale per tensor. The weights
(and their per-channel scales) are left as they are.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ACTIVATIONS = "per-token"
RECIPE = "activations quantized per token (symmetric, scale max|x|/127, zero point 128): a row's output never depends on its batch"


def per_token_graph(model):
    """The model with every DynamicQuantizeLinear → MatMulInteger → Cast → Mul rewritten (in place)."""
    from onnx import helper, numpy_helper

    g = model.graph
    quantizers = {n.output[0]: n for n in g.node if n.op_type == "DynamicQuantizeLinear"}
    if not quantizers:
        raise ValueError("no DynamicQuantizeLinear node: not an onnxruntime dynamic-int8 graph (or already per token)")
    producers = {o: n for n in g.node for o in n.output}
    consumers: dict[str, list] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    dropped: set[int] = set()
    replacement: dict[int, list] = {}
    for n in g.node:
        if n.op_type != "MatMulInteger" or n.input[0] not in quantizers:
            continue
        q, w, _, w_zero = n.input
        act_scale = quantizers[q].output[1]
        (cast,) = consumers[n.output[0]]
        (mul,) = consumers[cast.output[0]]
        if cast.op_type != "Cast" or mul.op_type != "Mul":
            raise ValueError(f"unexpected pattern after {n.name}: {cast.op_type}, {mul.op_type}")
        scales = producers[next(i for i in mul.input if i != cast.output[0])]
        if scales.op_type != "Mul" or act_scale not in scales.input:
            raise ValueError(f"unexpected scale product for {n.name}")
        w_scale = next(i for i in scales.input if i != act_scale)
        unscaled = mul.output[0] + "_per_token_unscaled"
        dropped.update((id(n), id(cast), id(scales)))
        replacement[id(mul)] = [
            helper.make_node("MatMulIntegerToFloat", [q, w, "per_token_one", w_scale, "per_token_zero_point", w_zero], [unscaled], domain="com.microsoft"),
            helper.make_node("Mul", [unscaled, act_scale], [mul.output[0]]),
        ]
    nodes = []
    for n in g.node:
        if id(n) in dropped:
            continue
        if id(n) in replacement:
            nodes += replacement[id(n)]
        elif n.op_type == "DynamicQuantizeLinear":
            x, (q, scale, _) = n.input[0], n.output
            t = lambda k, p=n.name or x: f"{p}_per_token_{k}"  # noqa: E731
            nodes += [
                helper.make_node("Abs", [x], [t("abs")]),
                helper.make_node("ReduceMax", [t("abs")], [t("max")], keepdims=1, axes=[-1]),
                helper.make_node("Max", [t("max"), "per_token_epsilon"], [t("max_eps")]),
                helper.make_node("Div", [t("max_eps"), "per_token_127"], [scale]),
                helper.make_node("Div", [x, scale], [t("scaled")]),
                helper.make_node("QuantizeLinear", [t("scaled"), "per_token_one", "per_token_zero_point"], [q]),
            ]
        else:
            nodes.append(n)
    left = [n.name for n in nodes if n.op_type in ("MatMulInteger", "DynamicQuantizeLinear")]
    if left:
        raise ValueError(f"not rewritten: {left[:3]}")
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(
        [
            numpy_helper.from_array(np.array(127.0, dtype=np.float32), "per_token_127"),
            numpy_helper.from_array(np.array(1e-8, dtype=np.float32), "per_token_epsilon"),
            numpy_helper.from_array(np.array(1.0, dtype=np.float32), "per_token_one"),
            numpy_helper.from_array(np.array(128, dtype=np.uint8), "per_token_zero_point"),
        ]
    )
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


def per_token_file(src: Path, dst: Path) -> None:
    import onnx

    onnx.save(per_token_graph(onnx.load(str(src))), str(dst))
