"""Light tests of the pipeline's plumbing: learning-rate progress, shipping an export with its
checksums, the converters' scratch directory, and the model card (no torch needed)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from cuilink_models import model_card
from cuilink_models.common import progress_lr_factor
from cuilink_models.export import scratch_cwd
from cuilink_models.pipeline import ship


def test_lr_factor_warms_up_then_decays_to_zero():
    assert progress_lr_factor(0.0) == pytest.approx(1e-3)
    assert progress_lr_factor(0.025) == pytest.approx(0.5)
    assert progress_lr_factor(0.05) == pytest.approx(1.0)
    assert progress_lr_factor(0.525) == pytest.approx(0.5)
    assert progress_lr_factor(1.0) == 0.0
    assert progress_lr_factor(1.7) == 0.0  # over budget
    assert progress_lr_factor(-1.0) == pytest.approx(1e-3)


def test_scratch_cwd_restores_cwd_and_removes_leftovers():
    before = os.getcwd()
    with scratch_cwd() as d:
        assert Path(os.getcwd()).resolve() == d.resolve()
        Path("sym_shape_infer_temp.onnx").write_bytes(b"x")  # what onnxruntime leaves behind
    assert os.getcwd() == before
    assert not d.exists()


def _export_dir(tmp_path: Path, kind="bi-encoder") -> Path:
    src = tmp_path / "export"
    src.mkdir()
    (src / "model.int8.onnx").write_bytes(b"int8 bytes")
    (src / "tokenizer.json").write_text("{}")
    manifest = {
        "id": "m1", "kind": kind, "files": {"int8": "model.int8.onnx"}, "tokenizer": "tokenizer.json", "metrics": {},
        "sha256": {n: hashlib.sha256((src / n).read_bytes()).hexdigest() for n in ["model.int8.onnx", "tokenizer.json"]},
    }
    (src / "manifest.json").write_text(json.dumps(manifest))
    fixture = tmp_path / "ref.json"
    fixture.write_text(json.dumps({"modelId": "m1", "modelDir": "somewhere"}))
    return src


def test_ship_copies_records_metrics_and_repoints_fixture(tmp_path):
    src = _export_dir(tmp_path)
    dst = tmp_path / "default" / "biencoder"
    dst.mkdir(parents=True)
    (dst / "stale.onnx").write_bytes(b"old")
    ship(src, dst, {"acc@1": 0.5}, tmp_path / "ref.json", tmp_path / "fixtures" / "reference_biencoder.json")
    m = json.loads((dst / "manifest.json").read_text())
    assert m["metrics"] == {"acc@1": 0.5}
    assert not (dst / "stale.onnx").exists()
    ref = json.loads((tmp_path / "fixtures" / "reference_biencoder.json").read_text())
    assert ref["modelId"] == "m1" and ref["modelDir"].endswith("default/biencoder")


def test_ship_refuses_a_file_that_does_not_match_its_checksum(tmp_path):
    src = _export_dir(tmp_path)
    (src / "model.int8.onnx").write_bytes(b"changed after export")
    with pytest.raises(RuntimeError, match="checksum"):
        ship(src, tmp_path / "out", {}, tmp_path / "ref.json", None)


def _summary(bi_acc, rerank_acc):
    acc = lambda a: {"acc@1": a, "acc@5": min(1.0, a + 0.1), "mentions": 787}  # noqa: E731
    base = {"mentions": 787, "dictionaryNames": 77691, "exactOnly": acc(0.58), "lexical": acc(0.77), "exact+dense": acc(0.83),
            "mentionsPerSecond": 200.0}
    return {
        "results": {"base": base, "bi": {"exact+dense": acc(bi_acc), "mentionsPerSecond": 210.0},
                    # the card judges the weight chosen under the linker's default policy, not reranking every mention
                    "reranked": {"exact+dense": acc(bi_acc), "exact+dense+rerank": acc(0.5),
                                 "weightSweep": {"margin": 0.05, "byWeight": {"1.0": acc(0.7), "0.1": acc(rerank_acc)},
                                                 "chosenWeight": 0.1, "chosen": acc(rerank_acc)}}},
        "shippedTrainedBiEncoder": bi_acc > 0.83, "shippedCrossEncoder": rerank_acc > bi_acc, "rerankTop": 10,
        "biTraining": {"method": "m", "hyperparameters": {"steps": 3, "msLoss": {}}, "data": {"medic": {"file": "f", "sha256": "a" * 64}}},
        "ceTraining": None, "totalSeconds": 60, "machine": "test box",
    }


def _card_dir(tmp_path, with_ce):
    out = tmp_path / "default"
    onnx = {"onnx": {"checkAgainstTorch": {"minCosine_int8": 0.98}}}
    (out / "biencoder").mkdir(parents=True)
    (out / "biencoder" / "manifest.json").write_text(json.dumps(
        {"id": "bi", "pooling": "mean", "dims": 384, "maxLength": 32, "files": {"int8": "model.int8.onnx"}, "base": "b", **onnx}))
    if with_ce:
        (out / "crossencoder").mkdir()
        (out / "crossencoder" / "manifest.json").write_text(json.dumps(
            {"id": "ce", "maxLength": 64, "files": {"int8": "model.int8.onnx"}, "onnx": {"checkAgainstTorch": {}}}))
    return out


def test_model_card_states_met_and_missed_bars(tmp_path, monkeypatch):
    monkeypatch.setattr(model_card, "WORK_DIR", tmp_path / "work")
    card = model_card.write_card(_card_dir(tmp_path, with_ce=True), _summary(0.86, 0.84)).read_text()
    assert "bi-encoder alone (cuilink_models.evaluate): acc@1 0.860 ≥ 0.80 — **met**" in card
    # the reranker made things worse: not shipped, and the bar is judged on what is shipped
    assert "no cross-encoder is shipped" in card
    assert "with the reranker: **not met** — the trained cross-encoder moved acc@1 from 0.860 to 0.840" in card
    card = model_card.write_card(_card_dir(tmp_path / "b", with_ce=False), _summary(0.79, 0.82)).read_text()
    assert "bi-encoder alone (cuilink_models.evaluate): acc@1 0.830 ≥ 0.80" in card  # the base is shipped when training did not help
    assert "**missed by 0.030**" in card
    assert "| all non-exact mentions | 0.500 |" in card  # the other settings are listed too


def test_model_card_records_the_dev_chosen_weight_without_handing_it_to_the_linker(tmp_path, monkeypatch):
    # The pipeline picks the weight on dev; the linker's defaults are chosen on the tune split and a
    # manifest `rerank` block is refused (docs/model-directory.md), so the card may not say otherwise.
    monkeypatch.setattr(model_card, "WORK_DIR", tmp_path / "work")
    card = model_card.write_card(_card_dir(tmp_path, with_ce=True), _summary(0.86, 0.87)).read_text()
    assert "is chosen on dev under the linker's default policy (best acc@1, then acc@5): w = 0.1." in card
    assert "linker uses it" not in card
    assert "a record only: the linker's defaults live in src/link/link-config.ts" in card


def test_model_card_names_the_split_its_runs_were_judged_on(tmp_path, monkeypatch):
    monkeypatch.setattr(model_card, "WORK_DIR", tmp_path / "work")
    summary = {**_summary(0.8, 0.87), "evaluation": {"corpus": "NCBItrainset_corpus.txt", "split": "tune"}}
    card = model_card.write_card(_card_dir(tmp_path, with_ce=True), summary).read_text()
    assert "`NCBItrainset_corpus.txt`, its **tune** split" in card
    assert "did not beat the untrained base on the tune split" in card
    assert "is chosen on the tune split under the linker's default policy" in card
    assert not re.search(r"\bdev\b", card.replace("(`cuilink eval` on dev reports those)", ""))
    # a summary from before the pipeline recorded its evaluation was judged on dev, and says so
    old = model_card.write_card(_card_dir(tmp_path / "old", with_ce=True), _summary(0.8, 0.87)).read_text()
    assert "NCBI-disease **dev**" in old and "did not beat the untrained base on dev" in old


def test_model_card_keeps_the_hand_written_distilled_section(tmp_path, monkeypatch):
    monkeypatch.setattr(model_card, "WORK_DIR", tmp_path / "work")
    out = _card_dir(tmp_path, with_ce=True)
    (out / "crossencoder-fast").mkdir()
    (out / "crossencoder-fast" / "manifest.json").write_text(json.dumps(
        {"id": "ce-fast", "files": {"int8": "model.int8.onnx"}, "architecture": {"layers": 3},
         "training": {"teacher": {"dir": "models/default/crossencoder"}}}))
    section = "## Distilled cross-encoder\n\nMeasured by hand: 1.67x.\n"
    long_run = "## Longer bi-encoder run (not shipped)\n\nTune acc@5 lower.\n"
    context = "## Context cross-encoder (opt-in)\n\nReads the note.\n"
    (out / "MODEL_CARD.md").write_text("# old card\n\n" + section + "\n" + context + "\n" + long_run + "\n## Export\n\nold export text\n")
    card = model_card.write_card(out, _summary(0.86, 0.84)).read_text()
    assert "| crossencoder-fast/ (opt-in) | `ce-fast` | cross-encoder distilled from `models/default/crossencoder` (manifest `training.teacher`), 3 layers" in card
    assert card.count("## Distilled cross-encoder") == 1 and "Measured by hand: 1.67x." in card
    assert card.index("## Distilled cross-encoder") < card.index("## Export") and "old export text" not in card
    assert card.count("## Longer bi-encoder run") == 1 and "Tune acc@5 lower." in card
    assert card.count("## Context cross-encoder (opt-in)") == 1 and "Reads the note." in card
    assert model_card.kept_section("# no such section\n", "## Distilled cross-encoder") == ""


def test_model_card_judges_the_bars_through_cuilink_eval_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(model_card, "WORK_DIR", tmp_path / "work")
    (tmp_path / "work").mkdir()
    rows = [["shipped bi-encoder, no reranker", {"acc@1": 0.85, "acc@5": 0.92}],
            ["shipped bi-encoder + shipped cross-encoder, defaults", {"acc@1": 0.855, "acc@5": 0.93}]]
    (tmp_path / "work" / "cuilink-eval.json").write_text(json.dumps({"label": "l", "rows": rows}))
    card = model_card.write_card(_card_dir(tmp_path, with_ce=True), _summary(0.83, 0.84)).read_text()
    assert "with the reranker (cuilink_models.evaluate): acc@1 0.840 < 0.85 — **missed by 0.010**" in card
    assert "with the reranker, through `cuilink eval` (the issue's measure): acc@1 0.855 ≥ 0.85 — **met**" in card
    assert "+0.5 points of acc@1 through `cuilink eval` (+4 of 787 mentions)" in card


def test_cuilink_eval_row_reads_the_overall_block():
    report = {"metrics": {"overall": {"acc1": 0.9, "acc5": 0.95, "n": 3}, "byLabel": {}}}
    assert model_card.cuilink_eval_row(report) == {"acc@1": 0.9, "acc@5": 0.95}


def test_resume_keeps_a_stage_only_while_it_is_newer_than_what_it_was_made_from(tmp_path):
    import time
    from types import SimpleNamespace

    from cuilink_models.pipeline import resumable, up_to_date

    training = tmp_path / "runs-ce" / "training.json"
    training.parent.mkdir()
    training.write_text("{}")
    time.sleep(0.05)
    manifest = tmp_path / "export-ce" / "manifest.json"
    manifest.parent.mkdir()
    manifest.write_text('{"from": "run 1"}')
    calls = []
    export = lambda: calls.append("export")  # noqa: E731
    a = SimpleNamespace(resume=True)
    assert up_to_date(manifest, [training])
    assert resumable(a, manifest, export, inputs=[training]) == {"from": "run 1"}
    assert calls == []
    time.sleep(0.05)
    training.write_text('{"retrained": true}')  # the run was redone (models/README.md: move runs-ce away, --resume)
    assert not up_to_date(manifest, [training])
    resumable(a, manifest, export, inputs=[training])
    assert calls == ["export"], "the export of the old run is made again"
    assert not up_to_date(tmp_path / "missing.json")
