"""Fast tests of the JSONL reader, group building and the evaluation protocol (no torch)."""

from pathlib import Path

import numpy as np
import pytest

from cuilink_models.data import build_groups, convert_mondo_rare, read_concepts
from cuilink_models.evaluate import Dictionary, accuracy, exact_first, norm_gold_id, read_pubtator

FIX = Path(__file__).parent / "fixtures"


def test_read_concepts_skips_blank_lines_and_fills_defaults():
    cs = read_concepts(FIX / "tiny_kb.jsonl")
    assert [c.id for c in cs] == ["MESH:D001943", "MESH:D009371", "MESH:D005955", "MESH:D003550"]
    assert cs[0].names == ["Breast Neoplasms", "Breast Cancer", "Breast Tumors"]
    assert read_concepts(FIX / "tiny_doid.jsonl")[1].synonyms == ["malignant neoplasm"]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("bad.jsonl", '{"id":"X:1","name":"a"}\nnot json\n', r"bad.jsonl:2"),
    # `cuilink kb export` writing nothing (or a wrong path) must stop the run here, not give
    # 0-step training runs, 0-name dictionaries and acc@1 0 reports.
    ("medic.jsonl", "\n", r"medic.jsonl: no concept"),
], ids=["error_names_file_and_line", "an_empty_kb_is_refused_not_trained_on"])
def test_read_concepts_refuses_a_file_naming_it(tmp_path, name, text, message):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_concepts(p)


def test_groups_merge_other_kb_into_anchor_by_alt_id_and_xref():
    kbs = {"medic": read_concepts(FIX / "tiny_kb.jsonl"), "doid": read_concepts(FIX / "tiny_doid.jsonl")}
    groups = {g.id: g for g in build_groups(kbs)}
    assert "DOID:1612" not in groups and "DOID:1485" not in groups  # merged
    assert "mammary cancer" in groups["MESH:D001943"].names
    assert "pancreatic cystic fibrosis" in groups["MESH:D003550"].names
    assert groups["MESH:D001943"].parents == ["MESH:D009371"]
    assert "DOID:162" in groups  # no anchor concept: stays its own group
    unmerged = {g.id for g in build_groups(kbs, merge=False)}
    assert "DOID:1612" in unmerged


def test_mondo_rare_conversion(tmp_path):
    import gzip

    src = tmp_path / "rare.tsv.gz"
    with gzip.open(src, "wt") as f:
        f.write("ID\tLABEL\tSYNONYMS\nMONDO:1\tfoo disease\ta|b\nMONDO:2\tbar\t\n")
    n = convert_mondo_rare(src, tmp_path / "out.jsonl")
    cs = read_concepts(tmp_path / "out.jsonl")
    assert n == 2 and cs[0].synonyms == ["a", "b"] and cs[1].synonyms == []


def test_gold_id_normalization():
    assert norm_gold_id(" D005955") == "MESH:D005955"
    assert norm_gold_id("OMIM:300908") == "OMIM:300908"
    assert norm_gold_id("mesh:D1") == "MESH:D1"


def test_pubtator_protocol_dedup_composite_and_skip():
    ms = read_pubtator(FIX / "tiny.pubtator")
    # duplicate annotation, duplicate document and gold -1 are dropped
    assert [m.text for m in ms] == ["Breast cancer", "G6PD deficiency", "mucoviscidosis", "tumour"]
    assert ms[1].gold == [{"MESH:D005955", "OMIM:300908"}]
    assert ms[3].gold == [{"MESH:D009371", "MESH:D001943"}]
    assert ms[2].left.endswith("We studied ")


def test_accuracy_exact_first_and_alt_ids():
    d = Dictionary(read_concepts(FIX / "tiny_kb.jsonl"))
    ms = read_pubtator(FIX / "tiny.pubtator")
    idx = {c.id: i for i, c in enumerate(d.concepts)}
    ranked = [idx["MESH:D009371"], idx["MESH:D003550"]]
    preds = [exact_first(d, m.text, ranked, 5) for m in ms]
    assert preds[0][0] == idx["MESH:D001943"]  # exact (case-insensitive) synonym match first
    res = accuracy(d, ms, preds)
    # breast cancer (exact), G6PD (exact), mucoviscidosis (exact), tumour (composite, D009371 at rank 1)
    assert res == {"acc@1": 1.0, "acc@5": 1.0, "mentions": 4}
    wrong = [[idx["MESH:D003550"], idx["MESH:D001943"]]] * 4
    res = accuracy(d, ms, wrong)
    assert res["acc@1"] == 0.25 and res["acc@5"] == 0.75  # composite gold hits via D001943


def test_rank_from_scores_distinct_concepts():
    d = Dictionary(read_concepts(FIX / "tiny_kb.jsonl"))
    scores = np.zeros(len(d.names))
    scores[1], scores[2], scores[3] = 0.9, 0.8, 0.7  # two names of concept 0, then concept 1
    assert d.rank_from_scores(scores, 2) == [0, 1]


class _TableScorer:
    """Cross-encoder stand-in for the policy arithmetic: logit per candidate text."""

    def __init__(self, logits):
        self.logits = logits
        self.pairs = []
        self.calls = []

    def score(self, pairs):
        self.pairs.extend(pairs)
        self.calls.append(len(pairs))
        return np.array([self.logits[c] for _, c in pairs], dtype=np.float32)


def test_rerank_policies_match_the_linker():
    from cuilink_models.evaluate import Mention, rerank_predictions

    d = Dictionary(read_concepts(FIX / "tiny_kb.jsonl"))
    idx = {c.id: i for i, c in enumerate(d.concepts)}
    a, b = idx["MESH:D009371"], idx["MESH:D003550"]
    ms = [Mention("1", 0, 5, "lump", [{"MESH:D003550"}]), Mention("1", 9, 22, "breast cancer", [{"MESH:D001943"}])]
    preds = [[a, b], [idx["MESH:D001943"], a]]
    retrieval = [{a: 0.90, b: 0.80}, {}]
    scorer = _TableScorer({"Neoplasms by Site ; Cancer": -2.0, "Cystic Fibrosis ; Genetic disease (inborn)": 2.0})
    # always: the cross-encoder's order wins; the exact match "breast cancer" is never sent
    out = rerank_predictions(scorer, d, ms, preds, top_k=2, retrieval=retrieval)
    assert out[0] == [b, a] and out[1] == preds[1]
    assert [q for q, _ in scorer.pairs] == ["[M] lump [/M]"] * 2
    # each mention's candidates in a call of their own (int8 scores must not depend on batch mates)
    scorer.calls.clear()
    ms2 = [ms[0], Mention("1", 30, 40, "mucus lung", [{"MESH:D003550"}])]
    rerank_predictions(scorer, d, ms2, [[a, b], [b, a]], top_k=2, retrieval=retrieval + [{}])
    assert scorer.calls == [2, 2]
    # ambiguous: a top-1/top-2 gap of 0.10 is not under the margin, so nothing is reranked
    assert rerank_predictions(scorer, d, ms, preds, top_k=2, retrieval=retrieval, margin=0.05)[0] == [a, b]
    assert rerank_predictions(scorer, d, ms, preds, top_k=2, retrieval=retrieval, margin=0.2)[0] == [b, a]
    # interpolation: 0.1*sigmoid(l) + 0.9*retrieval keeps a (0.8219 vs 0.8081)
    assert rerank_predictions(scorer, d, ms, preds, top_k=2, retrieval=retrieval, weight=0.1)[0] == [a, b]


def test_finetune_adds_single_gold_mentions_as_names(tmp_path):
    from cuilink_models.train_biencoder import add_pubtator_mentions

    kb = read_concepts(FIX / "tiny_kb.jsonl")
    groups = build_groups({"medic": kb})
    p = tmp_path / "gold.pubtator"
    p.write_text("7|t|breast carcinoma, a tumour and Breast Cancer.\n7|a|x\n"
                 "7\t0\t16\tbreast carcinoma\tSpecificDisease\tD001943\n"
                 "7\t20\t26\ttumour\tDiseaseClass\tD009371|D001943\n"  # composite: ambiguous, not used
                 "7\t31\t44\tBreast Cancer\tSpecificDisease\tD001943\n")  # already a name
    assert add_pubtator_mentions(groups, kb, p, split="all") == 1  # one document: not a split corpus
    names = {g.id: g.names for g in groups}["MESH:D001943"]
    assert names[-1] == "breast carcinoma" and names.count("Breast Cancer") == 1


def test_cross_encoder_queries_reading_order_and_parent_fallback():
    import random

    from cuilink_models.train_crossencoder import make_queries, mine, natural_order

    assert natural_order("Anemia, Hemolytic, Congenital") == "Congenital Hemolytic Anemia"
    assert natural_order("Diabetes Mellitus, Type 1") == "Type 1 Diabetes Mellitus"
    assert natural_order("Cystic Fibrosis") is None
    assert natural_order("Nephroblastomatosis, fetal ascites, macrosomia and Wilms tumor") is None  # a list, not inverted

    kb = read_concepts(FIX / "tiny_kb.jsonl")
    d = Dictionary(kb)
    idx = {c.id: i for i, c in enumerate(d.concepts)}
    breast, site = idx["MESH:D001943"], idx["MESH:D009371"]
    queries = make_queries(build_groups({"medic": kb}), d, random.Random(0), 100, fallback_share=0.5)
    fallback = [q for q in queries if q.excluded]
    # only Breast Neoplasms has a parent: its names become queries whose answer is the parent
    assert fallback and all(q.positives == [site] and q.excluded == {breast} for q in fallback)
    assert {q.text for q in fallback} == {"Breast Neoplasms", "Breast Cancer", "Breast Tumors"}
    synonym = [q for q in queries if not q.excluded]
    assert any(q.text == "Mucoviscidosis" and q.positives == [idx["MESH:D003550"]] for q in synonym)

    class OneHotEncoder:
        """Every text on its own axis, except that a query is closest to the names it contains."""

        def encode(self, texts):
            v = np.array([[1.0 if n.lower() in t.lower() or t.lower() in n.lower() else 0.1 for n in d.names] for t in texts])
            return v / np.linalg.norm(v, axis=1, keepdims=True)

        def encode_cached(self, texts):
            return np.eye(len(texts))

    q = next(x for x in fallback if x.text == "Breast Cancer")
    golds, negs = mine(OneHotEncoder(), d, [q], k=3)
    assert golds == [site]
    assert breast not in negs[0] and site not in negs[0] and len(negs[0]) == 2  # 4 concepts - excluded - positive


def test_cross_encoder_queries_refuse_a_dictionary_the_kbs_do_not_share():
    import random

    from cuilink_models.train_crossencoder import make_queries

    groups = build_groups({"medic": read_concepts(FIX / "tiny_kb.jsonl")})
    other = Dictionary(read_concepts(FIX / "tiny_doid.jsonl"))  # --dict naming another KB than the anchor
    with pytest.raises(ValueError, match="no training query"):
        make_queries(groups, other, random.Random(0), 100)


def test_evaluate_refuses_a_corpus_with_nothing_to_evaluate(tmp_path):
    from cuilink_models import evaluate

    not_pubtator = tmp_path / "dev.jsonl"  # e.g. a concept file passed as --corpus
    not_pubtator.write_text((FIX / "tiny_kb.jsonl").read_text())
    with pytest.raises(ValueError, match="no PubTator document"):
        evaluate.main(["--dict", str(FIX / "tiny_kb.jsonl"), "--corpus", str(not_pubtator)])
    unannotated = tmp_path / "dev.txt"
    unannotated.write_text("1|t|Breast cancer.\n1|a|No annotation here.\n\n")
    with pytest.raises(SystemExit, match="no annotated mention"):
        evaluate.main(["--dict", str(FIX / "tiny_kb.jsonl"), "--corpus", str(unannotated)])


def _gold_corpus(path, doc_ids):
    """One annotated mention per document, its text naming the document."""
    path.write_text("".join(f"{d}|t|name{d}.\n{d}|a|x\n{d}\t0\t{4 + len(d)}\tname{d}\tSpecificDisease\tD001943\n\n" for d in doc_ids))
    return path


def test_tuning_split_is_the_typescript_one():
    from cuilink_models.evaluate import note_draw, tune_document_ids

    # values printed by src/stream/label-selection/note-draw.ts and src/eval/tuning-split.ts
    assert note_draw("10021369", 20261123) == 0.7319917513523251
    assert note_draw("é-note", 20261123) == 0.3493704858701676
    assert tune_document_ids([str(9000 + i) for i in range(120)], size=5) == {"9010", "9024", "9043", "9077", "9112"}


def test_finetune_never_learns_from_the_tune_split(tmp_path):
    from cuilink_models.evaluate import tune_document_ids
    from cuilink_models.train_biencoder import add_pubtator_mentions

    kb = read_concepts(FIX / "tiny_kb.jsonl")
    docs = [str(5000 + i) for i in range(130)]
    corpus = _gold_corpus(tmp_path / "train.pubtator", docs)
    groups = build_groups({"medic": kb})
    added = add_pubtator_mentions(groups, kb, corpus)
    names = set({g.id: g.names for g in groups}["MESH:D001943"])
    tune = tune_document_ids(docs)
    assert len(tune) == 100 and added == 30
    assert not {f"name{d}" for d in tune} & names, "a tune document's mention was trained on"
    assert {f"name{d}" for d in docs if d not in tune} <= names


def test_finetune_refuses_models_default_and_the_evaluation_documents(tmp_path, monkeypatch):
    from cuilink_models import export, pipeline

    monkeypatch.setattr(pipeline, "WORK_DIR", tmp_path / "work")
    monkeypatch.setattr(export, "export_model", lambda *a, **k: pytest.fail("started the run"))
    train = _gold_corpus(tmp_path / "train.pubtator", [str(5000 + i) for i in range(130)])
    dev = _gold_corpus(tmp_path / "dev.pubtator", ["7001", "7002"])
    # no --out: the default is models/default, which a fine-tune never writes (models/README.md)
    with pytest.raises(SystemExit, match="refusing to write a fine-tuned model"):
        pipeline.main(["--corpus", str(dev), "--split", "all", "--pubtator", str(train)])
    with pytest.raises(SystemExit, match="refusing"):
        pipeline.main(["--corpus", str(dev), "--split", "all", "--pubtator", str(train), "--out", str(pipeline.MODELS_DIR / "default" / "..") + "/default/"])
    # fine-tuning on the evaluation corpus itself
    with pytest.raises(SystemExit, match="shares 2 documents with the evaluation corpus"):
        pipeline.main(["--corpus", str(dev), "--split", "all", "--pubtator", str(dev), "--pubtator-split", "all", "--out", str(tmp_path / "ft")])


def test_evaluate_reads_one_part_of_the_tuning_split():
    from cuilink_models.evaluate import Mention, select_split, tune_document_ids

    docs = [str(6000 + i) for i in range(130)]
    mentions = [Mention(d, 0, 1, "x", [{"MESH:D1"}], "", "") for d in docs for _ in range(2)]
    tune = tune_document_ids(docs)
    assert {m.doc for m in select_split(mentions, "tune")} == tune
    assert {m.doc for m in select_split(mentions, "learn")} == set(docs) - tune
    assert select_split(mentions, "all") == mentions
    with pytest.raises(ValueError, match="split must be one of"):
        select_split(mentions, "dev")


def test_pipeline_judges_ship_decisions_on_the_tune_split_by_default(tmp_path, monkeypatch):
    from cuilink_models import export, pipeline

    class Evaluated(Exception):
        pass

    def evaluated(model_dir, a, *rest, **kw):
        raise Evaluated(a.split)

    monkeypatch.setattr(pipeline, "WORK_DIR", tmp_path / "work")
    monkeypatch.setattr(export, "export_model", lambda *a, **k: None)
    monkeypatch.setattr(pipeline, "evaluate", evaluated)
    train = _gold_corpus(tmp_path / "train.pubtator", [str(5000 + i) for i in range(130)])
    # the first ship decision's evaluation reads train's tune part: what every choice is made on
    with pytest.raises(Evaluated, match="^tune$"):
        pipeline.main(["--corpus", str(train), "--out", str(tmp_path / "m"), "--skip-ce"])
    # a fine-tune on train's learn part, judged on its tune part, shares no document: it runs
    with pytest.raises(Evaluated, match="^tune$"):
        pipeline.main(["--corpus", str(train), "--pubtator", str(train), "--out", str(tmp_path / "ft")])
    # on the whole of train it would learn the documents it is judged on
    with pytest.raises(SystemExit, match=r"\(all\) shares 100 documents with the evaluation corpus .* \(tune\)"):
        pipeline.main(["--corpus", str(train), "--pubtator", str(train), "--pubtator-split", "all", "--out", str(tmp_path / "ft")])
