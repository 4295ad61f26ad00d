"""ONNX export checks.

1. With torch and transformers importable (requirements.txt): a tiny random BERT built from a
   config (no downloads) is exported like the real models; ONNX fp32 and int8 outputs are compared
   with torch (pooled cosine >= 0.999 fp32, >= 0.99 int8; cross-encoder logits), across batch
   sizes and sequence lengths (dynamic axes).
2. With onnxruntime and tokenizers alone (requirements-test.txt): the shipped models/default files
   are checked against their manifest (sha256, sizes, fields of docs/model-directory.md) and
   against torch reference outputs recorded at export time (tests/fixtures/reference_*.json).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from cuilink_models.export import MAX_LOGIT_DIFF, MIN_COSINE, cosine_rows, pool

MODELS = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"
DEFAULT = MODELS / "default"


def _ort(path):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


# ----------------------------------------------------------------------------------------------
# 1. tiny random BERT, torch vs ONNX


def _tiny_bert(kind):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=120, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, max_position_embeddings=64, num_labels=1
    )
    if kind == "bi-encoder":
        return transformers.BertModel(cfg).eval()
    return transformers.BertForSequenceClassification(cfg).eval()


def _tiny_export(tmp_path, kind):
    """(torch wrapper, its fp32 ONNX export) of the tiny random BERT."""
    from cuilink_models import export as E

    model = _tiny_bert(kind)
    wrapper = E.bi_wrapper(model) if kind == "bi-encoder" else E.cross_wrapper(model)
    E.export_fp32(wrapper, kind, tmp_path / "m.onnx", 120)
    return wrapper, tmp_path / "m.onnx"


@pytest.mark.parametrize("kind", ["bi-encoder", "cross-encoder"])
def test_tiny_bert_onnx_matches_torch(tmp_path, kind):
    torch = pytest.importorskip("torch")
    from cuilink_models import export as E

    wrapper, fp32 = _tiny_export(tmp_path, kind)
    int8, fp16 = tmp_path / "m.int8.onnx", tmp_path / "m.fp16.onnx"
    E.quantize_int8(fp32, int8)
    E.convert_fp16(fp32, fp16)
    rng = np.random.default_rng(0)
    for batch, length in [(1, 3), (5, 11), (3, 29)]:  # other shapes than the export's (2, 7)
        ids = rng.integers(5, 120, size=(batch, length)).astype(np.int64)
        mask = np.ones_like(ids)
        mask[0, length // 2 + 1 :] = 0  # padding in the first row
        tt = np.zeros_like(ids)
        tt[:, length // 2 :] = 1
        with torch.no_grad():
            if kind == "bi-encoder":
                ref = wrapper(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
            else:
                ref = wrapper(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(tt)).numpy()
        for path, bound in [(fp32, 0.999), (int8, 0.99), (fp16, 0.999)]:
            sess = _ort(path)
            if kind == "bi-encoder":
                out = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]
                assert out.shape == ref.shape
                cos = cosine_rows(pool(out, mask, "mean"), pool(ref, mask, "mean"))
                assert cos.min() >= bound, (path.name, batch, length, cos)
            else:
                out = sess.run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})[0]
                assert out.shape == (batch, 1)
                tol = 1e-3 if path is fp32 else (2e-2 if path is fp16 else 0.1)
                assert np.abs(out - ref).max() <= tol * max(1.0, np.abs(ref).max()), (path.name, out, ref)


# ----------------------------------------------------------------------------------------------
# 2. shipped default models, onnxruntime + tokenizers only

REQUIRED = ["schemaVersion", "id", "kind", "base", "files", "tokenizer", "maxLength", "inputNames", "outputName", "query", "sha256", "training", "metrics"]


def _shipped():
    out = []
    # crossencoder-fast: the opt-in distilled reranker (MODEL_CARD.md, "Distilled cross-encoder");
    # crossencoder-context: the opt-in context-reading reranker (MODEL_CARD.md, "Context cross-encoder").
    for sub, fixture in [("biencoder", "reference_biencoder.json"), ("crossencoder", "reference_crossencoder.json"),
                         ("crossencoder-fast", "reference_crossencoder_fast.json"),
                         ("crossencoder-context", "reference_crossencoder_context.json")]:
        if (DEFAULT / sub / "manifest.json").exists():
            out.append(pytest.param(sub, fixture, id=sub))
    return out


@pytest.mark.parametrize("sub,fixture", _shipped())
def test_shipped_manifest_and_files(sub, fixture):
    d = DEFAULT / sub
    m = json.loads((d / "manifest.json").read_text())
    for k in REQUIRED:
        assert k in m, k
    assert m["schemaVersion"] == 1
    assert m["kind"] == ("bi-encoder" if sub.endswith("biencoder") else "cross-encoder")
    if m["kind"] == "bi-encoder":
        assert m["outputName"] == "last_hidden_state" and m["pooling"] in ("cls", "mean") and m["dims"] > 0
        assert isinstance(m["normalize"], bool)
    else:
        assert m["outputName"] == "logits" and isinstance(m["candidate"]["includeSemanticType"], bool)
    assert set(m["files"]) <= {"fp32", "int8", "fp16"} and "int8" in m["files"]
    for name, digest in m["sha256"].items():
        p = d / name
        assert p.stat().st_size <= 50 * 1000 * 1000, name
        assert hashlib.sha256(p.read_bytes()).hexdigest() == digest, name
    for name in [m["tokenizer"], *m["files"].values()]:
        assert name in m["sha256"]
    tok = json.loads((d / m["tokenizer"]).read_text())
    added = {t["content"]: t for t in tok["added_tokens"]}
    for marker in m["query"]["markers"]:
        assert added[marker]["special"], marker
    assert tok["padding"] is None and tok["truncation"] is None


@pytest.mark.parametrize("sub,fixture", _shipped())
def test_shipped_onnx_matches_recorded_torch_outputs(sub, fixture):
    from tokenizers import Tokenizer

    d = DEFAULT / sub
    m = json.loads((d / "manifest.json").read_text())
    ref = json.loads((FIX / fixture).read_text())
    assert ref["modelId"] == m["id"], "fixture is stale: re-export with --fixture"
    tok = Tokenizer.from_file(str(d / m["tokenizer"]))
    if m["kind"] == "bi-encoder":
        encs = tok.encode_batch(ref["texts"])
    else:
        encs = tok.encode_batch([tuple(p) for p in ref["pairs"]])
    assert [e.ids for e in encs] == ref["input_ids"]
    L = max(len(e.ids) for e in encs)
    ids = np.zeros((len(encs), L), dtype=np.int64)
    mask = np.zeros_like(ids)
    tt = np.zeros_like(ids)
    for r, e in enumerate(encs):
        ids[r, : len(e.ids)], mask[r, : len(e.ids)], tt[r, : len(e.ids)] = e.ids, 1, e.type_ids
    for prec, name in m["files"].items():
        sess = _ort(d / name)
        assert [i.name for i in sess.get_inputs()] == m["inputNames"]
        if m["kind"] == "bi-encoder":
            h = sess.run([m["outputName"]], {"input_ids": ids, "attention_mask": mask})[0]
            cos = cosine_rows(pool(h, mask, m["pooling"]), np.array(ref["embeddings"], dtype=np.float32))
            assert cos.min() >= MIN_COSINE[prec], (prec, cos)
        else:
            logits = sess.run([m["outputName"]], {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})[0][:, 0]
            want = np.array(ref["logits"], dtype=np.float32)
            assert np.abs(logits - want).max() <= MAX_LOGIT_DIFF[prec] * max(1.0, float(np.abs(want).max())), (prec, logits, want)


def test_context_cross_encoder_int8_has_no_u8s8_saturation_recipe():
    # Its full-range int8 weights saturated onnxruntime's u8s8 kernels on a CPU without VNNI (one
    # sample logit -4.7 against torch's -2.0; test_shipped_onnx_matches_recorded_torch_outputs
    # catches it there): it ships re-quantized with 7-bit weights, and says so.
    m = json.loads((DEFAULT / "crossencoder-context" / "manifest.json").read_text())
    assert "reduce_range" in m["onnx"]["int8"]
    assert m["requantized"]["from"]["sha256"] != m["sha256"][m["files"]["int8"]]
    assert m["onnx"]["checkAgainstTorch"]["maxAbsLogitDiff_int8"] < 0.5


@pytest.mark.parametrize("kind", ["bi-encoder", "cross-encoder"])
def test_per_token_int8_rows_do_not_depend_on_their_batch(tmp_path, kind):
    # The per-tensor int8 file scales activations per batch tensor, so a row moves with its batch;
    # the per-token rewrite (cuilink_models.per_token) gives every row the same output alone or in
    # any batch, padding included, and stays as close to torch as the int8 bound above.
    torch = pytest.importorskip("torch")
    from cuilink_models import export as E

    wrapper, fp32 = _tiny_export(tmp_path, kind)
    per_tensor, per_token = tmp_path / "m.int8.onnx", tmp_path / "m.pt.int8.onnx"
    E.quantize_int8(fp32, per_tensor, reduce_range=True)
    assert "per token" in E.quantize_int8(fp32, per_token, reduce_range=True, per_token=True)
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 120, size=(6, 17)).astype(np.int64)
    mask = np.ones_like(ids)
    for row, length in enumerate([17, 3, 9, 12, 5, 17]):
        mask[row, length:] = 0
    ids[mask == 0] = 0
    # Spread the activations of one row far beyond the others: a per-tensor scale follows it.
    ids[5] = 7

    def run(path, rows, width=17):
        feeds = {"input_ids": ids[rows, :width], "attention_mask": mask[rows, :width]}
        if kind == "cross-encoder":
            feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
        out = _ort(path).run(None, feeds)[0]
        return pool(out, feeds["attention_mask"], "mean") if kind == "bi-encoder" else out[:, 0]

    everything = list(range(6))
    batched = run(per_token, everything)
    alone = np.concatenate([run(per_token, [r]) for r in everything])
    unpadded = np.concatenate([run(per_token, [r], int(mask[r].sum())) for r in everything])
    assert np.array_equal(batched, alone)
    np.testing.assert_allclose(unpadded, batched, rtol=0, atol=1e-5)
    with torch.no_grad():
        if kind == "bi-encoder":
            ref = pool(wrapper(torch.from_numpy(ids), torch.from_numpy(mask)).numpy(), mask, "mean")
            assert cosine_rows(batched, ref).min() >= 0.99
        else:
            ref = wrapper(torch.from_numpy(ids), torch.from_numpy(mask), torch.zeros_like(torch.from_numpy(ids))).numpy()[:, 0]
            assert np.abs(batched - ref).max() <= 0.1 * max(1.0, np.abs(ref).max())
    # The per-tensor file is the control: the same rows move with their batch.
    assert not np.array_equal(run(per_tensor, everything), np.concatenate([run(per_tensor, [r]) for r in everything]))


def test_per_token_rewrite_refuses_a_graph_without_dynamic_quantization(tmp_path):
    pytest.importorskip("torch")
    from cuilink_models.per_token import per_token_file

    _, fp32 = _tiny_export(tmp_path, "bi-encoder")
    with pytest.raises(ValueError, match="DynamicQuantizeLinear"):
        per_token_file(fp32, tmp_path / "out.onnx")


# ----------------------------------------------------------------------------------------------
# 3. an export (or a re-quantization) whose ONNX files drift from torch is refused, not shipped


def _tiny_minilm_shape(outlier):
    """A tiny BERT over the shipped vocabulary. With `outlier`, one dimension of the hidden state
    after each attention block is that many times larger than the rest: one activation scale per
    tensor (dynamic int8) then leaves the other dimensions no resolution."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=30524, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=64)
    model = transformers.BertModel(cfg)
    with torch.no_grad():
        for p in model.parameters():  # distinct tensors, as a trained model has (see test_distill.py)
            p.add_(torch.randn_like(p) * (1e-4 if outlier else 1e-2))
        if outlier:
            for layer in model.encoder.layer:
                layer.attention.output.LayerNorm.weight[0] = outlier
    return model.eval()


def _checkpoint(tmp_path, model):
    import shutil

    ckpt = tmp_path / "ckpt"
    model.save_pretrained(ckpt)
    shutil.copy(DEFAULT / "biencoder" / "tokenizer.json", ckpt / "tokenizer.json")  # [M] and [/M] included
    return ckpt


def test_export_refuses_an_int8_file_far_from_torch(tmp_path):
    from cuilink_models import export as E

    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match=r"int8: min pooled cosine"):
        E.export_model("bi-encoder", str(_checkpoint(tmp_path, _tiny_minilm_shape(1000.0))), out, "drifting")
    assert not (out / "manifest.json").exists() and not (out / "model.int8.onnx").exists()
    # the same architecture without the outlier exports
    m = E.export_model("bi-encoder", str(_checkpoint(tmp_path / "ok", _tiny_minilm_shape(None))), tmp_path / "ok" / "out", "fine")
    assert m["onnx"]["checkAgainstTorch"]["minCosine_int8"] >= E.MIN_COSINE["int8"]


def test_requantize_refuses_a_drifting_int8_file_and_changes_nothing(tmp_path):
    from cuilink_models import export as E
    from cuilink_models.common import sha256_file
    from cuilink_models.requantize import requantize

    out = tmp_path / "out"
    E.export_model("bi-encoder", str(_checkpoint(tmp_path, _tiny_minilm_shape(None))), out, "bi")
    # fp16 weights that quantize badly (what requantize rebuilds the int8 file from)
    fp32 = tmp_path / "drifting.onnx"
    E.export_fp32(E.bi_wrapper(_tiny_minilm_shape(1000.0)), "bi-encoder", fp32, 30524)
    E.convert_fp16(fp32, out / "model.fp16.onnx")
    m = json.loads((out / "manifest.json").read_text())
    m["sha256"]["model.fp16.onnx"] = sha256_file(out / "model.fp16.onnx")
    (out / "manifest.json").write_text(json.dumps(m))
    int8_before, manifest_before = sha256_file(out / "model.int8.onnx"), (out / "manifest.json").read_text()
    with pytest.raises(RuntimeError, match=r"int8: min pooled cosine"):
        requantize(out, "2026-01-01")
    assert sha256_file(out / "model.int8.onnx") == int8_before, "the shipped int8 file was replaced"
    assert (out / "manifest.json").read_text() == manifest_before
