"""Re-quantize a shipped model's int8 file from its fp16 weights, with 7-bit weights (reduce_range:
onnxruntime's u8s8 kernels on x86 CPUs without VNNI saturate with full-range weights; models/README.md,
int8) and, with --per-token, activations quantized per token (cuilink_models.per_token: a row's
output no longer depends on its batch, so the linker batches mentions and pairs). The fp16 file,
tokenizer and fixture stay; the manifest gets the new int8 sha256, recipe, `int8Activations` and
torch check, and a `requantized` entry saying what changed.

    python -m cuilink_models.requantize --model default/crossencoder-context   # the shipped file
    python -m cuilink_models.requantize --model DIR --per-token                # batch-independent rows
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .common import sha256_file, write_json


def bi_encoder_from_onnx(onnx_path: Path, heads: int):
    """BertModel with the weights of an exported bi-encoder graph."""
    import onnx
    import torch
    from transformers import BertConfig, BertModel

    from .onnx_state import state_from_onnx_graph

    raw, _ = state_from_onnx_graph(onnx.load(str(onnx_path)).graph, "m.")
    state = {k: torch.from_numpy(v.astype(np.float32)) for k, v in raw.items()}
    cfg = BertConfig(
        vocab_size=state["embeddings.word_embeddings.weight"].shape[0],
        hidden_size=state["embeddings.word_embeddings.weight"].shape[1],
        num_hidden_layers=1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer.")),
        num_attention_heads=heads,
        intermediate_size=state["encoder.layer.0.intermediate.dense.bias"].shape[0],
        max_position_embeddings=state["embeddings.position_embeddings.weight"].shape[0],
        type_vocab_size=state["embeddings.token_type_embeddings.weight"].shape[0],
    )
    model = BertModel(cfg, add_pooling_layer="pooler.dense.weight" in state)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise RuntimeError(f"bi-encoder weights do not match: missing {missing}, unexpected {unexpected}")
    return model.eval()


def _padded(encs):
    width = max(len(e.ids) for e in encs)
    ids, mask, types = (np.zeros((len(encs), width), dtype=np.int64) for _ in range(3))
    for r, e in enumerate(encs):
        ids[r, : len(e.ids)], mask[r, : len(e.ids)], types[r, : len(e.ids)] = e.ids, 1, e.type_ids
    return ids, mask, types


def torch_check(kind: str, wrapper, int8: Path, tokenizer_file: Path, pooling: str) -> tuple[str, float, list[str]]:
    """(manifest check key, value, what is beyond export's bounds): the int8 file against torch on
    the export's sample inputs."""
    import torch
    from tokenizers import Tokenizer

    from . import export as E

    tok = Tokenizer.from_file(str(tokenizer_file))
    session = E.ort_session(int8)
    if kind == "bi-encoder":
        ids, mask, _ = _padded(tok.encode_batch(E.SAMPLE_MENTIONS))
        with torch.no_grad():
            want = E.pool(wrapper(torch.from_numpy(ids), torch.from_numpy(mask)).numpy(), mask, pooling)
        got = E.pool(session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0], mask, pooling)
        value = float(E.cosine_rows(got, want).min())
        return "minCosine_int8", round(value, 6), E.drift_beyond_bounds(kind, {"int8": value})
    ids, mask, types = _padded(tok.encode_batch([tuple(p) for p in E.SAMPLE_PAIRS]))
    with torch.no_grad():
        want = wrapper(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(types)).numpy()
    got = session.run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
    value = float(np.abs(got - want).max())
    return "maxAbsLogitDiff_int8", round(value, 6), E.drift_beyond_bounds(kind, {"int8": value}, want)


def requantize(model_dir: Path, date: str, per_token: bool = False) -> dict:
    from . import export as E
    from .distill_crossencoder import teacher_from_onnx

    manifest = json.loads((model_dir / "manifest.json").read_text())
    kind = manifest["kind"]
    if "fp16" not in manifest["files"] or "int8" not in manifest["files"]:
        raise SystemExit(f"{model_dir}: needs fp16 and int8 files")
    fp16 = model_dir / manifest["files"]["fp16"]
    heads = manifest["architecture"]["heads"]
    if kind == "bi-encoder":
        wrapper = E.bi_wrapper(bi_encoder_from_onnx(fp16, heads))
    else:
        wrapper = E.cross_wrapper(teacher_from_onnx(fp16, heads))
    int8 = model_dir / manifest["files"]["int8"]
    before = {"sha256": manifest["sha256"][int8.name], "recipe": manifest["onnx"].get("int8", E.INT8_RECIPE)}
    with tempfile.TemporaryDirectory(prefix="cuilink-requantize-") as tmp:
        fp32, new_int8 = Path(tmp) / "model.onnx", Path(tmp) / "model.int8.onnx"
        E.export_fp32(wrapper, kind, fp32, manifest["architecture"]["vocab"])
        recipe = E.quantize_int8(fp32, new_int8, reduce_range=True, per_token=per_token)
        # Checked before it replaces the shipped file: a refused file leaves the directory as it was.
        key, check, bad = torch_check(kind, wrapper, new_int8, model_dir / manifest["tokenizer"], manifest.get("pooling", "mean"))
        if bad:
            raise RuntimeError(f"{model_dir}: the re-quantized int8 file differs from torch beyond tolerance ({'; '.join(bad)}); nothing changed")
        shutil.copyfile(new_int8, int8)
    manifest["sha256"][int8.name] = sha256_file(int8)
    manifest["onnx"]["int8"] = recipe
    manifest["onnx"]["int8Activations"] = E.int8_activations(per_token)
    manifest["onnx"]["checkAgainstTorch"][key] = check
    why = ["full-range int8 weights saturate onnxruntime's u8s8 kernels on x86 CPUs without VNNI"]
    if per_token:
        why.append("one activation scale per batch tensor made a row's output depend on its batch, so every mention and pair ran alone")
    entry = {
        "date": date,
        "command": f"python -m cuilink_models.requantize --model {model_dir.as_posix().split('models/', 1)[-1]}" + (" --per-token" if per_token else ""),
        "from": before,
        "why": "; ".join(why),
        "weights": "the fp16 file's, upcast to fp32 (the fp16 file is unchanged)",
    }
    # A second re-quantization keeps the record of the first.
    if manifest.get("requantized"):
        entry["earlier"] = manifest["requantized"]
    manifest["requantized"] = entry
    write_json(model_dir / "manifest.json", manifest)
    print(f"{model_dir}: int8 re-quantized (reduce_range{', per-token activations' if per_token else ''}); {key} on the sample inputs {check}")
    return manifest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a model directory (manifest, fp16 and int8 files)")
    ap.add_argument("--per-token", action="store_true", help="activations quantized per token (outputs independent of the batch)")
    ap.add_argument("--date", default=datetime.date.today().isoformat(), help="the day recorded in the manifest (default today, YYYY-MM-DD)")
    a = ap.parse_args(argv)
    requantize(Path(a.model), a.date, a.per_token)


if __name__ == "__main__":
    main()
