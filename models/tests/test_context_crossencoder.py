"""The context cross-encoder's training side reads pairs as the linker does (issue 26)."""

import json
import random
from pathlib import Path

import pytest

from cuilink_models.train_context_crossencoder import PairEncoder, fit_around, read_groups, training_group

HERE = Path(__file__).resolve().parent
MODELS = HERE.parent


def test_fit_around_keeps_a_window_centred_on_the_marker():
    ids = list(range(100))
    assert fit_around(ids, 200, 50) == ids
    assert fit_around(ids, 10, None) == ids[:10]
    assert fit_around(ids, 10, 999) == ids[:10]
    assert fit_around(ids, 8, 50) == list(range(48, 56))  # a quarter of the window before the marker
    assert fit_around(ids, 8, 98) == list(range(92, 100))  # never past the end


def test_pairs_match_the_typescript_linker_token_for_token():
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(MODELS / "default" / "crossencoder" / "tokenizer.json"))
    vocab = tok.get_vocab()
    fixture = json.loads((HERE / "fixtures" / "linker_pairs.json").read_text())
    for case in fixture["pairs"]:
        enc = PairEncoder(lambda text: tok.encode(text, add_special_tokens=False).ids, vocab["[CLS]"], vocab["[SEP]"],
                          vocab["[PAD]"], vocab["[M]"], case["maxLength"])
        ids, types = enc.pair(case["query"], case["candidate"])
        assert ids == case["ids"], case["query"][:60]
        assert types == case["typeIds"]
        assert len(ids) <= case["maxLength"]


def test_training_groups_put_a_gold_first_and_never_a_gold_among_negatives(tmp_path):
    q = {"part": "learn", "query": "[M] x [/M]", "gold": [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}],
         "candidates": [{"id": i, "text": i.lower()} for i in ["C", "A", "D", "B", "E", "F", "G", "H"]], "positives": [1, 3]}
    rng = random.Random(1)
    for _ in range(20):
        group = training_group(q, 4, rng)
        assert group[0] in {"a", "b"}
        assert len(group) == 5
        assert not {"a", "b"} & set(group[1:])
        assert group[1:4] == ["c", "d", "e"]  # the hardest wrong candidates, in retrieval order
    lines = [q, {**q, "part": "tune"}, {**q, "gold": [], "part": "learn"}, {**q, "part": "kb"}]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in lines))
    parts = read_groups(data)
    assert [len(parts[p]) for p in ("learn", "tune", "kb")] == [1, 1, 1]
