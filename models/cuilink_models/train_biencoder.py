"""SapBERT-style synonym self-alignment for the bi-encoder, from ontologies alone.

Batches hold name pairs of the same concept (synonyms, capped per concept), optionally
child/parent name pairs (Kong et al.'s graph pairs, as a share of the batch), and half of each
batch is filled with concepts that are near neighbours in the current embedding space so that
the batch contains hard negatives. Loss: multi-similarity loss (Wang et al. 2019) with online
hard-pair mining (epsilon), as in SapBERT. AdamW, fp32, 2 CPU threads by default.

    python -m cuilink_models.train_biencoder --kb work/kb/medic.jsonl --kb work/kb/doid.jsonl \
        --out work/runs/bi --minutes 25
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np

from .common import add_run_arguments, base_model_dir, file_record, load_encoder, load_tokenizer, log_progress, optimizer_step, progress_lr_factor, rel, save_checkpoint, setup_torch, write_training_record
from .data import build_groups, kb_specs, read_concepts


def ms_loss(torch, emb, labels, alpha=1.0, beta=60.0, base=0.5, eps=0.1):
    """Multi-similarity loss with MS pair mining; emb L2-normalized [n, d], labels [n]."""
    sim = emb @ emb.t()
    n = sim.size(0)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(n, dtype=torch.bool, device=emb.device)
    pos_mask = same & ~eye
    neg_mask = ~same
    big = 1e4
    with torch.no_grad():
        min_pos = torch.where(pos_mask, sim, torch.full_like(sim, big)).min(1, keepdim=True).values
        max_neg = torch.where(neg_mask, sim, torch.full_like(sim, -big)).max(1, keepdim=True).values
        hard_neg = neg_mask & (sim + eps > min_pos)
        hard_pos = pos_mask & (sim - eps < max_neg)
    pos_term = torch.where(hard_pos, torch.exp(-alpha * (sim - base)), torch.zeros_like(sim)).sum(1)
    neg_term = torch.where(hard_neg, torch.exp(beta * (sim - base)), torch.zeros_like(sim)).sum(1)
    loss = torch.log1p(pos_term) / alpha + torch.log1p(neg_term) / beta
    valid = pos_mask.any(1)
    return loss[valid].mean(), float(hard_pos.sum()), float(hard_neg.sum())


def pool(torch, h, mask, pooling):
    if pooling == "cls":
        v = h[:, 0]
    else:
        m = mask.unsqueeze(-1).float()
        v = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(v, dim=-1)


class PairSampler:
    def __init__(self, groups, rng, max_names=16, graph_share=0.0, neighbours=None, hard_share=0.5):
        self.rng = rng
        self.groups = groups
        self.names = []
        for g in groups:
            names = list(g.names)
            if len(names) > max_names:
                names = [names[0]] + rng.sample(names[1:], max_names - 1)
            self.names.append(names)
        self.syn_groups = [i for i, n in enumerate(self.names) if len(n) >= 2]
        self.index = {g.id: i for i, g in enumerate(groups)}
        self.graph = [(i, self.index[p]) for i, g in enumerate(groups) for p in g.parents if p in self.index]
        self.graph_share = graph_share
        self.neighbours = neighbours  # [n_groups, k] int array or None
        self.hard_share = hard_share if neighbours is not None else 0.0
        self.order: list[int] = []

    def _next_group(self):
        if not self.order:
            self.order = list(self.syn_groups)
            self.rng.shuffle(self.order)
        return self.order.pop()

    def batch(self, pairs: int):
        """Returns texts and labels: `pairs` positive pairs (2 texts each)."""
        texts, labels = [], []
        used: set[int] = set()
        n_graph = int(round(pairs * self.graph_share)) if self.graph else 0
        n_syn = pairs - n_graph

        def add_syn(gi):
            a, b = self.rng.sample(self.names[gi], 2)
            texts.extend([a, b])
            labels.extend([gi, gi])
            used.add(gi)

        count = 0
        while count < n_syn:
            gi = self._next_group()
            if gi in used:
                continue
            add_syn(gi)
            count += 1
            # hard negatives: a few neighbours of this concept in the same batch
            if self.hard_share > 0 and self.rng.random() < self.hard_share:
                for nb in self.neighbours[gi][:3]:
                    nb = int(nb)
                    if count >= n_syn:
                        break
                    if nb in used or len(self.names[nb]) < 2:
                        continue
                    add_syn(nb)
                    count += 1
        for _ in range(n_graph):
            child, parent = self.graph[self.rng.randrange(len(self.graph))]
            # label the pair with a fresh id so it only pulls child towards parent
            lab = len(self.groups) + len(labels)
            texts.extend([self.rng.choice(self.names[child]), self.rng.choice(self.names[parent])])
            labels.extend([lab, lab])
        return texts, labels


def neighbours_by_embedding(torch, model, tok, groups, pooling, k=8, batch=256, max_length=32):
    """k nearest other concepts by the current model's embedding of each preferred name."""
    names = [g.names[0] for g in groups]
    order = np.argsort([len(n) for n in names])
    vecs = np.zeros((len(names), model.config.hidden_size), dtype=np.float32)
    model.eval()
    with torch.no_grad():
        for i in range(0, len(names), batch):
            idx = order[i : i + batch]
            enc = tok([names[j] for j in idx], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            h = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
            vecs[idx] = pool(torch, h, enc["attention_mask"], pooling).numpy()
    nb = np.zeros((len(names), k), dtype=np.int64)
    V = torch.from_numpy(vecs)
    for i in range(0, len(names), 2048):
        s = V[i : i + 2048] @ V.t()
        s[torch.arange(s.size(0)), torch.arange(i, i + s.size(0))] = -2
        nb[i : i + 2048] = s.topk(k, dim=1).indices.numpy()
    return nb


def add_pubtator_mentions(groups, anchor_concepts, path, split: str = "learn") -> int:
    """Opt-in fine-tuning data: each annotated mention with a single gold id found in the anchor
    KB becomes one more name of that concept's group. With split 'learn' (the default) only the
    learn part of the corpus's fixed tuning split is used: the tune part is what link settings and
    models are chosen on (src/eval/tuning-split.ts), so a fine-tune never sees it; 'all' uses every
    document (a corpus that is not split, e.g. gold samples collected by the evaluator)."""
    from .evaluate import norm_gold_id, read_pubtator, select_split

    key_to_id = {}
    for c in anchor_concepts:
        for k in [c.id, *c.altIds]:
            key_to_id.setdefault(norm_gold_id(k), c.id)
    by_id = {g.id: g for g in groups}
    added = 0
    if split not in ("learn", "all"):
        raise ValueError(f"split must be learn or all, not {split!r}")
    mentions = select_split(read_pubtator(path), split)
    for m in mentions:
        ids = m.gold[0]
        if len(ids) != 1:
            continue
        gid = key_to_id.get(next(iter(ids)))
        g = by_id.get(gid)
        if g is not None and m.text.lower() not in {n.lower() for n in g.names}:
            g.names.append(m.text)
            added += 1
    return added


def train(args):
    torch = setup_torch(args.threads, args.seed)
    device = torch.device(args.device)
    rng = random.Random(args.seed)
    t_start = time.time()

    kbs = {name: read_concepts(path) for name, path in kb_specs(args.kb)}
    groups = build_groups(kbs, anchor=args.anchor, merge=not args.no_merge)
    if args.pubtator:
        added = add_pubtator_mentions(groups, kbs[args.anchor], args.pubtator, args.pubtator_split)
        print(f"fine-tuning: {added} annotated mention strings added as names of their gold concepts", flush=True)
    src = args.init or str(base_model_dir())
    tok = load_tokenizer(src)
    model = load_encoder(src, tok).to(device)

    neighbours = None
    if args.hard_share > 0:
        t = time.time()
        cache = Path(args.neighbours_cache) if args.neighbours_cache else None
        if cache is not None and cache.exists() and np.load(cache).shape[0] == len(groups):
            neighbours = np.load(cache)
        else:
            neighbours = neighbours_by_embedding(torch, model.cpu(), tok, groups, args.pooling)
            model.to(device)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                np.save(cache, neighbours)
        print(f"neighbours for {len(groups)} concepts in {time.time() - t:.0f}s", flush=True)
    sampler = PairSampler(groups, rng, args.max_names, args.graph_share, neighbours, args.hard_share)
    print(f"groups {len(groups)} (with >=2 names: {len(sampler.syn_groups)}), graph edges {len(sampler.graph)}", flush=True)

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    total = args.steps
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "train.log", "a")
    model.train()
    step, losses = 0, []
    t_train = time.time()
    budget = args.minutes * 60 if args.minutes else None
    next_snapshot = args.save_every_minutes * 60 if args.save_every_minutes else None

    def progress():
        p = step / total
        return max(p, (time.time() - t_train) / budget) if budget else p

    while step < total:
        if progress() >= 1.0:
            print(f"time budget reached at step {step}", flush=True)
            break
        lr = args.lr * progress_lr_factor(progress())
        for grp in opt.param_groups:
            grp["lr"] = lr
        if neighbours is not None and args.refresh_every and step > 0 and step % args.refresh_every == 0:
            sampler.neighbours = neighbours_by_embedding(torch, model.cpu(), tok, groups, args.pooling)
            model.to(device).train()
        texts, labels = sampler.batch(args.pairs)
        enc = tok(texts, padding=True, truncation=True, max_length=args.max_length, return_tensors="pt").to(device)
        h = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        emb = pool(torch, h, enc["attention_mask"], args.pooling)
        loss, hp, hn = ms_loss(torch, emb, torch.tensor(labels, device=device), args.alpha, args.beta, args.base, args.eps)
        losses.append(optimizer_step(torch, model, opt, loss))
        step += 1
        if step % 20 == 0:
            msg = f"step {step}/{total} loss {np.mean(losses[-20:]):.4f} hardpos {hp:.0f} hardneg {hn:.0f} lr {lr:.2e} {(time.time() - t_train) / step:.2f}s/step"
            log_progress(log, msg)
        if next_snapshot is not None and time.time() - t_train >= next_snapshot:
            # A snapshot to evaluate while a long run goes on (weights only: no optimizer state).
            snapshot = out / f"step-{step}"
            save_checkpoint(model, tok, snapshot)
            model.to(device).train()
            log_progress(log, f"snapshot {snapshot} at {(time.time() - t_train) / 60:.1f} min")
            next_snapshot += args.save_every_minutes * 60
    train_seconds = time.time() - t_train
    save_checkpoint(model, tok, out / "final")
    info = {
        "method": "SapBERT-style synonym self-alignment: multi-similarity loss with online hard-pair mining"
        + (", near-neighbour hard-negative batches" if args.hard_share > 0 else "")
        + (f", Kong-style child/parent graph pairs ({args.graph_share:.0%} of pairs)" if args.graph_share > 0 else ""),
        "data": {name: file_record(path) for name, path in kb_specs(args.kb)},
        "groups": len(groups),
        "groupsWithSynonyms": len(sampler.syn_groups),
        "graphEdges": len(sampler.graph),
        "hyperparameters": {
            "pooling": args.pooling, "steps": step, "pairsPerBatch": args.pairs, "lr": args.lr, "weightDecay": args.weight_decay,
            "maxNamesPerConcept": args.max_names, "graphShare": args.graph_share, "hardShare": args.hard_share,
            "refreshEvery": args.refresh_every, "msLoss": {"alpha": args.alpha, "beta": args.beta, "base": args.base, "miningEpsilon": args.eps},
            "maxLength": args.max_length, "seed": args.seed, "threads": args.threads, "device": args.device, "mergeIntoAnchor": not args.no_merge,
            "init": "base" if not args.init else rel(args.init),
            "pubtator": rel(args.pubtator) if args.pubtator else None,
        },
    }
    return write_training_record(out, info, train_seconds, time.time() - t_start, losses, 50)


def parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", action="append", required=True, help="[name=]concept.jsonl (repeatable); the anchor KB is named 'medic'")
    ap.add_argument("--anchor", default="medic")
    ap.add_argument("--no-merge", action="store_true")
    ap.add_argument("--out", required=True)
    ap.add_argument("--pubtator", help="opt-in fine-tuning: annotated PubTator mentions become extra names of their gold concepts")
    ap.add_argument("--pubtator-split", choices=["learn", "all"], default="learn",
                    help="learn: the corpus's learn part only (its tune part, src/eval/tuning-split.ts, is never trained on); all: every document")
    ap.add_argument("--init", help="start from this checkpoint instead of the base weights")
    ap.add_argument("--pooling", choices=["mean", "cls"], default="mean")
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--minutes", type=float, default=0, help="stop early after this many minutes of training")
    ap.add_argument("--save-every-minutes", type=float, default=0, help="also save the weights as OUT/step-N this often (0: only OUT/final)")
    ap.add_argument("--pairs", type=int, default=96, help="positive pairs per batch (2x texts)")
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--max-names", type=int, default=16)
    ap.add_argument("--graph-share", type=float, default=0.0)
    ap.add_argument("--hard-share", type=float, default=0.5)
    ap.add_argument("--neighbours-cache", help="npy file caching the initial neighbour table")
    ap.add_argument("--refresh-every", type=int, default=0)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--beta", type=float, default=60.0)
    ap.add_argument("--base", type=float, default=0.5)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--max-length", type=int, default=32)
    return add_run_arguments(ap)


def main(argv=None):
    train(parser().parse_args(argv))


if __name__ == "__main__":
    main()
