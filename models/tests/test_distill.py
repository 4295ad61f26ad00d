"""Distillation pieces (torch only; skipped in the light test environment): the teacher rebuilt
from an exported fp16 graph gives the exported model's logits, the student keeps exactly the chosen
layers, and the pair file is grouped per query in retrieval order."""

from __future__ import annotations

import json

import numpy as np
import pytest


def _tiny_cross_encoder(layers: int):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=120, hidden_size=64, num_hidden_layers=layers, num_attention_heads=4,
                                  intermediate_size=128, max_position_embeddings=64, num_labels=1)
    model = transformers.BertForSequenceClassification(cfg).eval()
    # Fresh biases are zeros and LayerNorm weights ones: the exporter would share those equal
    # tensors under one name, which a trained model never has. Make every tensor distinct.
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model


def test_teacher_rebuilt_from_fp16_onnx_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from cuilink_models import export as E
    from cuilink_models.distill_crossencoder import teacher_from_onnx

    model = _tiny_cross_encoder(4)
    fp32, fp16 = tmp_path / "m.onnx", tmp_path / "m.fp16.onnx"
    E.export_fp32(E.cross_wrapper(model), "cross-encoder", fp32, 120)
    E.convert_fp16(fp32, fp16)
    rebuilt = teacher_from_onnx(fp16, heads=4)
    assert rebuilt.config.num_hidden_layers == 4
    rng = np.random.default_rng(1)
    ids = torch.from_numpy(rng.integers(5, 120, size=(3, 13)).astype(np.int64))
    mask = torch.ones_like(ids)
    mask[0, 7:] = 0
    types = torch.zeros_like(ids)
    types[:, 6:] = 1
    with torch.no_grad():
        want = model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
        got = rebuilt(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
    # fp16 weights: close, not equal; a wrong mapping (transposed or swapped weight) is far off
    assert torch.allclose(got, want, atol=2e-2 * max(1.0, float(want.abs().max()))), (got, want)


def test_student_keeps_the_chosen_layers():
    torch = pytest.importorskip("torch")
    from cuilink_models.distill_crossencoder import student_from

    teacher = _tiny_cross_encoder(4)
    student = student_from(teacher, [1, 3])
    assert student.config.num_hidden_layers == 2 and len(student.bert.encoder.layer) == 2
    for mine, theirs in [(0, 1), (1, 3)]:
        a = student.bert.encoder.layer[mine].attention.self.query.weight
        b = teacher.bert.encoder.layer[theirs].attention.self.query.weight
        assert torch.equal(a, b) and a.data_ptr() != b.data_ptr()
    assert len(teacher.bert.encoder.layer) == 4  # the teacher is untouched
    assert torch.equal(student.classifier.weight, teacher.classifier.weight)


def test_pairs_grouped_per_query_in_file_order(tmp_path):
    from cuilink_models.distill_crossencoder import read_pairs

    rows = [(0, 2.0), (0, -1.0), (0, 0.5), (0, -3.0), (1, 1.0), (2, 0.1), (2, 0.2)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"q": q, "ids": [101, 7 + i, 102], "types": [0, 0, 1], "logit": v}) + "\n" for i, (q, v) in enumerate(rows)))
    groups = read_pairs(path, top=3)
    # query 1 has a single candidate: nothing to rank, dropped; query 0 cut to its first 3
    assert [[r[2] for r in g] for g in groups] == [[2.0, -1.0, 0.5], [0.1, 0.2]]
    assert groups[0][1][0] == [101, 8, 102]


def test_training_helpers_step_log_and_record(tmp_path):
    torch = pytest.importorskip("torch")
    from cuilink_models.common import log_progress, optimizer_step, write_training_record

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    losses = [optimizer_step(torch, model, opt, torch.nn.functional.mse_loss(model(x), y)) for _ in range(20)]
    assert losses[-1] < losses[0]
    with open(tmp_path / "train.log", "a") as log:
        log_progress(log, "step 20/20")
    assert (tmp_path / "train.log").read_text() == "step 20/20\n"
    info = write_training_record(tmp_path, {"method": "m"}, 12.4, 20.6, losses, 5)
    assert json.loads((tmp_path / "training.json").read_text()) == info
    assert info["trainSeconds"] == 12 and info["totalSeconds"] == 21 and info["finalLoss"] == pytest.approx(float(np.mean(losses[-5:])))


def test_gzipped_pairs_read_as_plain(tmp_path):
    import gzip

    from cuilink_models.distill_crossencoder import read_pairs

    text = "".join(json.dumps({"q": q, "ids": [101, q, 102], "types": [0, 0, 1], "logit": float(q)}) + "\n" for q in [0, 0, 1, 1])
    (tmp_path / "p.jsonl").write_text(text)
    with gzip.open(tmp_path / "p.jsonl.gz", "wt") as f:
        f.write(text)
    assert read_pairs(tmp_path / "p.jsonl.gz", top=3) == read_pairs(tmp_path / "p.jsonl", top=3)


def test_trained_weights_travel_in_shards_and_rebuild_the_student(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from cuilink_models import distill_crossencoder as D

    trained = _tiny_cross_encoder(2)
    fresh = _tiny_cross_encoder(2)
    with torch.no_grad():
        for p in fresh.parameters():
            p.add_(1.0)  # every weight differs from the trained student's
        fresh.bert.embeddings.word_embeddings.weight.copy_(trained.bert.embeddings.word_embeddings.weight)
    monkeypatch.setattr(D, "TRAINABLE_SHARD_BYTES", 40_000)  # force several shards on a tiny model
    names = D.save_trainable(trained, tmp_path / "w")
    assert len(names) > 1 and all((tmp_path / "w" / n).stat().st_size < 60_000 for n in names)
    from safetensors.torch import load_file

    assert not any(D.FROZEN in load_file(str(tmp_path / "w" / n)) for n in names)  # the frozen embeddings stay home
    D.load_trainable(fresh, tmp_path / "w")
    for (name, a), b in zip(trained.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), name
    with pytest.raises(FileNotFoundError):
        D.load_trainable(fresh, tmp_path)
    other = _tiny_cross_encoder(3)  # a student with another layer count does not take them
    with pytest.raises(RuntimeError, match="do not match"):
        D.load_trainable(other, tmp_path / "w")
