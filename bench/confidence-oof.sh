#!/usr/bin/env bash
# The shipped confidence recipe scored out of fold on the learn part (bench/confidence-oof.ts; docs/confidence.md),
# with a memory of the tune part's gold for the memory-moved links, as bench/confidence-report.sh fits it.
# Writes bench/results/confidence-learn-oof.txt (with --test-runs A-B, fresh held-out runs for NIL:
# bench/results/confidence-learn-oof-runs-A-B.txt; --sweep adds their NIL curve over thresholds). Uses the bench index (npm run bench:link builds it).
set -euo pipefail
DATA=${CUILINK_DATA:-../shared/data}
TRAIN=$DATA/ncbi-disease/NCBItrainset_corpus.txt
INDEX=${CUILINK_BENCH_INDEX:-.cache/cuilink/bench/medic+medic_06Jul2012+xref-doid+xref-hp--cuilink-biencoder-minilm-base-untrained-b7485ac38070}
[ -d "$INDEX" ] || { echo "no bench index at $INDEX (npm run bench:link builds it)" >&2; exit 2; }
[ -f "$TRAIN" ] || { echo "no corpus at $TRAIN (set CUILINK_DATA)" >&2; exit 2; }
RESULT=bench/results/confidence-learn-oof.txt
ARGS=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --test-runs) [ -n "${2:-}" ] || { echo "--test-runs A-B" >&2; exit 2; }; RESULT=bench/results/confidence-learn-oof-runs-$2.txt; shift 2 ;;
    --sweep) shift ;;
    *) echo "usage: bench/confidence-oof.sh [--test-runs A-B] [--sweep]" >&2; exit 2 ;;
  esac
done
set -- "${ARGS[@]+"${ARGS[@]}"}"
MEMORY=$(mktemp -d)
trap 'rm -rf "$MEMORY"' EXIT
node --import tsx src/cli/main.ts memory add --memory "$MEMORY/tune" --corpus "$TRAIN" --split tune --index "$INDEX" --outside-kb > /dev/null 2> "$MEMORY/log" || { cat "$MEMORY/log" >&2; exit 1; }
{
  echo "\$ cuilink memory add --memory TUNE_MEMORY --corpus $TRAIN --split tune --index BENCH_INDEX --outside-kb"
  echo "\$ node --import tsx bench/confidence-oof.ts --index BENCH_INDEX --corpus $TRAIN --with-memory TUNE_MEMORY${*:+ $*}"
  node --import tsx bench/confidence-oof.ts --index "$INDEX" --corpus "$TRAIN" --with-memory "$MEMORY/tune" "$@" 2>&1
} > "$RESULT"
cat "$RESULT"
