"""The whole default-model run after the KB export: baselines, bi-encoder training, negative
mining and cross-encoder training, export, evaluation, shipping and MODEL_CARD.md.
Called by models/train.sh (which makes the venv and runs `cuilink kb export`).

The trained models replace the shipped ones only when they beat what they replace on the
evaluation corpus's --split (models/train.sh: the tune part of NCBI-disease train, where every
choice is made; dev is for reports); otherwise the base (or previous) model is kept and the card
says so.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import time
from pathlib import Path

from .common import MODELS_DIR, WORK_DIR, read_json, rel, write_json
from .model_card import evaluation_label

BI_ID = "cuilink-biencoder-minilm-sapbert-medic-v1"
CE_ID = "cuilink-crossencoder-minilm-kbsyn-v1"
BASE_ID = "cuilink-biencoder-minilm-base-untrained"
# The reranker was trained on `[M] mention [/M]` (no context: synthetic mentions from KB names).
# src/text/context-window.ts builds exactly that for mode "context" with 0 context characters,
# while mode "mention" would send the bare mention.
CE_QUERY = {"query_mode": "context", "context_chars": 0}
CE_MAX_LENGTH = 64


def kb_args(kb_dir: Path, names):
    out = []
    for n in names:
        p = kb_dir / f"{n}.jsonl"
        if p.exists():
            out += ["--kb", f"{n}={p}"]
        else:
            print(f"warning: {p} missing, skipped")
    return out


def evaluate(model_dir, args, out_json, rerank=None, lexical=False, preferred_only=False):
    """cuilink_models.evaluate on the evaluation split; with `rerank`, every rerank setting of the linker."""
    from . import evaluate as ev

    models = [Path(model_dir) / "manifest.json"] + ([Path(rerank) / "manifest.json"] if rerank else [])
    if args.resume and up_to_date(Path(out_json), [m for m in models if m.exists()]):
        return read_json(out_json)

    argv = ["--dict", str(args.kb_dir / "medic.jsonl"), "--corpus", args.corpus, "--split", args.split, "--onnx", str(model_dir), "--out", str(out_json)]
    if rerank:
        argv += ["--rerank", str(rerank), "--rerank-top", str(args.rerank_top), "--rerank-variants"]
    if lexical:
        argv += ["--lexical"]
    if preferred_only:
        argv += ["--preferred-only"]
    return ev.main(argv)


def refuse_leaky_finetune(a) -> None:
    """A fine-tune on gold (--pubtator) never writes models/default (models/README.md: the shipped
    models are trained from ontologies alone) and never learns from the documents it is evaluated on."""
    from .evaluate import read_pubtator, select_split

    default = (MODELS_DIR / "default").resolve()
    out = Path(a.out).resolve()
    if out == default or out.is_relative_to(default):
        raise SystemExit(f"refusing to write a fine-tuned model into {rel(default)}: pass --out (e.g. models/finetuned)")
    # the parts actually read: a fine-tune on train's learn part, judged on its tune part, shares none
    learned = {m.doc for m in select_split(read_pubtator(a.pubtator), a.pubtator_split)}
    shared = learned & {m.doc for m in select_split(read_pubtator(a.corpus), a.split)}
    if shared:
        raise SystemExit(f"{a.pubtator} ({a.pubtator_split}) shares {len(shared)} documents with the evaluation corpus {a.corpus} "
                         f"({a.split}): fine-tuning on them would leak it")


def up_to_date(done_marker: Path, inputs=()) -> bool:
    """A stage's output exists and is newer than every input it was made from: after a stage
    earlier in the run is redone (its output moved away, as models/README.md says to retrain),
    everything made from the old output is made again."""
    if not done_marker.exists():
        return False
    made = done_marker.stat().st_mtime
    return all(Path(i).exists() and Path(i).stat().st_mtime <= made for i in inputs)


def resumable(a, done_marker: Path, fn, *fargs, inputs=(), **kwargs):
    """Runs a stage unless --resume is given and the stage's output is up to date with its
    `inputs` (a rerun after a crash in a later stage does not retrain)."""
    if a.resume and up_to_date(done_marker, inputs):
        print(f"resume: keeping {rel(done_marker)}", flush=True)
        return read_json(done_marker) if done_marker.suffix == ".json" else None
    return fn(*fargs, **kwargs)


def main(argv=None):
    from . import export as ex
    from .evaluate import SPLITS
    from . import train_biencoder as tb
    from . import train_crossencoder as tc

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kb-dir", type=Path, default=WORK_DIR / "kb")
    ap.add_argument("--corpus", required=True, help="evaluation PubTator file (NCBI-disease train; --split tune is read)")
    ap.add_argument("--split", choices=SPLITS, default="tune",
                    help="the part of --corpus every ship decision is judged on (default tune: never choose on dev)")
    ap.add_argument("--out", type=Path, default=MODELS_DIR / "default")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bi-minutes", type=float, default=30)
    ap.add_argument("--bi-steps", type=int, default=4000, help="step cap; --bi-minutes is normally what ends the run")
    # Defaults from the ablation of models/default/MODEL_CARD.md (judged on dev, before the pipeline
    # judged on the tune split; nothing shipped depends on them: the shipped bi-encoder is the untrained
    # base): near-neighbour hard-negative batches lowered dev accuracy in short runs (MEDIC/HPO/MONDO near-duplicates that were not merged become
    # false negatives), so the default recipe is synonym pairs with online pair mining only.
    ap.add_argument("--graph-share", type=float, default=0.0, help="share of child/parent pairs per batch")
    ap.add_argument("--hard-share", type=float, default=0.0, help="share of batch concepts followed by near neighbours")
    ap.add_argument("--ce-minutes", type=float, default=25)
    ap.add_argument("--ce-steps", type=int, default=4000, help="step cap (also capped by queries / batch)")
    ap.add_argument("--ce-queries", type=int, default=24000, help="synthetic queries mined for the cross-encoder")
    ap.add_argument("--rerank-top", type=int, default=5,
                    help="candidates the cross-encoder reranks (its cost is linear in them); shipped in its manifest")
    ap.add_argument("--pubtator", help="fine-tune: annotated PubTator mentions as extra synonyms (opt-in)")
    ap.add_argument("--pubtator-split", choices=["learn", "all"], default="learn",
                    help="fine-tune on the learn part of --pubtator's tuning split (default) or on all of it")
    ap.add_argument("--init-bi", help="fine-tune: start the bi-encoder from this checkpoint")
    ap.add_argument("--skip-ce", action="store_true")
    ap.add_argument("--ablation-steps", type=int, default=40, help="steps of each short ablation run (0: none)")
    ap.add_argument("--ablation-only", action="store_true",
                    help="only the ablation runs (e.g. in a second process with --threads 1 while the main run trains)")
    ap.add_argument("--resume", action="store_true", help="keep the outputs of stages that already finished in work/")
    ap.add_argument("--bi-lr", type=float, default=5e-5)
    ap.add_argument("--bi-pairs", type=int, default=64)
    ap.add_argument("--fixtures", action="store_true", help="write tests/fixtures/reference_*.json (default output only)")
    a = ap.parse_args(argv)
    a.kb_dir = Path(a.kb_dir)
    if a.pubtator:
        refuse_leaky_finetune(a)
    t0 = time.time()
    work = WORK_DIR / ("finetune" if a.pubtator else "pipeline")
    work.mkdir(parents=True, exist_ok=True)
    kbs = kb_args(a.kb_dir, ["medic", "doid", "hpo", "mondo"])
    res: dict = {}
    if a.ablation_only:
        # a second process beside the main run (its neighbour table is reused once written; the
        # bi-encoder writes one only for hard negatives, --hard-share > 0)
        while not (work / "eval-base.json").exists() or (a.hard_share > 0 and not (work / "nb.npy").exists()):
            time.sleep(20)
        res["base"] = read_json(work / "eval-base.json")
        ablation(a, kbs, work, res)
        return

    # baselines: untrained base bi-encoder and lexical
    base_dir = work / "export-base"
    resumable(a, base_dir / "manifest.json", ex.export_model, "bi-encoder", "base", base_dir, BASE_ID, fixture=work / "reference_base.json")
    res["base"] = evaluate(base_dir, a, work / "eval-base.json", lexical=True)

    # bi-encoder
    bi_run = work / "runs-bi"
    targs = kbs + ["--out", str(bi_run), "--steps", str(a.bi_steps), "--minutes", str(a.bi_minutes), "--graph-share", str(a.graph_share),
                   "--hard-share", str(a.hard_share), "--lr", str(a.bi_lr), "--pairs", str(a.bi_pairs), "--threads", str(a.threads), "--device", a.device, "--neighbours-cache", str(work / "nb.npy")]
    if a.init_bi:
        targs += ["--init", a.init_bi]
    if a.pubtator:
        targs += ["--pubtator", a.pubtator, "--pubtator-split", a.pubtator_split]
    bi_info = resumable(a, bi_run / "training.json", tb.train, tb.parser().parse_args(targs))
    bi_dir = work / "export-bi"
    resumable(a, bi_dir / "manifest.json", ex.export_model, "bi-encoder", str(bi_run / "final"), bi_dir, BI_ID, training=bi_info,
              fixture=work / "reference_bi.json", inputs=[bi_run / "training.json"])
    res["bi"] = evaluate(bi_dir, a, work / "eval-bi.json")

    base_acc = res["base"]["exact+dense"]["acc@1"]
    bi_acc = res["bi"]["exact+dense"]["acc@1"]
    ship_trained_bi = bi_acc > base_acc
    chosen_bi = bi_dir if ship_trained_bi else base_dir

    # cross-encoder
    ce_info = None
    if not a.skip_ce:
        ce_run = work / "runs-ce"
        cargs = ["--dict", str(a.kb_dir / "medic.jsonl")] + kbs + ["--biencoder", str(chosen_bi), "--out", str(ce_run),
                 "--steps", str(a.ce_steps), "--minutes", str(a.ce_minutes), "--queries", str(a.ce_queries), "--threads", str(a.threads), "--device", a.device]
        ce_info = resumable(a, ce_run / "training.json", tc.train, tc.parser().parse_args(cargs), inputs=[chosen_bi / "manifest.json"])
        ce_dir = work / "export-ce"
        resumable(a, ce_dir / "manifest.json", ex.export_model, "cross-encoder", str(ce_run / "final"), ce_dir, CE_ID,
                  max_length=CE_MAX_LENGTH, training=ce_info, fixture=work / "reference_crossencoder.json", inputs=[ce_run / "training.json"], **CE_QUERY)
        res["reranked"] = evaluate(chosen_bi, a, work / "eval-rerank.json", rerank=ce_dir)
    # judged with the linker's default policy (src/link/link-config.ts: ambiguous, margin 0.05) and
    # the cross-encoder weight that does best on the evaluation split; the manifest records it
    # (metrics.chosenRerank) and the linker never reads it: its defaults live in link-config.ts
    sweep = res["reranked"]["weightSweep"] if ce_info is not None else None
    ship_ce = sweep is not None and sweep["chosen"]["acc@1"] > res["reranked"]["exact+dense"]["acc@1"]

    # ship
    out = Path(a.out)
    corpus_name = Path(a.corpus).name if a.split == "all" else f"{Path(a.corpus).name} ({a.split} split)"
    bi_metrics = {
        "corpus": corpus_name, "dictionary": "MEDIC (CTD_diseases.tsv.gz)", "protocol": "shared/data/README.md, exact match first, int8 ONNX",
        "acc@1": res["bi" if ship_trained_bi else "base"]["exact+dense"]["acc@1"], "acc@5": res["bi" if ship_trained_bi else "base"]["exact+dense"]["acc@5"],
        "untrainedBase": res["base"]["exact+dense"], "lexicalBaseline": res["base"]["lexical"],
        "mentionsPerSecondInt8_2threads": res["bi" if ship_trained_bi else "base"]["mentionsPerSecond"],
    }
    fx = MODELS_DIR / "tests" / "fixtures" if a.fixtures else None
    ship(chosen_bi, out / "biencoder", bi_metrics, work / ("reference_bi.json" if ship_trained_bi else "reference_base.json"),
         fx / "reference_biencoder.json" if fx else None)
    if ship_ce:
        ce_metrics = {"corpus": corpus_name, "rerankTop": a.rerank_top, "withBiEncoder": res["reranked"]["exact+dense"],
                      "reranked": sweep["chosen"], "byWeight": sweep["byWeight"],
                      "note": "exact-string matches are kept first, not reranked; policy ambiguous, margin 0.05"}
        link_defaults = {"policy": "ambiguous", "candidates": a.rerank_top, "margin": sweep["margin"], "weight": sweep["chosenWeight"]}
        ship(ce_dir, out / "crossencoder", ce_metrics, work / "reference_crossencoder.json",
             fx / "reference_crossencoder.json" if fx else None, rerank=link_defaults)
    elif (out / "crossencoder").exists():
        # Kept, as the module says: a skipped or losing cross-encoder run leaves the shipped one
        # (the context reranker's training and the shipped calibration start from it).
        print(f"cross-encoder: keeping {rel(out / 'crossencoder')}", flush=True)
    summary = {
        "results": res, "shippedTrainedBiEncoder": ship_trained_bi, "shippedCrossEncoder": ship_ce,
        "biTraining": bi_info, "ceTraining": ce_info, "totalSeconds": round(time.time() - t0),
        "machine": machine_description(a.threads, a.device), "rerankTop": a.rerank_top,
        "evaluation": summary_evaluation(a),
    }
    write_json(work / "summary.json", summary)
    from .model_card import write_card

    write_card(out, summary)
    print(f"shipped in {time.time() - t0:.0f}s -> {rel(out)}", flush=True)
    if a.ablation_steps > 0 and not a.pubtator:
        ablation(a, kbs, work, res)
        write_card(out, summary)
    print(f"pipeline done in {time.time() - t0:.0f}s -> {rel(out)}", flush=True)


def ship(src: Path, dst: Path, metrics: dict, fixture_src: Path, fixture_dst: Path | None, rerank: dict | None = None) -> None:
    """Copies an evaluated export into place and records its metrics (and, for a cross-encoder, the
    rerank settings it was chosen with, under metrics.chosenRerank: docs/model-directory.md).
    The sha256 map stays valid: it covers the ONNX and tokenizer files, copied byte for byte."""
    from .common import sha256_file

    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    m = read_json(dst / "manifest.json")
    m["metrics"] = metrics
    if rerank is not None:
        # Recorded, not read: the linker's rerank defaults live in one place, src/link/link-config.ts
        # (a manifest `rerank` block is refused), re-chosen for a retrained model with the whole
        # linker on the tune split (bench:accuracy --sweep), not copied from here.
        m["metrics"]["chosenRerank"] = rerank
    for name, digest in m["sha256"].items():
        if sha256_file(dst / name) != digest:
            raise RuntimeError(f"{dst / name}: checksum differs from the manifest after copying")
    write_json(dst / "manifest.json", m)
    if fixture_dst is not None:
        ref = read_json(fixture_src)
        ref["modelDir"] = rel(dst)
        write_json(fixture_dst, ref)


def ablation(a, kbs, work: Path, res: dict) -> None:
    """Short runs from the base weights, equal step counts, one ingredient changed at a time.
    Evaluated with dense ranking over MEDIC preferred names only (exact match still over all
    names): encoding all 78k names once per variant does not fit the time on a busy 2-core box."""
    from . import export as ex
    from . import train_biencoder as tb

    variants = [
        ("synonym pairs only (MS loss + online pair mining) = default recipe", {"--graph-share": "0", "--hard-share": "0"}),
        ("synonyms + near-neighbour hard-negative batches (50%)", {"--graph-share": "0", "--hard-share": "0.5"}),
        ("synonyms + hard-negative batches + child/parent graph pairs (10%)", {"--graph-share": "0.1", "--hard-share": "0.5"}),
        ("synonyms + child/parent graph pairs (10%), no hard-negative batches", {"--graph-share": "0.1", "--hard-share": "0"}),
    ]
    abl = work / "ablation"
    rows = [["untrained base", evaluate(work / "export-base", a, abl / "base-eval.json", preferred_only=True)["exact+dense"]]]
    note = (f"Each variant trained for {a.ablation_steps} steps of {a.bi_pairs} pairs from the base weights (same seed, lr "
            f"{a.bi_lr}, {a.threads} thread(s)), exported to int8 ONNX and evaluated on {evaluation_label(summary_evaluation(a))}: exact match over all MEDIC "
            "names first, then dense ranking over the 11,865 MEDIC **preferred names only** (cheaper than the main protocol, "
            "so the numbers are lower than the main table's). Short runs: they show the direction of each ingredient early in "
            "training, not its effect at full length.")
    for i, (name, opts) in enumerate(variants):
        run = abl / f"v{i}"
        targs = kbs + ["--out", str(run), "--steps", str(a.ablation_steps), "--threads", str(a.threads), "--device", a.device,
                       "--lr", str(a.bi_lr), "--pairs", str(a.bi_pairs),
                       "--neighbours-cache", str(work / "nb.npy")]
        for k, v in opts.items():
            targs += [k, v]
        resumable(a, run / "training.json", tb.train, tb.parser().parse_args(targs))
        exp = abl / f"v{i}-export"
        resumable(a, exp / "manifest.json", ex.export_model, "bi-encoder", str(run / "final"), exp, f"ablation-v{i}")
        rows.append([name, evaluate(exp, a, abl / f"v{i}-eval.json", preferred_only=True)["exact+dense"]])
        write_json(WORK_DIR / "ablation.json", {"note": note, "rows": rows})
    if (work / "export-bi" / "manifest.json").exists():
        r = evaluate(work / "export-bi", a, abl / "main-eval.json", preferred_only=True)
        rows.append([f"the full bi-encoder run ({read_json(work / 'runs-bi' / 'training.json')['hyperparameters']['steps']} steps, same recipe)",
                     r["exact+dense"]])
        write_json(WORK_DIR / "ablation.json", {"note": note, "rows": rows})


def summary_evaluation(a) -> dict:
    return {"corpus": Path(a.corpus).name, "split": a.split}


def machine_description(threads: int, device: str) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    gpu = torch.cuda.get_device_name(0) if device.startswith("cuda") and torch.cuda.is_available() else "no GPU used"
    return f"{cpu}, {threads} torch threads, device {device} ({gpu}), torch {torch.__version__}, Python {platform.python_version()}"


if __name__ == "__main__":
    main()
