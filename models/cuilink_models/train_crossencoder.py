"""Cross-encoder reranker trained without corpus annotations (KRISSBERT-style input, synthetic
mentions from the KB).

Queries are KB synonyms written as mentions (`[M] synonym [/M]`; reading order for inverted
MeSH names, plurals, lower case), plus parent-fallback queries (a concept's name with the concept
removed from the candidates, its parents the answer); the positive candidate is their concept as the linker shows it to the reranker (`name ; semantic
type`, src/rerank/reranker.ts), negatives are the top-k wrong concepts the trained bi-encoder
retrieves for the query over the dictionary (hard negatives). Listwise softmax over
1 positive + n negatives per query (binary cross-entropy with --loss bce).

    python -m cuilink_models.train_crossencoder --dict work/kb/medic.jsonl --kb ... \
        --biencoder work/export/biencoder --out work/runs/ce --minutes 20
"""

from __future__ import annotations

import argparse
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .common import MARKERS, add_run_arguments, base_model_dir, file_record, load_tokenizer, log_progress, optimizer_step, progress_lr_factor, rel, save_checkpoint, setup_torch, write_training_record
from .data import build_groups, kb_specs, normalize_name, read_concepts
from .evaluate import Dictionary, OnnxEncoder, candidate_text


ROOT_IDS = {"MESH:C"}  # CTD's single root "Diseases": never a useful fallback target


@dataclass
class Query:
    text: str
    positives: list[int]  # dictionary concept indices that count as correct
    excluded: frozenset[int] = frozenset()  # concepts removed from the candidates (fallback queries)


def natural_order(name: str) -> str | None:
    """MeSH-style inverted names in reading order ("Anemia, Hemolytic, Congenital" -> "Congenital
    Hemolytic Anemia"), as mentions are written in text; None when the name is not inverted."""
    parts = [p.strip() for p in name.split(",")]
    if len(parts) < 2 or len(parts) > 3 or any(not p or len(p.split()) > 3 for p in parts[1:]):
        return None
    return " ".join([*reversed(parts[1:]), parts[0]])


def make_queries(groups, d: Dictionary, rng, n_queries: int, fallback_share: float = 0.0) -> list[Query]:
    """Synthetic mentions of dictionary concepts. Synonym queries: a name of the concept (from
    every KB merged into it), positive = the concept. Fallback queries (share `fallback_share`):
    a name of a concept that is then removed from the candidates, positive = its parents — the
    KB's answer for a mention more specific than any concept it has (e.g. "renal hamartoma" ->
    Hamartoma), which corpus annotators use and synonym training never shows."""
    id_to_idx = {c.id: i for i, c in enumerate(d.concepts)}
    synonym, fallback = [], []
    for g in groups:
        ci = id_to_idx.get(g.id)
        if ci is None:
            continue
        pref = normalize_name(d.concepts[ci].name)
        for n in g.names:
            if normalize_name(n) != pref:
                synonym.append(Query(n, [ci]))
        # the preferred name itself, sometimes (a mention equal to the name must still win)
        if rng.random() < 0.15:
            synonym.append(Query(d.concepts[ci].name, [ci]))
        parents = [id_to_idx[p] for p in d.concepts[ci].parents if p in id_to_idx and p not in ROOT_IDS]
        if parents:
            fallback.extend(Query(n, parents, frozenset([ci])) for n in g.names)
    rng.shuffle(synonym)
    rng.shuffle(fallback)
    if not synonym and not fallback:
        raise ValueError("no training query: no concept of the training KBs is in the dictionary (is --dict the anchor KB?)")
    n_fallback = min(len(fallback), int(round(n_queries * fallback_share)))
    out = synonym[: n_queries - n_fallback] + fallback[:n_fallback]
    rng.shuffle(out)
    return out


def mine(encoder, d: Dictionary, queries: list[Query], k: int, name_vecs=None):
    """Per query: the positive the bi-encoder ranks highest (or the first) and its top-k wrong
    candidates, hardest first; excluded concepts are neither."""
    if name_vecs is None:
        name_vecs = encoder.encode_cached(d.names)
    q = encoder.encode([x.text for x in queries])
    pos, negs = [], []
    for i in range(0, len(q), 512):
        s = q[i : i + 512] @ name_vecs.T
        for row, x in zip(s, queries[i : i + 512]):
            # another concept with this very name is not wrong (the linker's exact match decides those)
            same_name = set(d.exact.get(normalize_name(x.text), [])) - set(x.positives)
            skip = x.excluded | same_name
            ranked = [c for c in d.rank_from_scores(row, k + len(x.positives) + len(skip)) if c not in skip]
            pos.append(next((c for c in ranked if c in x.positives), x.positives[0]))
            negs.append([c for c in ranked if c not in x.positives][:k])
    return pos, negs


def mention_form(text: str, rng) -> str:
    """Surface variants of a KB name as a mention: reading order for inverted names, a plural,
    lower case."""
    if rng.random() < 0.6:
        text = natural_order(text) or text
    if rng.random() < 0.1 and re.fullmatch(r".*[a-z]", text) and not text.endswith("s"):
        text += "s"
    if rng.random() < 0.5:
        text = text.lower()
    return f"{MARKERS[0]} {text} {MARKERS[1]}"


def train(args):
    torch = setup_torch(args.threads, args.seed)
    from transformers import AutoModelForSequenceClassification

    rng = random.Random(args.seed)
    t0 = time.time()
    d = Dictionary(read_concepts(args.dict))
    kbs = {name: read_concepts(path) for name, path in kb_specs(args.kb)}
    groups = build_groups(kbs, anchor=args.anchor)
    queries = make_queries(groups, d, rng, args.queries, args.fallback_share)
    enc = OnnxEncoder(args.biencoder, "int8", threads=args.threads)
    t = time.time()
    golds, negs = mine(enc, d, queries, args.mine_k)
    del enc
    print(f"{len(queries)} queries, negatives mined in {time.time() - t:.0f}s", flush=True)

    src = args.init or str(base_model_dir())
    tok = load_tokenizer(src)
    model = AutoModelForSequenceClassification.from_pretrained(src, num_labels=1)
    if model.get_input_embeddings().num_embeddings != len(tok):
        model.resize_token_embeddings(len(tok))
    device = torch.device(args.device)
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    steps = min(args.steps, len(queries) // args.batch)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "train.log", "a")
    budget = args.minutes * 60 if args.minutes else None
    t_train = time.time()
    losses, step = [], 0
    n = args.negatives

    def progress():
        p = step / steps
        return max(p, (time.time() - t_train) / budget) if budget else p

    while step < steps:
        if progress() >= 1.0:
            print(f"time budget reached at step {step}", flush=True)
            break
        for grp in opt.param_groups:
            grp["lr"] = args.lr * progress_lr_factor(progress())
        batch = range(step * args.batch, (step + 1) * args.batch)
        firsts, seconds = [], []
        for qi in batch:
            query, gold = queries[qi], golds[qi]
            wrong = set(query.positives) | query.excluded
            # mostly the hardest negatives, a random one for calibration
            chosen = negs[qi][: n - 1]
            while len(chosen) < n:
                c = rng.randrange(len(d.concepts))
                if c not in wrong and c not in chosen:
                    chosen.append(c)
            q = mention_form(query.text, rng)
            for c in [gold, *chosen]:
                firsts.append(q)
                seconds.append(candidate_text(d.concepts[c], args.semantic_type))
        e = tok(firsts, seconds, padding=True, truncation="longest_first", max_length=args.max_length, return_tensors="pt").to(device)
        logits = model(**e).logits.view(len(batch), n + 1)
        if args.loss == "bce":
            target = torch.zeros_like(logits)
            target[:, 0] = 1
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target, pos_weight=None)
        else:
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long, device=device))
            # keep logits calibrated around 0 for the sigmoid the linker applies
            loss = loss + args.bce_weight * torch.nn.functional.binary_cross_entropy_with_logits(
                logits, torch.nn.functional.one_hot(torch.zeros(len(batch), dtype=torch.long, device=device), n + 1).float())
        losses.append(optimizer_step(torch, model, opt, loss))
        step += 1
        if step % 20 == 0:
            acc = float((logits.argmax(1) == 0).float().mean())
            msg = f"step {step}/{steps} loss {np.mean(losses[-20:]):.4f} batch-acc {acc:.2f} {(time.time() - t_train) / step:.2f}s/step"
            log_progress(log, msg)
    save_checkpoint(model, tok, out / "final")
    info = {
        "method": "cross-encoder, synthetic mentions from KB synonyms"
        + (f" ({args.fallback_share:.0%} parent-fallback queries)" if args.fallback_share else "")
        + ", hard negatives mined with the shipped bi-encoder, "
        + ("binary cross-entropy" if args.loss == "bce" else f"listwise softmax + {args.bce_weight} x BCE"),
        "data": {name: file_record(path) for name, path in kb_specs(args.kb)},
        "dictionary": file_record(args.dict),
        "miningModel": rel(args.biencoder),
        "hyperparameters": {"steps": step, "queriesPerBatch": args.batch, "negatives": n, "mineK": args.mine_k, "lr": args.lr,
                            "fallbackShare": args.fallback_share,
                            "maxLength": args.max_length, "semanticType": args.semantic_type, "loss": args.loss,
                            "bceWeight": args.bce_weight, "seed": args.seed, "threads": args.threads, "device": args.device},
        "queries": len(queries),
    }
    return write_training_record(out, info, time.time() - t_train, time.time() - t0, losses, 50)


def parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dict", required=True, help="dictionary concept JSONL (MEDIC)")
    ap.add_argument("--kb", action="append", required=True, help="[name=]concept.jsonl, as for train_biencoder")
    ap.add_argument("--anchor", default="medic")
    ap.add_argument("--biencoder", required=True, help="exported bi-encoder directory used to mine negatives")
    ap.add_argument("--out", required=True)
    ap.add_argument("--init")
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--mine-k", type=int, default=20)
    ap.add_argument("--fallback-share", type=float, default=0.3,
                    help="share of queries whose own concept is removed and whose parents are the answer")
    ap.add_argument("--negatives", type=int, default=7)
    ap.add_argument("--batch", type=int, default=8, help="queries per batch")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--minutes", type=float, default=0)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--loss", choices=["listwise", "bce"], default="listwise")
    ap.add_argument("--bce-weight", type=float, default=0.2)
    ap.add_argument("--no-semantic-type", dest="semantic_type", action="store_false")
    return add_run_arguments(ap)


def main(argv=None):
    train(parser().parse_args(argv))


if __name__ == "__main__":
    main()
