"""Bi-encoder training run mechanics (torch only; skipped in the light test environment): a long
run can be evaluated while it goes on, from the weight snapshots it saves."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def test_snapshots_are_saved_during_the_run_and_differ_from_the_final_weights(tmp_path):
    torch = pytest.importorskip("torch")
    from cuilink_models import train_biencoder as tb

    out = tmp_path / "run"
    args = tb.parser().parse_args([
        "--kb", f"medic={FIXTURES / 'tiny_kb.jsonl'}", "--out", str(out), "--steps", "3", "--pairs", "2",
        "--hard-share", "0", "--threads", "1", "--lr", "1e-3", "--save-every-minutes", "1e-9",
    ])
    tb.train(args)
    snapshots = sorted(p.name for p in out.glob("step-*"))
    assert snapshots == ["step-1", "step-2", "step-3"]
    assert (out / "final" / "config.json").exists() and (out / "step-1" / "tokenizer.json").exists()
    first = tb.load_encoder(str(out / "step-1"), tb.load_tokenizer(str(out / "step-1")))
    final = tb.load_encoder(str(out / "final"), tb.load_tokenizer(str(out / "final")))
    a, b = first.state_dict(), final.state_dict()
    assert any(not torch.equal(a[k], b[k]) for k in a), "two more steps changed no weight"
