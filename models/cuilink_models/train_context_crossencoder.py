"""Context-reading cross-encoder (issue 26): the mention marked inside its context window x
candidate `name ; semantic type` -> relevance logit, trained on annotated mentions.

Data: `bench/context-rerank-data.ts` (JSONL, one query per line). Each gold mention of the learn
part of NCBI-disease train comes with the candidates the shipped retriever hands the reranker
(hard negatives) and its query built as the linker builds it for a context model; `kb` lines are
KB names in mention form without context, mixed in (`--kb-share`) so that the model keeps what
the shipped, ontology-trained cross-encoder knows. The `tune` part is never trained on; its
reranking accuracy is printed at the end (a check, not a choice: choices are made with
`cuilink eval --split tune` on the exported model).

Initialised from the shipped cross-encoder's ONNX graph (`--init-onnx`), so no checkpoint of an
earlier run is needed. Pairs are tokenized like the linker (src/text/tokenizer.ts encodePair):
each side cut to the length Hugging Face's longest_first keeps, the query's window centred on the
first marker, so what the model is trained on is what it reads in the stage.

    python -m cuilink_models.train_context_crossencoder --data work/context-ce/data.jsonl \
        --init-onnx default/crossencoder/model.fp16.onnx --out work/context-ce/run --minutes 40
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from .common import MARKERS, add_run_arguments, file_record, load_tokenizer, log_progress, optimizer_step, progress_lr_factor, save_checkpoint, setup_torch, write_training_record


def read_groups(path: str | Path) -> dict[str, list[dict]]:
    """Query lines by part (learn, tune, kb); lines without a positive anywhere are dropped."""
    parts: dict[str, list[dict]] = {"learn": [], "tune": [], "kb": []}
    with open(path, encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            if not q["gold"]:
                continue
            parts.setdefault(q["part"], []).append(q)
    return parts


def fit_around(ids: list[int], max_len: int, anchor: int | None) -> list[int]:
    """As src/text/tokenizer.ts fitAround: a window of max_len ids centred on the first anchor."""
    if len(ids) <= max_len:
        return ids
    at = ids.index(anchor) if anchor is not None and anchor in ids else -1
    if at < 0:
        return ids[:max_len]
    start = min(max(0, at - max_len // 4), len(ids) - max_len)
    return ids[start:start + max_len]


def longest_first_lengths(first: int, second: int, budget: int) -> tuple[int, int]:
    """As src/text/tokenizer.ts longestFirstLengths: the lengths truncation="longest_first" keeps."""
    if first + second <= budget:
        return first, second
    keep_shorter = min(first, second)
    keep_longer = max(keep_shorter, budget - keep_shorter)
    if keep_shorter + keep_longer > budget:
        keep_shorter = budget // 2
        keep_longer = keep_shorter + budget % 2
    return (keep_longer, keep_shorter) if first > second else (keep_shorter, keep_longer)


class PairEncoder:
    """Token ids of (query, candidate) pairs exactly as the linker's encodePair builds them.
    `pieces` turns a text into WordPiece ids without special tokens."""

    def __init__(self, pieces, cls: int, sep: int, pad: int, marker: int, max_length: int):
        self.to_ids = pieces
        self.cls, self.sep, self.pad, self.marker = cls, sep, pad, marker
        self.max_length = max_length
        self.cache: dict[str, list[int]] = {}

    @classmethod
    def from_hf(cls, tok, max_length: int) -> "PairEncoder":
        return cls(lambda text: tok(text, add_special_tokens=False)["input_ids"], tok.cls_token_id, tok.sep_token_id,
                   tok.pad_token_id, tok.convert_tokens_to_ids(MARKERS[0]), max_length)

    def pieces(self, text: str) -> list[int]:
        got = self.cache.get(text)
        if got is None:
            got = self.cache[text] = list(self.to_ids(text))
        return got

    def pair(self, a: str, b: str) -> tuple[list[int], list[int]]:
        first, second = self.pieces(a), self.pieces(b)
        keep_first, keep_second = longest_first_lengths(len(first), len(second), max(2, self.max_length - 3))
        first = fit_around(first, keep_first, self.marker)
        second = second[:keep_second]
        return [self.cls, *first, self.sep, *second, self.sep], [0] * (len(first) + 2) + [1] * (len(second) + 1)

    def batch(self, torch, pairs: list[tuple[str, str]]):
        rows = [self.pair(a, b) for a, b in pairs]
        width = max(len(ids) for ids, _ in rows)
        ids = np.full((len(rows), width), self.pad, dtype=np.int64)
        types = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, (i, t) in enumerate(rows):
            ids[r, : len(i)] = i
            types[r, : len(t)] = t
            mask[r, : len(i)] = 1
        return {"input_ids": torch.from_numpy(ids), "token_type_ids": torch.from_numpy(types), "attention_mask": torch.from_numpy(mask)}


def training_group(q: dict, n: int, rng: random.Random) -> list[str]:
    """Candidate texts, the positive first: a gold concept, then the hardest n-1 wrong candidates
    (retrieval order) and one drawn from the rest of the list."""
    gold_ids = {g["id"] for g in q["gold"]}
    positive = rng.choice(q["gold"])["text"]
    wrong = [c["text"] for c in q["candidates"] if c["id"] not in gold_ids]
    chosen = wrong[: n - 1]
    rest = wrong[n - 1:]
    if rest:
        chosen.append(rng.choice(rest))
    return [positive, *chosen]


def rerank_accuracy(torch, model, enc: PairEncoder, queries: list[dict], k: int, batch: int = 64) -> dict:
    """acc@1 of the model alone over each query's top k candidates, on queries whose gold is among them."""
    model.eval()
    right = total = first = 0
    with torch.no_grad():
        for q in queries:
            cands = q["candidates"][:k]
            gold = {g["id"] for g in q["gold"]}
            if not any(c["id"] in gold for c in cands):
                continue
            logits = []
            for i in range(0, len(cands), batch):
                e = {k: v.to(next(model.parameters()).device) for k, v in enc.batch(torch, [(q["query"], c["text"]) for c in cands[i:i + batch]]).items()}
                logits.extend(model(**e).logits[:, 0].tolist())
            total += 1
            right += cands[int(np.argmax(logits))]["id"] in gold
            first += cands[0]["id"] in gold
    model.train()
    return {"queries": total, "modelAcc1": round(right / max(total, 1), 4), "retrievalAcc1": round(first / max(total, 1), 4), "k": k}


def train(args):
    torch = setup_torch(args.threads, args.seed)
    from .distill_crossencoder import teacher_from_onnx

    rng = random.Random(args.seed)
    t0 = time.time()
    parts = read_groups(args.data)
    learn, kb, tune = parts["learn"], parts["kb"], parts["tune"]
    if not learn:
        raise SystemExit(f"{args.data}: no learn-part query with a gold concept")
    tok = load_tokenizer()
    model = teacher_from_onnx(Path(args.init_onnx), heads=12)
    if model.config.vocab_size != len(tok):
        raise SystemExit(f"{args.init_onnx}: vocabulary {model.config.vocab_size} != tokenizer {len(tok)}")
    device = torch.device(args.device)
    model.to(device).train()
    enc = PairEncoder.from_hf(tok, args.max_length)
    before = rerank_accuracy(torch, model, enc, tune, args.eval_k) if args.eval_tune else None
    if before:
        print(f"tune before: {before}", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    kb_per_batch = round(args.batch * args.kb_share)
    learn_per_batch = args.batch - kb_per_batch
    steps = args.steps
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "train.log", "a")
    budget = args.minutes * 60 if args.minutes else None
    t_train = time.time()
    losses, step = [], 0
    n = args.negatives
    learn_order: list[int] = []
    epochs = 0

    def progress():
        p = step / steps
        return max(p, (time.time() - t_train) / budget) if budget else p

    while step < steps:
        if progress() >= 1.0:
            print(f"time budget reached at step {step}", flush=True)
            break
        for grp in opt.param_groups:
            grp["lr"] = args.lr * progress_lr_factor(progress())
        if len(learn_order) < learn_per_batch:
            order = list(range(len(learn)))
            rng.shuffle(order)
            learn_order.extend(order)
            epochs += 1
        chosen = [learn[learn_order.pop()] for _ in range(learn_per_batch)] + [rng.choice(kb) for _ in range(kb_per_batch if kb else 0)]
        groups = [training_group(q, n, rng) for q in chosen]
        width = max(len(g) for g in groups)
        pairs, valid = [], []
        for q, g in zip(chosen, groups):
            padded = g + [g[-1]] * (width - len(g))
            pairs.extend((q["query"], c) for c in padded)
            valid.append([True] * len(g) + [False] * (width - len(g)))
        e = {k: v.to(device) for k, v in enc.batch(torch, pairs).items()}
        logits = model(**e).logits.view(len(chosen), width)
        mask = torch.tensor(valid, device=device)
        masked = logits.masked_fill(~mask, -1e4)
        target = torch.zeros(len(chosen), dtype=torch.long, device=device)
        loss = torch.nn.functional.cross_entropy(masked, target)
        onehot = torch.nn.functional.one_hot(target, width).float()
        bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, onehot, reduction="none")
        loss = loss + args.bce_weight * (bce * mask).sum() / mask.sum()
        losses.append(optimizer_step(torch, model, opt, loss))
        step += 1
        if step % 20 == 0:
            acc = float((masked.argmax(1) == 0).float().mean())
            log_progress(log, f"step {step} epoch {epochs} loss {np.mean(losses[-20:]):.4f} batch-acc {acc:.2f} {(time.time() - t_train) / step:.2f}s/step")
    save_checkpoint(model, tok, out / "final")
    after = rerank_accuracy(torch, model, enc, tune, args.eval_k) if args.eval_tune else None
    if after:
        print(f"tune after: {after}", flush=True)
    info = {
        "method": "context cross-encoder: NCBI-disease train (learn part) gold mentions in their context window, "
        "hard negatives = the shipped retriever's candidates, plus KB names in mention form; listwise softmax + "
        f"{args.bce_weight} x BCE; initialised from the shipped cross-encoder",
        "data": {"queries": file_record(args.data), "init": file_record(args.init_onnx)},
        "hyperparameters": {"steps": step, "epochsStarted": epochs, "queriesPerBatch": args.batch, "kbShare": args.kb_share,
                            "negatives": n, "lr": args.lr, "maxLength": args.max_length, "bceWeight": args.bce_weight,
                            "seed": args.seed, "threads": args.threads, "device": args.device, "minutes": args.minutes},
        "queries": {"learn": len(learn), "kb": len(kb), "tune": len(tune)},
        "tuneRerankCheck": {"before": before, "after": after},
    }
    return write_training_record(out, info, time.time() - t_train, time.time() - t0, losses, 50)


def parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="JSONL from bench/context-rerank-data.ts")
    ap.add_argument("--init-onnx", required=True, help="an exported cross-encoder graph (fp16 or fp32) to start from")
    ap.add_argument("--out", required=True)
    ap.add_argument("--negatives", type=int, default=5)
    ap.add_argument("--batch", type=int, default=8, help="queries per batch")
    ap.add_argument("--kb-share", type=float, default=0.25, help="share of each batch drawn from the kb queries")
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--minutes", type=float, default=40)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--bce-weight", type=float, default=0.2)
    ap.add_argument("--eval-k", type=int, default=5)
    ap.add_argument("--no-eval-tune", dest="eval_tune", action="store_false")
    return add_run_arguments(ap)


def main(argv=None):
    train(parser().parse_args(argv))


if __name__ == "__main__":
    main()
