"""Runs the repo's own exporter / evaluator unchanged, with two patches for this shared machine:
every torch and onnxruntime pool at 1 thread (the repo defaults to 2), and the evaluator's
name-vector cache under models/work/candidates/cache (so nothing is written outside that folder and no
earlier cached vectors are reused: both models encode the dictionary from scratch).

    python run.py export  --checkpoint DIR --out DIR --id ID [--pooling mean]   (= cuilink_models.export args)
    python run.py evaluate --dict ... --corpus ... --onnx DIR --out JSON         (= cuilink_models.evaluate args)
    python run.py speed DIR_A DIR_B ... --corpus ... [--rounds 5]              (mentions/s, interleaved rounds)
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE.parent / "work" / "candidates"
sys.path.insert(0, str(HERE.parent))  # models/
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import cuilink_models.common as common  # noqa: E402
import cuilink_models.evaluate as evaluate  # noqa: E402
import cuilink_models.export as export  # noqa: E402

THREADS = 1
_setup = common.setup_torch


def setup_torch_1(threads: int = THREADS, seed: int = 13):
    return _setup(THREADS, seed)


common.setup_torch = setup_torch_1
export.setup_torch = setup_torch_1
export.ort_session.__defaults__ = (THREADS,)
evaluate.OnnxModelDir.__init__.__defaults__ = ("int8", 64, THREADS)
common.WORK_DIR = WORK  # encode_cached imports WORK_DIR from .common at call time -> WORK/cache


def speed(argv):
    import argparse

    import numpy as np

    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    texts = [m.text for m in evaluate.read_pubtator(a.corpus)]
    encs = {d: evaluate.OnnxEncoder(d, "int8") for d in a.dirs}
    for e in encs.values():
        e.encode(texts[:64])  # warm-up
    rates = {d: [] for d in a.dirs}
    for _ in range(a.rounds):
        for d, e in encs.items():
            rates[d].append(evaluate.measure_speed(e, texts))
    res = {
        d: {"mentionsPerSecond_median": round(float(np.median(r)), 1), "rounds": [round(x, 1) for x in r], "threads": THREADS}
        for d, r in rates.items()
    }
    res["_protocol"] = f"{len(texts)} NCBI-disease dev mentions, int8, batch 64, 1 onnxruntime thread, {a.rounds} interleaved rounds, median"
    print(json.dumps(res, indent=1))
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    t = time.time()
    if cmd == "export":
        # the manifest's 'base' line names the repo's base; name the candidate's source instead
        if "--base-name" in rest:
            i = rest.index("--base-name")
            export.BASE_NAME, export.BASE_PACKAGE = rest[i + 1], rest[i + 2]
            del rest[i : i + 3]
        export.main(rest)
    elif cmd == "evaluate":
        evaluate.main(rest)
    elif cmd == "speed":
        speed(rest)
    else:
        raise SystemExit(__doc__)
    print(f"[run.py {cmd}] {time.time() - t:.1f}s", file=sys.stderr)
