#!/usr/bin/env bash
# Reproduces cuilink's default encoders from ontologies alone (see models/README.md).
#
#   models/train.sh [--device cpu|cuda] [--threads N] [--bi-minutes M] [--ce-minutes M]
#                   [--finetune-pubtator FILE [--finetune-out DIR]] [--skip-install] [--resume]
#                   [--ablation-steps N]
#
# Default: writes models/default/{biencoder,crossencoder,MODEL_CARD.md}. With
# --finetune-pubtator the default bi-encoder checkpoint is trained further with the annotated
# mentions of FILE and written to --finetune-out (default models/finetuned); models/default is
# never touched then.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DATA="$(realpath -m "${CUILINK_DATA:-$ROOT/../shared/data}")"  # resolved here: the script works in models/ below
DEVICE=cpu THREADS=2 BI_MIN=20 CE_MIN=45 FT="" FT_OUT="$HERE/finetuned" SKIP_INSTALL=0 EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --bi-minutes) BI_MIN="$2"; shift 2 ;;
    --ce-minutes) CE_MIN="$2"; shift 2 ;;
    --finetune-pubtator) FT="$(realpath "$2")"; shift 2 ;;
    --finetune-out) FT_OUT="$(realpath -m "$2")"; shift 2 ;;
    --skip-install) SKIP_INSTALL=1; shift ;;
    --resume) EXTRA+=(--resume); shift ;;
    --ablation-steps) EXTRA+=(--ablation-steps "$2"); shift 2 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if [ "$DEVICE" = cuda ]; then THREADS="${THREADS:-2}"; fi
if [ -n "$FT" ] && [ "$FT_OUT" = "$HERE/default" ]; then echo "refusing to overwrite models/default" >&2; exit 2; fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS="$THREADS"
cd "$HERE"
mkdir -p work/kb

# 1. venv with pinned requirements
if [ "$SKIP_INSTALL" = 0 ]; then bash "$HERE/install-venv.sh"; fi
PY="$HERE/.venv/bin/python"

# 2. concept JSONL via the TypeScript exporter (no ontology parsing in Python)
CUI="node $ROOT/bin/cuilink.js"
$CUI kb export --kb "$DATA/medic/CTD_diseases.tsv.gz" --out work/kb/medic.jsonl
$CUI kb export --kb "$DATA/doid/doid.obo.gz" --out work/kb/doid.jsonl
$CUI kb export --kb "$DATA/hpo/hp.json.gz" --out work/kb/hpo.jsonl
"$PY" -m cuilink_models.data --mondo-rare "$DATA/mondo/new-rare-diseases.tsv.gz" \
  --mondo-mesh-sssom "$DATA/mondo/mondo_exactmatch_mesh.sssom.tsv.gz" --out work/kb/mondo-rare.raw.jsonl
$CUI kb export --kb work/kb/mondo-rare.raw.jsonl --kb-format jsonl --out work/kb/mondo.jsonl

# Every ship decision is judged on the tune part of NCBI-disease train (src/eval/tuning-split.ts);
# dev is for reports (`cuilink eval`), never for choosing.
TRAIN="$DATA/ncbi-disease/NCBItrainset_corpus.txt"
if [ -z "$FT" ]; then
  # 3-7. baselines, bi-encoder, negatives, cross-encoder, export, evaluation, MODEL_CARD.md
  "$PY" -m cuilink_models.pipeline --corpus "$TRAIN" --split tune --out "$HERE/default" --device "$DEVICE" --threads "$THREADS" \
    --bi-minutes "$BI_MIN" --ce-minutes "$CE_MIN" --fixtures ${EXTRA[@]+"${EXTRA[@]}"}
  "$PY" -m pytest -q tests
else
  INIT="$HERE/work/pipeline/runs-bi/final"
  if [ ! -d "$INIT" ]; then
    echo "no default bi-encoder checkpoint in $INIT: run models/train.sh without --finetune-pubtator first" >&2; exit 2
  fi
  "$PY" -m cuilink_models.pipeline --corpus "$TRAIN" --split tune --out "$FT_OUT" --device "$DEVICE" --threads "$THREADS" \
    --bi-minutes "$BI_MIN" --ce-minutes "$CE_MIN" --pubtator "$FT" --init-bi "$INIT" ${EXTRA[@]+"${EXTRA[@]}"}
fi
