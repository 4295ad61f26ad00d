#!/usr/bin/env bash
# Part 2 of bench/results/base-weights-tune.txt: the whole linker on the tune split of NCBI-disease
# train with a candidate bi-encoder (default: the L3 export of models/candidates/run_all.sh) against
# the shipped one: each builds the MEDIC bench index of `npm run bench:link` (cached), then
# `cuilink eval --split tune` and `cuilink compare`. Run from the repository root after run_all.sh.
set -euo pipefail
CANDIDATE=${1:-models/work/candidates/export/paraphrase-minilm-l3-v2}
DATA=${CUILINK_DATA:-../shared/data}
TRAIN=$DATA/ncbi-disease/NCBItrainset_corpus.txt
[ -f "$CANDIDATE/manifest.json" ] || { echo "no bi-encoder at $CANDIDATE (models/candidates/run_all.sh exports it)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
index_for() { # model dir -> bench index dir (built once, cached under .cache/cuilink/bench)
  node --import tsx -e "
    const { ensureBenchIndex } = await import('./bench/bench-index.ts');
    const { MEDIC_KB, MEDIC_SUPPLEMENT, MEDIC_XREF_NAMES } = await import('./bench/medic-kb.ts');
    console.log(ensureBenchIndex({ kb: MEDIC_KB, supplements: [MEDIC_SUPPLEMENT], xrefNames: MEDIC_XREF_NAMES, modelDir: '$1', log: (l) => console.error(l) }).indexDir);"
}
cuilink() { node --import tsx src/cli/main.ts "$@"; }
SHIPPED_INDEX=$(index_for models/default/biencoder)
CANDIDATE_INDEX=$(index_for "$CANDIDATE")
cuilink eval --index "$SHIPPED_INDEX" --corpus "$TRAIN" --split tune --predictions "$OUT/tune-default.jsonl" > /dev/null 2>&1
cuilink eval --index "$CANDIDATE_INDEX" --model "$CANDIDATE" --corpus "$TRAIN" --split tune --predictions "$OUT/tune-candidate.jsonl" > /dev/null 2>&1
cuilink compare "$OUT/tune-default.jsonl" "$OUT/tune-candidate.jsonl" | sed "s#$OUT/##g"
