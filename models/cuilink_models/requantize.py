"""Re-quantize a shipped cross-encoder's int8 file from its fp16 weights, with 7-bit weights
(reduce_range): onnxruntime's u8s8 kernels on x86 CPUs without VNNI saturate with full-range
weights (models/README.md, int8). The fp16 file, tokenizer and fixture stay; the manifest gets the
new int8 sha256, recipe and torch check, and a `requantized` entry saying what changed.

    python -m cuilink_models.requantize --model default/crossencoder-context
"""

from __future__ import annotations

import argparse
import datetime
import json
import tempfile
from pathlib import Path

import numpy as np

from .common import sha256_file, write_json


def requantize(model_dir: Path, date: str) -> dict:
    from . import export as E
    from .distill_crossencoder import teacher_from_onnx

    manifest = json.loads((model_dir / "manifest.json").read_text())
    if manifest["kind"] != "cross-encoder" or "fp16" not in manifest["files"] or "int8" not in manifest["files"]:
        raise SystemExit(f"{model_dir}: needs a cross-encoder with fp16 and int8 files")
    model = teacher_from_onnx(model_dir / manifest["files"]["fp16"], manifest["architecture"]["heads"])
    wrapper = E.cross_wrapper(model)
    int8 = model_dir / manifest["files"]["int8"]
    before = manifest["sha256"][int8.name]
    with tempfile.TemporaryDirectory(prefix="cuilink-requantize-") as tmp:
        fp32 = Path(tmp) / "model.onnx"
        E.export_fp32(wrapper, "cross-encoder", fp32, manifest["architecture"]["vocab"])
        recipe = E.quantize_int8(fp32, int8, reduce_range=True)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / manifest["tokenizer"]))
    encs = tok.encode_batch([tuple(p) for p in E.SAMPLE_PAIRS])
    width = max(len(e.ids) for e in encs)
    ids, mask, types = (np.zeros((len(encs), width), dtype=np.int64) for _ in range(3))
    for r, e in enumerate(encs):
        ids[r, : len(e.ids)], mask[r, : len(e.ids)], types[r, : len(e.ids)] = e.ids, 1, e.type_ids
    import torch

    with torch.no_grad():
        want = wrapper(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(types)).numpy()
    got = E.ort_session(int8).run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
    check = round(float(np.abs(got - want).max()), 6)
    manifest["sha256"][int8.name] = sha256_file(int8)
    manifest["onnx"]["int8"] = recipe
    manifest["onnx"]["checkAgainstTorch"]["maxAbsLogitDiff_int8"] = check
    manifest["requantized"] = {
        "date": date,
        "command": f"python -m cuilink_models.requantize --model {model_dir.as_posix().split('models/', 1)[-1]}",
        "from": {"sha256": before, "recipe": E.INT8_RECIPE},
        "why": "full-range int8 weights saturate onnxruntime's u8s8 kernels on x86 CPUs without VNNI",
        "weights": "the fp16 file's, upcast to fp32 (the fp16 file is unchanged)",
    }
    write_json(model_dir / "manifest.json", manifest)
    print(f"{model_dir}: int8 re-quantized with reduce_range; max |logit - torch| on the sample pairs {check}")
    return manifest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a cross-encoder model directory (manifest, fp16 and int8 files)")
    ap.add_argument("--date", default=datetime.date.today().isoformat(), help="the day recorded in the manifest (default today, YYYY-MM-DD)")
    a = ap.parse_args(argv)
    requantize(Path(a.model), a.date)


if __name__ == "__main__":
    main()
