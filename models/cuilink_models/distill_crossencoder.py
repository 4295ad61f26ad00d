"""Distil the shipped cross-encoder into a shallower one (fewer transformer layers, same width,
tokenizer and input format), so that reranking costs less per pair on a CPU.

Teacher: the shipped cross-encoder, rebuilt as a torch BertForSequenceClassification from its
fp16 ONNX graph (weights upcast to fp32; cuilink_models.onnx_state maps the MatMul weights back to
their torch names).
Student: the teacher's embeddings, pooler and classifier and a subset of its layers (--keep,
chosen by which subset agrees best with the teacher before training), then trained to reproduce
the teacher's logits.

Data (ontology only, no corpus text): pairs written by the linker itself
(bench/distill-pairs.ts): KB names in mention form as queries, each with the top 5 candidates
of the shipped retrieval, every pair scored alone by the shipped int8 cross-encoder, so the student
imitates the scorer exactly as the linker runs it. Loss: MSE on the logit plus a listwise KL term
over each query's candidates (the order among candidates is what reranking uses).

    python -m cuilink_models.distill_crossencoder --teacher models/default/crossencoder \\
        --pairs models/work/distill/pairs.jsonl --out models/work/distill/student --keep 0,2,4

On a borrowed GPU (models/distill-context-student-gpu.sh): --init-only writes the untrained student
here, the GPU trains it (--init, --device cuda, --trainable-out: only what training changed, in
shards small enough to come back), and --trainable-in rebuilds it here for --export.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import time
from pathlib import Path

import numpy as np

from .common import file_record, load_tokenizer, log_progress, optimizer_step, progress_lr_factor, rel, setup_torch, sha256_file, write_json, write_training_record

PREFIX = "m."


def teacher_from_onnx(onnx_path: Path, heads: int):
    """BertForSequenceClassification (1 logit) with the weights of an exported cross-encoder graph."""
    import onnx
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from .onnx_state import state_from_onnx_graph

    raw, _ = state_from_onnx_graph(onnx.load(str(onnx_path)).graph, PREFIX)
    state = {k: v.astype(np.float32) for k, v in raw.items()}
    layers = 1 + max(int(k.split(".")[3]) for k in state if k.startswith("bert.encoder.layer."))
    hidden = state["bert.embeddings.word_embeddings.weight"].shape[1]
    cfg = BertConfig(
        vocab_size=state["bert.embeddings.word_embeddings.weight"].shape[0],
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=state["bert.encoder.layer.0.intermediate.dense.bias"].shape[0],
        max_position_embeddings=state["bert.embeddings.position_embeddings.weight"].shape[0],
        type_vocab_size=state["bert.embeddings.token_type_embeddings.weight"].shape[0],
        num_labels=1,
    )
    model = BertForSequenceClassification(cfg)
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise RuntimeError(f"teacher weights do not match: missing {missing}, unexpected {unexpected}")
    return model.eval()


def student_from(teacher, keep: list[int]):
    import copy

    import torch

    student = copy.deepcopy(teacher)
    student.bert.encoder.layer = torch.nn.ModuleList([student.bert.encoder.layer[i] for i in keep])
    student.config.num_hidden_layers = len(keep)
    return student


def read_pairs(path: Path, top: int):
    """Rows grouped by query: (ids, types, logit) of its first `top` candidates (retrieval order)."""
    groups: dict[int, list] = {}
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            groups.setdefault(r["q"], []).append((r["ids"], r["types"], r["logit"]))
    return [g[:top] for g in groups.values() if len(g) >= 2]


def collate(torch, rows, device="cpu"):
    width = max(len(r[0]) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for i, (a, t, _) in enumerate(rows):
        ids[i, : len(a)] = a
        types[i, : len(t)] = t
        mask[i, : len(a)] = 1
    return tuple(t.to(device) for t in (torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(types), torch.tensor([r[2] for r in rows], dtype=torch.float32)))


def agreement(torch, model, groups, batch_pairs: int = 256, device="cpu") -> dict:
    """Student against teacher on held-out queries: logit MSE, Pearson r, same best candidate."""
    model.eval()
    got, want, same = [], [], 0
    with torch.no_grad():
        rows = [r for g in groups for r in g]
        for s in range(0, len(rows), batch_pairs):
            ids, mask, types, target = collate(torch, rows[s : s + batch_pairs], device)
            got.extend(model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits[:, 0].tolist())
            want.extend(target.tolist())
    offset = 0
    for g in groups:
        a, b = got[offset : offset + len(g)], want[offset : offset + len(g)]
        same += int(np.argmax(a) == np.argmax(b))
        offset += len(g)
    got_a, want_a = np.array(got), np.array(want)
    return {"mse": float(np.mean((got_a - want_a) ** 2)), "pearson": float(np.corrcoef(got_a, want_a)[0, 1]), "sameTop1": same / len(groups), "queries": len(groups)}


TRAINABLE_SHARD_BYTES = 15 << 20
FROZEN = "bert.embeddings.word_embeddings.weight"


def save_trainable(model, out: Path) -> list[str]:
    """The weights training changed (all but the frozen word embeddings), fp32, in safetensors shards
    of at most 15 MiB: what a run on a borrowed machine sends back (its files are capped at 16 MiB).
    Names as save_pretrained writes them (another transformers version may name modules otherwise)."""
    import tempfile

    from safetensors.torch import load_file, save_file

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        state = {}
        for f in sorted(Path(tmp).glob("*.safetensors")):
            state.update(load_file(str(f)))
    shards, current, size = [], {}, 0
    for name, tensor in state.items():
        if name == FROZEN or name.endswith("position_ids"):
            continue
        t = tensor.float().contiguous()
        if current and size + t.numel() * 4 > TRAINABLE_SHARD_BYTES:
            shards.append(current)
            current, size = {}, 0
        current[name] = t
        size += t.numel() * 4
    shards.append(current)
    names = []
    for i, shard in enumerate(shards):
        names.append(f"trainable-{i:03d}.safetensors")
        save_file(shard, str(out / names[-1]))
    return names


def load_trainable(model, shards_dir: Path) -> None:
    from safetensors.torch import load_file

    state = {}
    for f in sorted(shards_dir.glob("trainable-*.safetensors")):
        state.update(load_file(str(f)))
    if not state:
        raise FileNotFoundError(f"no trainable-*.safetensors in {shards_dir}")
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k != FROZEN and not k.endswith("position_ids")]
    if missing or unexpected:
        raise RuntimeError(f"trained weights do not match the student: missing {missing}, unexpected {unexpected}")


def load_student(args):
    """The student an --init run wrote (layers chosen then), in fp32, with that run's record."""
    from transformers import BertForSequenceClassification

    model = BertForSequenceClassification.from_pretrained(args.init).float()
    return model, json.loads((Path(args.init).parent / "training.json").read_text())


def train(args):
    torch = setup_torch(args.threads, args.seed)
    rng = random.Random(args.seed)
    t0 = time.time()
    device = args.device
    groups = read_pairs(Path(args.pairs), args.top)
    rng.shuffle(groups)
    held, train_groups = groups[: args.held_out], groups[args.held_out :]
    # Agreement is read on the candidates the linker reranks, whatever `top` trains on, so that
    # settings with other `top`s compare.
    held = [g[: args.agreement_top] for g in held]
    print(f"{len(groups)} queries ({sum(len(g) for g in groups)} pairs); {len(held)} held out", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.init:
        # Go on from a student an earlier run wrote (--init-only, or OUT/final): its layers were chosen
        # then, so the teacher's weights need not be here (a borrowed GPU gets the student alone).
        model, record = load_student(args)
        keep, teacher_info = record["hyperparameters"]["keep"], record["teacher"]
        teacher_layers = record.get("teacherLayers")
        before = {"init " + rel(args.init): agreement(torch, model.to(device), held, device=device)}
    else:
        teacher_dir = Path(args.teacher)
        manifest = json.loads((teacher_dir / "manifest.json").read_text())
        teacher = teacher_from_onnx(teacher_dir / "model.fp16.onnx", manifest["architecture"]["heads"])
        teacher_layers = teacher.config.num_hidden_layers
        teacher_info = {"dir": rel(teacher_dir), "sha256": sha256_file(teacher_dir / "model.fp16.onnx")}
        before = {"teacher(fp16 weights) vs int8 teacher": agreement(torch, teacher, held)}
        candidates = [[int(x) for x in k.split(",")] for k in args.keep]
        for keep in candidates:
            before[",".join(map(str, keep))] = agreement(torch, student_from(teacher, keep), held)
        keep = max(candidates, key=lambda k: before[",".join(map(str, k))]["pearson"])
        model = student_from(teacher, keep)
        del teacher
    print(json.dumps(before, indent=1), flush=True)
    pairs_info = {**file_record(args.pairs), "queries": len(groups)}
    if args.init_only:
        # The chosen layers alone, fp16 (half the bytes to send), for a later --init run.
        model.half().save_pretrained(out / "final")
        info = {"method": "layers of the teacher chosen by held-out agreement; not trained", "teacher": teacher_info, "teacherLayers": teacher_layers,
                "pairs": pairs_info, "hyperparameters": {"keep": keep}, "heldOutAgreement": {"beforeTraining": before}}
        return write_training_record(out, info, 0, time.time() - t0, [], 1)
    model.to(device).train()
    # The word embeddings stay the teacher's: most of the parameters, little to gain from them here.
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.01)
    per_epoch = max(1, len(train_groups) // args.batch)
    steps = per_epoch * args.epochs
    budget = args.minutes * 60 if args.minutes else None
    t_train = time.time()
    step, losses = 0, []
    log = open(out / "train.log", "a")
    while step < steps:
        progress = max(step / steps, (time.time() - t_train) / budget if budget else 0)
        if progress >= 1:
            print(f"time budget reached at step {step}", flush=True)
            break
        if step % per_epoch == 0:
            rng.shuffle(train_groups)
        for grp in opt.param_groups:
            grp["lr"] = args.lr * progress_lr_factor(progress)
        chunk = train_groups[(step % per_epoch) * args.batch : (step % per_epoch + 1) * args.batch]
        rows = [r for g in chunk for r in g]
        ids, mask, types, target = collate(torch, rows, device)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.startswith("cuda")):
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits[:, 0]
        logits = logits.float()
        loss = torch.nn.functional.mse_loss(logits, target)
        offset, kl = 0, 0.0
        for g in chunk:
            s, t = logits[offset : offset + len(g)], target[offset : offset + len(g)]
            kl = kl + torch.nn.functional.kl_div(torch.log_softmax(s, 0), torch.softmax(t, 0), reduction="sum")
            offset += len(g)
        loss = loss + args.kl_weight * kl / len(chunk)
        losses.append(optimizer_step(torch, model, opt, loss))
        step += 1
        if step % 100 == 0:
            msg = f"step {step}/{steps} loss {np.mean(losses[-100:]):.4f} {(time.time() - t_train) / step:.3f}s/step"
            log_progress(log, msg)
    model.eval()
    after = agreement(torch, model, held, device=device)
    print("held out after training:", after, flush=True)
    if args.trainable_out:
        print("trained weights:", save_trainable(model, Path(args.trainable_out)), flush=True)
    else:
        final = out / "final"
        model.save_pretrained(final)
        load_tokenizer().save_pretrained(final)
    info = {
        "method": "distilled from the shipped cross-encoder: its layers " + ",".join(map(str, keep)) + " of "
        + str(teacher_layers) + ", trained on the teacher's own int8 logits (MSE + "
        + f"{args.kl_weight} x listwise KL per query) over queries with their top-5 retrieved candidates",
        "teacher": teacher_info,
        "pairs": pairs_info,
        "hyperparameters": {"keep": keep, "init": rel(args.init) if args.init else None, "top": args.top, "frozen": "word embeddings", "steps": step, "queriesPerBatch": args.batch, "epochs": args.epochs, "lr": args.lr,
                            "klWeight": args.kl_weight, "seed": args.seed, "threads": args.threads, "device": device, "agreementTop": args.agreement_top},
        "heldOutAgreement": {"beforeTraining": before, "afterTraining": after},
    }
    record = write_training_record(out, info, time.time() - t_train, time.time() - t0, losses, 100)
    if args.trainable_out:
        # assemble() (--trainable-in) reads the record beside the shards it is given.
        shutil.copyfile(out / "training.json", Path(args.trainable_out) / "training.json")
    return record


def assemble(args) -> dict:
    """A student an --init run started, with the weights a --trainable-out run sent back: OUT/final
    as a training run writes it, its record the remote run's training.json (copied into OUT)."""
    model, _ = load_student(args)
    load_trainable(model, Path(args.trainable_in))
    out = Path(args.out)
    model.save_pretrained(out / "final")
    load_tokenizer().save_pretrained(out / "final")
    info = json.loads((Path(args.trainable_in) / "training.json").read_text())
    write_json(out / "training.json", info)
    return info


def parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--teacher", required=True, help="exported cross-encoder directory (model.fp16.onnx)")
    ap.add_argument("--pairs", required=True, help="pairs JSONL from bench/distill-pairs.ts")
    ap.add_argument("--out", required=True)
    ap.add_argument("--keep", action="append", default=None, help="teacher layers to keep, e.g. 0,2,4 (repeat: the best before training wins)")
    ap.add_argument("--top", type=int, default=3, help="candidates per query used (the linker reranks its top 3)")
    ap.add_argument("--init", help="a student checkpoint (OUT/final of an earlier or an --init-only run) to go on training")
    ap.add_argument("--init-only", action="store_true", help="choose the layers (--keep) and write the untrained student (fp16) to OUT/final; no training")
    ap.add_argument("--device", default="cpu", help="torch device for training (cuda on a borrowed GPU: needs --init)")
    ap.add_argument("--trainable-out", help="write the trained weights (all but the frozen word embeddings) as <=15 MiB shards here instead of OUT/final")
    ap.add_argument("--trainable-in", help="no training: OUT/final = the --init student with the shards a --trainable-out run wrote (and its training.json)")
    ap.add_argument("--held-out", type=int, default=1000)
    ap.add_argument("--agreement-top", type=int, default=3, help="held-out agreement over each query's first N candidates (the linker reranks 3)")
    ap.add_argument("--batch", type=int, default=16, help="queries per batch")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=0)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--kl-weight", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--export", help="also export the student (int8 + fp16 ONNX, manifest) to this directory")
    ap.add_argument("--fixture", help="also write the torch reference outputs (models/tests/fixtures/reference_crossencoder.json)")
    ap.add_argument("--model-id", default="cuilink-crossencoder-minilm-kbsyn-distil-l3-v1")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    args.keep = args.keep or ["0,2,4"]
    info = assemble(args) if args.trainable_in else train(args)
    if args.export and not args.init_only:
        from .export import export_model

        teacher = json.loads((Path(args.teacher) / "manifest.json").read_text())
        export_model("cross-encoder", str(Path(args.out) / "final"), Path(args.export), args.model_id,
                     max_length=teacher["maxLength"], query_mode=teacher["query"]["mode"],
                     context_chars=teacher["query"]["contextChars"],
                     include_semantic_type=teacher["candidate"]["includeSemanticType"], training=info,
                     fixture=Path(args.fixture) if args.fixture else None)


if __name__ == "__main__":
    main()
