"""Torch state dict of a BERT graph exported by torch.onnx, read back from its initializers.

Named initializers (embeddings, biases, LayerNorms) keep their torch names under a prefix; the
exporter renames the linear weights ('onnx::MatMul_N') and stores them transposed ([in, out]).
Each is mapped back through the graph: MatMul(x, W) -> Add(., bias), where the bias initializer
still carries the torch name."""

from __future__ import annotations

import numpy as np


def state_from_onnx_graph(graph, prefix: str) -> tuple[dict[str, np.ndarray], int]:
    """(torch name -> array without the prefix, number of linear weights mapped back)."""
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers: dict[str, list] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    state = {name[len(prefix):]: arr for name, arr in inits.items() if name.startswith(prefix)}
    mapped = 0
    for n in graph.node:
        if n.op_type != "MatMul":
            continue
        w = next((i for i in n.input if i in inits and not i.startswith(prefix)), None)
        if w is None:
            continue
        adds = [c for c in consumers.get(n.output[0], []) if c.op_type == "Add"]
        bias = [i for c in adds for i in c.input if i.startswith(prefix) and i.endswith(".bias")]
        if len(bias) != 1:
            raise RuntimeError(f"cannot map {w}: {bias}")
        state[bias[0][len(prefix):-len(".bias")] + ".weight"] = inits[w].T.copy()
        mapped += 1
    return state, mapped
