"""Zero-shot evaluation on a PubTator corpus with MEDIC as dictionary: the tune part of NCBI-disease
train (`--split tune`) for every choice, dev for a report.

Protocol (shared/data/README.md "Evaluation protocol"): raw mentions; identical annotations
(document, start, end) once; gold '-1' skipped; bare MeSH ids become MESH:; composite gold A|B
or A+B is a hit when any part matches; a concept matches by id or alt id; exact string match
first, then dense (or lexical) ranking over all dictionary names; acc@k over the first k
distinct concepts.

    python -m cuilink_models.evaluate --dict work/kb/medic.jsonl \
        --corpus ../../shared/data/ncbi-disease/NCBItrainset_corpus.txt --split tune \
        --onnx default/biencoder [--rerank default/crossencoder]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .data import Concept, normalize_name, read_concepts


@dataclass
class Mention:
    doc: str
    start: int
    end: int
    text: str
    gold: list[set[str]]  # alternatives; hit if any set element matches
    left: str = ""
    right: str = ""


def norm_gold_id(x: str) -> str:
    x = x.strip()
    if not x:
        return x
    if ":" in x:
        p, rest = x.split(":", 1)
        return f"{p.upper().strip()}:{rest.strip()}"
    if re.match(r"^[CD]\d+$", x):
        return "MESH:" + x
    if re.match(r"^\d+$", x):
        return "OMIM:" + x
    return x


def read_pubtator(path: Path | str, context_chars: int = 64) -> list[Mention]:
    docs: dict[str, str] = {}
    seen_docs: set[str] = set()
    mentions: list[Mention] = []
    seen: set[tuple] = set()
    cur_doc, title, abstract = None, "", ""
    with open(path, encoding="utf-8") as f:
        block: list[str] = []
        lines = f.read().split("\n")
    # group into documents separated by blank lines
    blocks, block = [], []
    for line in lines:
        if not line.strip():
            if block:
                blocks.append(block)
            block = []
        else:
            block.append(line)
    if block:
        blocks.append(block)
    if not any(re.match(r"^\d+\|[ta]\|", line) for b in blocks for line in b):
        raise ValueError(f"{path}: no PubTator document (no 'PMID|t|title' or 'PMID|a|abstract' line)")
    for block in blocks:
        title = abstract = ""
        doc = None
        anns = []
        for line in block:
            m = re.match(r"^(\d+)\|t\|(.*)$", line)
            if m:
                doc, title = m.group(1), m.group(2)
                continue
            m = re.match(r"^(\d+)\|a\|(.*)$", line)
            if m:
                doc, abstract = m.group(1), m.group(2)
                continue
            cols = line.split("\t")
            if len(cols) >= 6:
                anns.append(cols)
        if doc is None or doc in seen_docs:
            continue
        seen_docs.add(doc)
        text = title + " " + abstract
        for cols in anns:
            start, end, mention, gold = int(cols[1]), int(cols[2]), cols[3], cols[5]
            key = (cols[0], start, end)
            if key in seen:
                continue
            seen.add(key)
            ids = {norm_gold_id(p) for p in re.split(r"[|+]", gold) if p.strip() and p.strip() != "-1"}
            if not ids:
                continue
            mentions.append(
                Mention(cols[0], start, end, mention, [ids], text[max(0, start - context_chars) : start], text[end : end + context_chars])
            )
    return mentions


# src/eval/tuning-split.ts: every default, weight and model is chosen on the `tune` part of
# NCBI-disease train; `learn` is the rest, what a memory or a fine-tune may learn from.
TUNING_SPLIT_SEED = 20261123
TUNING_SPLIT_SIZE = 100


def note_draw(note_id: str, seed: int) -> float:
    """src/stream/label-selection/note-draw.ts noteDraw: FNV-1a over UTF-16 code units, then
    MurmurHash3's finalizer, in [0, 1)."""
    h = 0x811C9DC5
    data = f"{seed}\u0000{note_id}".encode("utf-16-le")
    for i in range(0, len(data), 2):
        h = ((h ^ (data[i] | data[i + 1] << 8)) * 0x01000193) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h / 4294967296


def tune_document_ids(document_ids, seed: int = TUNING_SPLIT_SEED, size: int = TUNING_SPLIT_SIZE) -> set[str]:
    """As src/eval/tuning-split.ts tuneDocumentIds: the `size` documents with the smallest draw."""
    unique = list(dict.fromkeys(document_ids))
    if size >= len(unique):
        raise ValueError(f"tuning split of {size} documents needs more than {len(unique)} documents")
    ranked = sorted(unique, key=lambda d: (note_draw(d, seed), d))
    return set(ranked[:size])


SPLITS = ("all", "tune", "learn")


def select_split(mentions: list[Mention], split: str) -> list[Mention]:
    """The mentions of one part of the tuning split of the file they were read from (as
    src/eval/tuning-split.ts): `tune` is what every choice is made on, `learn` the rest."""
    if split == "all":
        return mentions
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    tune = tune_document_ids(m.doc for m in mentions)
    return [m for m in mentions if (m.doc in tune) == (split == "tune")]


class Dictionary:
    def __init__(self, concepts: list[Concept]):
        self.concepts = concepts
        self.names: list[str] = []
        self.name_concept: list[int] = []
        self.exact: dict[str, list[int]] = {}
        self.keys: list[set[str]] = []
        for i, c in enumerate(concepts):
            self.keys.append({norm_gold_id(k) for k in [c.id, *c.altIds]})
            for n in c.names:
                self.names.append(n)
                self.name_concept.append(i)
                lst = self.exact.setdefault(normalize_name(n), [])
                if i not in lst:
                    lst.append(i)
        self.name_concept_arr = np.array(self.name_concept)

    def hit(self, concept_idx: int, gold: list[set[str]]) -> bool:
        return any(self.keys[concept_idx] & g for g in gold)

    def rank_from_scores(self, scores: np.ndarray, k: int) -> list[int]:
        """Distinct concepts by best name score, top k."""
        return [c for c, _ in self.ranked_with_scores(scores, k)]

    def ranked_with_scores(self, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(concept, best name score) of the top k distinct concepts."""
        top = np.argpartition(-scores, min(len(scores) - 1, k * 8))[: k * 8]
        top = top[np.argsort(-scores[top])]
        out: list[tuple[int, float]] = []
        seen: set[int] = set()
        for t in top:
            c = int(self.name_concept_arr[t])
            if c not in seen:
                seen.add(c)
                out.append((c, float(scores[t])))
                if len(out) == k:
                    break
        return out


def exact_first(d: Dictionary, mention: str, ranked: list[int], k: int) -> list[int]:
    ex = d.exact.get(normalize_name(mention), [])
    out = list(ex)
    for c in ranked:
        if c not in out:
            out.append(c)
    return out[:k]


def accuracy(d: Dictionary, mentions: list[Mention], preds: list[list[int]], ks=(1, 5)) -> dict:
    res = {}
    for k in ks:
        hits = sum(1 for m, p in zip(mentions, preds) if any(d.hit(c, m.gold) for c in p[:k]))
        res[f"acc@{k}"] = round(hits / max(1, len(mentions)), 4)
    res["mentions"] = len(mentions)
    return res


# ----------------------------------------------------------------------------------------------
# encoders


class TorchEncoder:
    def __init__(self, checkpoint, pooling="mean", max_length=32, batch=128, model=None, tokenizer=None):
        import torch

        from .common import load_encoder, load_tokenizer

        self.torch = torch
        self.tok = tokenizer or load_tokenizer(checkpoint)
        self.model = model or load_encoder(checkpoint, self.tok)
        self.pooling, self.max_length, self.batch = pooling, max_length, batch

    def encode(self, texts: list[str]) -> np.ndarray:
        torch = self.torch
        self.model.eval()
        order = np.argsort([len(t) for t in texts])
        out = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        with torch.no_grad():
            for i in range(0, len(texts), self.batch):
                idx = order[i : i + self.batch]
                enc = self.tok([texts[j] for j in idx], padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
                h = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
                if self.pooling == "cls":
                    v = h[:, 0]
                else:
                    m = enc["attention_mask"].unsqueeze(-1).float()
                    v = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
                v = torch.nn.functional.normalize(v, dim=-1)
                out[idx] = v.numpy()
        return out


class OnnxModelDir:
    """An exported model directory: manifest, ONNX session of one precision, truncating tokenizer."""

    def __init__(self, model_dir, precision="int8", batch=64, threads=2):
        from tokenizers import Tokenizer

        from .export import ort_session

        self.dir = Path(model_dir)
        self.manifest = json.loads((self.dir / "manifest.json").read_text())
        self.sess = ort_session(self.dir / self.manifest["files"][precision], threads)
        self.tok = Tokenizer.from_file(str(self.dir / self.manifest["tokenizer"]))
        self.tok.enable_truncation(self.manifest["maxLength"])
        self.batch = batch
        self.precision = precision


class OnnxEncoder(OnnxModelDir):
    def encode_cached(self, texts: list[str]) -> np.ndarray:
        """encode(), cached under models/work/cache by model file checksum and text list: the
        dictionary's names are encoded once per model, not once per evaluation or mining run."""
        import hashlib

        from .common import WORK_DIR

        file = self.manifest["files"][self.precision]
        h = hashlib.sha256((self.manifest.get("sha256", {}).get(file) or str(self.dir.resolve() / file)).encode())
        h.update("\n".join(texts).encode())
        path = WORK_DIR / "cache" / f"{h.hexdigest()[:32]}.npy"
        if path.exists():
            return np.load(path)
        vecs = self.encode(texts)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vecs)
        return vecs

    def encode(self, texts: list[str]) -> np.ndarray:
        from .export import pool

        order = np.argsort([len(t) for t in texts])
        out = np.zeros((len(texts), self.manifest["dims"]), dtype=np.float32)
        for i in range(0, len(texts), self.batch):
            idx = order[i : i + self.batch]
            encs = self.tok.encode_batch([texts[j] for j in idx])
            L = max(len(e.ids) for e in encs)
            ids = np.zeros((len(encs), L), dtype=np.int64)
            mask = np.zeros((len(encs), L), dtype=np.int64)
            for r, e in enumerate(encs):
                ids[r, : len(e.ids)] = e.ids
                mask[r, : len(e.ids)] = 1
            h = self.sess.run([self.manifest["outputName"]], {"input_ids": ids, "attention_mask": mask})[0]
            out[idx] = pool(h, mask, self.manifest["pooling"], self.manifest.get("normalize", True))
        return out


def dense_predictions(encoder, d: Dictionary, mentions: list[Mention], k=20, name_vecs=None):
    if name_vecs is None:
        name_vecs = encoder.encode_cached(d.names) if hasattr(encoder, "encode_cached") else encoder.encode(d.names)
    q = encoder.encode([m.text for m in mentions])
    preds, scores = [], []
    for i in range(0, len(q), 256):
        s = q[i : i + 256] @ name_vecs.T
        for row in s:
            ranked = d.ranked_with_scores(row, k)
            preds.append([c for c, _ in ranked])
            scores.append(dict(ranked))
    return preds, name_vecs, scores  # scores: per mention, concept -> retrieval score (rerank policies)


def lexical_predictions(d: Dictionary, mentions: list[Mention], k=20):
    """char-3-gram TF-IDF (word-boundary aware) cosine over all names."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=True, sublinear_tf=True)
    X = vec.fit_transform(d.names)
    Q = vec.transform([m.text for m in mentions])
    S = (Q @ X.T).toarray()
    return [d.rank_from_scores(row, k) for row in S]


# ----------------------------------------------------------------------------------------------
# reranking


def marked_query(m: Mention, with_context: bool, markers=("[M]", "[/M]")) -> str:
    if with_context:
        return f"{m.left} {markers[0]} {m.text} {markers[1]} {m.right}".strip()
    return f"{markers[0]} {m.text} {markers[1]}"


def candidate_text(c: Concept, include_type: bool) -> str:
    t = c.semanticTypes[0] if c.semanticTypes else ""
    return f"{c.name} ; {t}" if include_type and t else c.name


class OnnxCrossEncoder(OnnxModelDir):
    def score(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        out = np.zeros(len(pairs), dtype=np.float32)
        for i in range(0, len(pairs), self.batch):
            chunk = pairs[i : i + self.batch]
            encs = self.tok.encode_batch(chunk)
            L = max(len(e.ids) for e in encs)
            ids = np.zeros((len(encs), L), dtype=np.int64)
            mask = np.zeros_like(ids)
            tt = np.zeros_like(ids)
            for r, e in enumerate(encs):
                n = len(e.ids)
                ids[r, :n], mask[r, :n], tt[r, :n] = e.ids, 1, e.type_ids
            out[i : i + len(chunk)] = self.sess.run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})[0][:, 0]
        return out


class TorchCrossEncoder:
    def __init__(self, model, tokenizer, max_length=64, batch=64):
        import torch

        self.torch, self.model, self.tok, self.max_length, self.batch = torch, model, tokenizer, max_length, batch

    def score(self, pairs):
        out = np.zeros(len(pairs), dtype=np.float32)
        self.model.eval()
        with self.torch.no_grad():
            for i in range(0, len(pairs), self.batch):
                chunk = pairs[i : i + self.batch]
                enc = self.tok([p[0] for p in chunk], [p[1] for p in chunk], padding=True, truncation="longest_first", max_length=self.max_length, return_tensors="pt")
                out[i : i + len(chunk)] = self.model(**enc).logits[:, 0].numpy()
        return out


def rerank_predictions(scorer, d: Dictionary, mentions, preds, top_k=10, keep_exact=True, with_context=False, include_type=True,
                       retrieval=None, margin=None, weight=1.0):
    """Reranks the top_k of each non-exact mention. As src/link/linker.ts: with `margin`, only
    mentions whose top-1/top-2 retrieval scores are closer than it ('ambiguous' policy); final
    score = weight * sigmoid(logit) + (1 - weight) * retrieval score (`retrieval`: per mention,
    concept -> score)."""
    pairs, spans = [], []
    for i, (m, p) in enumerate(zip(mentions, preds)):
        ex = d.exact.get(normalize_name(m.text), []) if keep_exact else []
        if ex:
            spans.append(None)
            continue
        if margin is not None and retrieval is not None and len(p) >= 2:
            r = retrieval[i]
            if r.get(p[0], 0.0) - r.get(p[1], 0.0) >= margin:
                spans.append(None)
                continue
        cands = p[:top_k]
        spans.append((len(pairs), cands))
        pairs.extend((marked_query(m, with_context), candidate_text(d.concepts[c], include_type)) for c in cands)
    # One call per mention: int8 activations are quantized per batch, so a mention's scores must not
    # depend on which other mentions share its batch (nor on the order rerank settings are compared in).
    scores = np.zeros(len(pairs), dtype=np.float32)
    for sp in spans:
        if sp is not None:
            scores[sp[0] : sp[0] + len(sp[1])] = scorer.score(pairs[sp[0] : sp[0] + len(sp[1])])
    out = []
    for i, (p, sp) in enumerate(zip(preds, spans)):
        if sp is None:
            out.append(p)
            continue
        off, cands = sp
        s = scores[off : off + len(cands)]
        if weight < 1.0 and retrieval is not None:
            s = weight / (1.0 + np.exp(-s)) + (1.0 - weight) * np.array([retrieval[i].get(c, 0.0) for c in cands])
        order = np.argsort(-s, kind="stable")
        out.append([cands[j] for j in order] + [c for c in p if c not in cands])
    return out


class CachedScorer:
    """Scores each (query, candidate) pair once however many rerank settings are compared."""

    def __init__(self, scorer):
        self.scorer, self.cache = scorer, {}

    def score(self, pairs):
        todo = list(dict.fromkeys(p for p in pairs if p not in self.cache))
        if todo:
            self.cache.update(zip(todo, self.scorer.score(todo)))
        return np.array([self.cache[p] for p in pairs], dtype=np.float32)


# cross-encoder weights compared under the linker's default policy (ambiguous, margin 0.05);
# final = w * sigmoid(logit) + (1 - w) * retrieval, as src/link/linker.ts computes it
RERANK_WEIGHTS = (1.0, 0.5, 0.3, 0.2, 0.1)


def rerank_weight_sweep(scorer, d: Dictionary, mentions, preds, retrieval, top_k=10, include_type=True, margin=0.05) -> dict:
    """acc per weight, and the chosen one: best acc@1, then acc@5, then the larger weight."""
    cached = CachedScorer(scorer)
    rows = {}
    for w in RERANK_WEIGHTS:
        r = rerank_predictions(cached, d, mentions, preds, top_k, include_type=include_type, retrieval=retrieval, margin=margin, weight=w)
        rows[str(w)] = accuracy(d, mentions, r)
    best = max(RERANK_WEIGHTS, key=lambda w: (rows[str(w)]["acc@1"], rows[str(w)]["acc@5"], w))
    return {"margin": margin, "byWeight": rows, "chosenWeight": best, "chosen": rows[str(best)]}


def measure_speed(encoder, texts, repeat=1) -> float:
    t = time.time()
    for _ in range(repeat):
        encoder.encode(texts)
    return len(texts) * repeat / (time.time() - t)


def main(argv=None):
    from .common import setup_torch, write_json

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dict", required=True, help="MEDIC concept JSONL (cuilink kb export)")
    ap.add_argument("--corpus", required=True, help="PubTator file")
    ap.add_argument("--split", choices=SPLITS, default="all",
                    help="the part of --corpus's tuning split to evaluate (tune: NCBI-disease train's, where choices are made)")
    ap.add_argument("--onnx", help="bi-encoder model directory")
    ap.add_argument("--precision", default="int8")
    ap.add_argument("--checkpoint", help="torch bi-encoder checkpoint ('base' or dir)")
    ap.add_argument("--pooling", default="mean")
    ap.add_argument("--lexical", action="store_true")
    ap.add_argument("--rerank", help="cross-encoder model directory")
    ap.add_argument("--rerank-top", type=int, default=10)
    ap.add_argument("--context", action="store_true", help="cross-encoder query with context")
    ap.add_argument("--rerank-variants", action="store_true", help="also the 'ambiguous' policy and score interpolation")
    ap.add_argument("--preferred-only", action="store_true", help="dense ranking over preferred names only (exact match still over all names)")
    ap.add_argument("--out", help="write JSON results here")
    a = ap.parse_args(argv)
    d = Dictionary(read_concepts(a.dict))
    mentions = select_split(read_pubtator(a.corpus), a.split)
    if not mentions:
        raise SystemExit(f"{a.corpus}: no annotated mention with a gold concept to evaluate")
    setup_torch()
    res: dict = {"corpus": a.corpus, "split": a.split, "mentions": len(mentions), "dictionaryNames": len(d.names), "denseOverPreferredNamesOnly": a.preferred_only}
    exact_hits = [exact_first(d, m.text, [], 1) for m in mentions]
    res["exactOnly"] = accuracy(d, mentions, exact_hits)
    if a.lexical:
        preds = [exact_first(d, m.text, p, 20) for m, p in zip(mentions, lexical_predictions(d, mentions))]
        res["lexical"] = accuracy(d, mentions, preds)
    if a.onnx or a.checkpoint:
        enc = OnnxEncoder(a.onnx, a.precision) if a.onnx else TorchEncoder(a.checkpoint, a.pooling)
        t = time.time()
        # --preferred-only: dense ranking over each concept's preferred name alone (a cheaper
        # protocol for ablations); concept indices are the same in both dictionaries
        dd = Dictionary([replace(c, synonyms=[]) for c in d.concepts]) if a.preferred_only else d
        raw, _, retrieval = dense_predictions(enc, dd, mentions)
        res["encodeSeconds"] = round(time.time() - t, 1)
        preds = [exact_first(d, m.text, p, 20) for m, p in zip(mentions, raw)]
        res["dense"] = accuracy(d, mentions, raw)
        res["exact+dense"] = accuracy(d, mentions, preds)
        res["mentionsPerSecond"] = round(measure_speed(enc, [m.text for m in mentions]), 1)
        if a.rerank:
            ce = OnnxCrossEncoder(a.rerank, a.precision)
            t = time.time()
            rr = rerank_predictions(ce, d, mentions, preds, a.rerank_top, with_context=a.context,
                                    include_type=ce.manifest.get("candidate", {}).get("includeSemanticType", True))
            res["rerankSeconds"] = round(time.time() - t, 1)
            res["exact+dense+rerank"] = accuracy(d, mentions, rr)
            if a.rerank_variants:
                # the linker's other settings (src/link/link-config.ts): interpolation for every mention,
                # and the 'ambiguous' policy at each weight of the sweep
                inc = ce.manifest.get("candidate", {}).get("includeSemanticType", True)
                ce = CachedScorer(ce)
                v = rerank_predictions(ce, d, mentions, preds, a.rerank_top, with_context=a.context, include_type=inc, retrieval=retrieval, weight=0.5)
                res["exact+dense+rerank weight 0.5"] = accuracy(d, mentions, v)
                res["weightSweep"] = rerank_weight_sweep(ce, d, mentions, preds, retrieval, a.rerank_top, inc)
    print(json.dumps(res, indent=2))
    if a.out:
        write_json(a.out, res)
    return res


if __name__ == "__main__":
    main()
