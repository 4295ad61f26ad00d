#!/usr/bin/env bash
# Regenerates the shipped confidence calibration and its reports (issue 24; docs/confidence.md):
#   1. a memory of the tune part's gold (so that memory-decided links of the learn part have examples),
#   2. cuilink calibrate on the learn part -> models/default/calibration.json (+ bench/results/calibrate-learn.txt),
#   3. cuilink eval on the tune part (held out from the fit: the numbers the recipe and NIL threshold were chosen on)
#      and on the learn part (in-sample), each with its held-out-concept NIL run and reliability diagram.
# With --dev, also reads NCBI-disease dev once (report only: nothing is chosen on it).
# With --context, also refits the opt-in context reranker's calibration (logistic, on the tune part: that model
# was trained on the learn part) -> models/default/crossencoder-context/calibration.json, and its tune reports.
# (With the flags that reproduce that file since calibrate's defaults moved on: NIL on confidence, no non-entity part.)
# --context-only: that refit and its tune reports alone (the default's calibration and reports untouched).
# --reports-only: no refit; the reports of the shipped file as it is, on today's bench index (an index
# rebuilt since the fit moves a few links, so the fit itself is not reproduced byte for byte).
# Uses the bench index (npm run bench:link builds it). Run from the repository root.
set -euo pipefail
DATA=${CUILINK_DATA:-../shared/data}
TRAIN=$DATA/ncbi-disease/NCBItrainset_corpus.txt
DEV_CORPUS=$DATA/ncbi-disease/NCBIdevelopset_corpus.txt
INDEX=${CUILINK_BENCH_INDEX:-.cache/cuilink/bench/medic+medic_06Jul2012+xref-doid+xref-hp--cuilink-biencoder-minilm-base-untrained-b7485ac38070}
VERSION=${CALIBRATION_VERSION:-calibration-learn-20261126-trees-names-inkb-nonentity}
CONTEXT_VERSION=${CONTEXT_CALIBRATION_VERSION:-calibration-context-20261127-reduce-range}
OUT=bench/results
[ -d "$INDEX" ] || { echo "no bench index at $INDEX (npm run bench:link builds it)" >&2; exit 2; }
[ -f "$TRAIN" ] || { echo "no corpus at $TRAIN (set CUILINK_DATA)" >&2; exit 2; }
DEV=no CONTEXT=no DEFAULT=yes REFIT=yes
for arg in "$@"; do
  case $arg in
    --dev) DEV=yes ;;
    --context) CONTEXT=yes ;;
    --context-only) CONTEXT=yes DEFAULT=no ;;
    --reports-only) REFIT=no ;;
    *) echo "unknown option $arg (--dev, --context, --context-only, --reports-only)" >&2; exit 2 ;;
  esac
done
[ $REFIT = yes ] || [ $CONTEXT = no ] || { echo "--reports-only reads the default's shipped file: it does not go with --context" >&2; exit 2; }
[ $DEFAULT = yes ] || [ $DEV = no ] || { echo "--dev reads the default's calibration on dev: it does not go with --context-only" >&2; exit 2; }
cuilink() { node --import tsx src/cli/main.ts "$@"; }
# Progress lines and the models' load lines say nothing about the result.
quiet() { grep -v -e '^eval: linking mentions' -e '^cuilink: ' || true; }
MEMORY=$(mktemp -d)
trap 'rm -rf "$MEMORY"' EXIT
if [ $DEFAULT = yes ] && [ $REFIT = yes ]; then
cuilink memory add --memory "$MEMORY/tune" --corpus "$TRAIN" --split tune --index "$INDEX" --outside-kb > /dev/null 2> "$MEMORY/log" || { cat "$MEMORY/log" >&2; exit 1; }
{
  echo "\$ cuilink memory add --memory TUNE_MEMORY --corpus $TRAIN --split tune --index BENCH_INDEX --outside-kb"
  echo "\$ cuilink calibrate --index BENCH_INDEX --corpus $TRAIN --with-memory TUNE_MEMORY --out models/default/calibration.json --version $VERSION"
  cuilink calibrate --index "$INDEX" --corpus "$TRAIN" --with-memory "$MEMORY/tune" --out models/default/calibration.json --version "$VERSION" 2>&1 | quiet
} | sed "s#$MEMORY/tune#TUNE_MEMORY#g" > $OUT/calibrate-learn.txt
fi
if [ $DEFAULT = yes ]; then
report() { # name, corpus, extra eval flags...
  local name=$1 corpus=$2; shift 2
  { echo "\$ cuilink eval --index BENCH_INDEX --corpus $corpus $* --non-entities 2 --reliability $OUT/reliability-$name.svg --out $OUT/confidence-$name.json"
    cuilink eval --index "$INDEX" --corpus "$corpus" "$@" --non-entities 2 --reliability $OUT/reliability-$name.svg --out $OUT/confidence-$name.json 2>&1 | quiet; } > $OUT/confidence-$name.txt
  { echo "\$ cuilink eval --index BENCH_INDEX --corpus $corpus $* --hold-out 0.1"
    cuilink eval --index "$INDEX" --corpus "$corpus" "$@" --hold-out 0.1 2>&1 | quiet; } > $OUT/confidence-$name-holdout.txt
  grep -h '^confidence (all' $OUT/confidence-$name.txt
}
report tune "$TRAIN" --split tune
report learn "$TRAIN" --split learn
if [ $DEV = yes ]; then report dev "$DEV_CORPUS"; fi
fi
if [ $CONTEXT = yes ]; then
  CONTEXT_MODEL=models/default/crossencoder-context
  cuilink memory add --memory "$MEMORY/learn" --corpus "$TRAIN" --split learn --index "$INDEX" --outside-kb > /dev/null 2> "$MEMORY/log" || { cat "$MEMORY/log" >&2; exit 1; }
  {
    echo "\$ cuilink memory add --memory LEARN_MEMORY --corpus $TRAIN --split learn --index BENCH_INDEX --outside-kb"
    echo "\$ cuilink calibrate --index BENCH_INDEX --corpus $TRAIN --split tune --calibrator logistic --nil-rule confidence --non-entities 0 --reranker $CONTEXT_MODEL --with-memory LEARN_MEMORY --out $CONTEXT_MODEL/calibration.json --version $CONTEXT_VERSION"
    cuilink calibrate --index "$INDEX" --corpus "$TRAIN" --split tune --calibrator logistic --nil-rule confidence --non-entities 0 --reranker $CONTEXT_MODEL --with-memory "$MEMORY/learn" --out $CONTEXT_MODEL/calibration.json --version "$CONTEXT_VERSION" 2>&1 | quiet
  } | sed "s#$MEMORY/learn#LEARN_MEMORY#g" > $OUT/calibrate-context-tune.txt
  { echo "\$ cuilink eval --index BENCH_INDEX --corpus $TRAIN --split tune --reranker $CONTEXT_MODEL --out $OUT/confidence-context-tune.json"
    cuilink eval --index "$INDEX" --corpus "$TRAIN" --split tune --reranker $CONTEXT_MODEL --out $OUT/confidence-context-tune.json 2>&1 | quiet; } > $OUT/confidence-context-tune.txt
  { echo "\$ cuilink eval --index BENCH_INDEX --corpus $TRAIN --split tune --reranker $CONTEXT_MODEL --hold-out 0.1"
    cuilink eval --index "$INDEX" --corpus "$TRAIN" --split tune --reranker $CONTEXT_MODEL --hold-out 0.1 2>&1 | quiet; } > $OUT/confidence-context-tune-holdout.txt
  grep -h '^confidence (all' $OUT/confidence-context-tune.txt
fi
