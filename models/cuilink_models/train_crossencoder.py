"""Cross-encoder reranker trained without corpus annotations (KRISSBERT-style input, synthetic
mentions from the KB).

Queries are KB synonyms written as mentions (`[M] synonym [/M]`, randomly lower-cased); the
positive candidate is their concept as the linker shows it to the reranker (`name ; semantic
type`, src/rerank/reranker.ts), negatives are the top-k wrong concepts the trained bi-encoder
retrieves for the query over the dictionary (hard negatives). Listwise softmax over
1 positive + n negatives per query (binary cross-entropy with --loss bce).

    python -m cuilink_models.train_crossencoder --dict work/kb/medic.jsonl --kb ... \
        --biencoder work/export/biencoder --out work/runs/ce --minutes 20
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from .common import MARKERS, base_model_dir, load_tokenizer, progress_lr_factor, rel, setup_torch, write_json
from .data import build_groups, file_sha256, normalize_name, read_concepts
from .evaluate import Dictionary, OnnxEncoder, candidate_text


def make_queries(groups, d: Dictionary, rng, n_queries: int):
    """(query text, gold concept index) from names of groups anchored on dictionary concepts."""
    id_to_idx = {c.id: i for i, c in enumerate(d.concepts)}
    out = []
    for g in groups:
        ci = id_to_idx.get(g.id)
        if ci is None:
            continue
        pref = normalize_name(d.concepts[ci].name)
        for n in g.names:
            if normalize_name(n) != pref:
                out.append((n, ci))
        # the preferred name itself, sometimes (a mention equal to the name must still win)
        if rng.random() < 0.15:
            out.append((d.concepts[ci].name, ci))
    rng.shuffle(out)
    return out[:n_queries]


def mine(encoder, d: Dictionary, queries, k: int, name_vecs=None):
    if name_vecs is None:
        name_vecs = encoder.encode_cached(d.names)
    q = encoder.encode([t for t, _ in queries])
    negs = []
    for i in range(0, len(q), 512):
        s = q[i : i + 512] @ name_vecs.T
        for row, (_, gold) in zip(s, queries[i : i + 512]):
            ranked = d.rank_from_scores(row, k + 1)
            negs.append([c for c in ranked if c != gold][:k])
    return negs


def mention_form(text: str, rng) -> str:
    r = rng.random()
    if r < 0.5:
        text = text.lower()
    return f"{MARKERS[0]} {text} {MARKERS[1]}"


def train(args):
    torch = setup_torch(args.threads, args.seed)
    from transformers import AutoModelForSequenceClassification

    rng = random.Random(args.seed)
    t0 = time.time()
    d = Dictionary(read_concepts(args.dict))
    kbs = {}
    for spec in args.kb:
        name, _, path = spec.partition("=") if "=" in spec else (Path(spec).stem, "", spec)
        kbs[name] = read_concepts(path)
    groups = build_groups(kbs, anchor=args.anchor)
    queries = make_queries(groups, d, rng, args.queries)
    enc = OnnxEncoder(args.biencoder, "int8", threads=args.threads)
    t = time.time()
    negs = mine(enc, d, queries, args.mine_k)
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
            text, gold = queries[qi]
            pool_negs = negs[qi]
            # mostly the hardest negatives, some random ones for calibration
            chosen = pool_negs[: n - 1] + [rng.randrange(len(d.concepts))]
            chosen = [c for c in chosen if c != gold][: n]
            while len(chosen) < n:
                c = rng.randrange(len(d.concepts))
                if c != gold:
                    chosen.append(c)
            q = mention_form(text, rng)
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
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        losses.append(float(loss))
        if step % 20 == 0:
            acc = float((logits.argmax(1) == 0).float().mean())
            msg = f"step {step}/{steps} loss {np.mean(losses[-20:]):.4f} batch-acc {acc:.2f} {(time.time() - t_train) / step:.2f}s/step"
            print(msg, flush=True)
            log.write(msg + "\n")
            log.flush()
    final = out / "final"
    model.cpu().save_pretrained(final)
    tok.save_pretrained(final)
    info = {
        "method": "cross-encoder, synthetic mentions from KB synonyms, hard negatives mined with the shipped bi-encoder, "
        + ("binary cross-entropy" if args.loss == "bce" else f"listwise softmax + {args.bce_weight} x BCE"),
        "data": {k: {"file": rel(p), "sha256": file_sha256(p)} for k, p in
                 [((s.partition("=")[0] if "=" in s else Path(s).stem), s.partition("=")[2] if "=" in s else s) for s in args.kb]},
        "dictionary": {"file": rel(args.dict), "sha256": file_sha256(args.dict)},
        "miningModel": rel(args.biencoder),
        "hyperparameters": {"steps": step, "queriesPerBatch": args.batch, "negatives": n, "mineK": args.mine_k, "lr": args.lr,
                            "maxLength": args.max_length, "semanticType": args.semantic_type, "loss": args.loss,
                            "bceWeight": args.bce_weight, "seed": args.seed, "threads": args.threads, "device": args.device},
        "queries": len(queries),
        "trainSeconds": round(time.time() - t_train),
        "totalSeconds": round(time.time() - t0),
        "finalLoss": float(np.mean(losses[-50:])) if losses else None,
    }
    write_json(out / "training.json", info)
    print(json.dumps(info, indent=2), flush=True)
    return info


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
    ap.add_argument("--negatives", type=int, default=7)
    ap.add_argument("--batch", type=int, default=8, help="queries per batch")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--minutes", type=float, default=0)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--loss", choices=["listwise", "bce"], default="listwise")
    ap.add_argument("--bce-weight", type=float, default=0.2)
    ap.add_argument("--no-semantic-type", dest="semantic_type", action="store_false")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=13)
    return ap


def main(argv=None):
    train(parser().parse_args(argv))


if __name__ == "__main__":
    main()
