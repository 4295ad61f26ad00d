#!/usr/bin/env bash
# Lay phrases against HPO (bench/lay-phrases.py): links 600 HPO layperson synonyms against HPO without them, with the
# shipped calibration and (optionally) another one, and counts what comes out NIL and how many of those NILs had a right
# top-1. Writes bench/results/lay-phrases.txt. Usage: bash bench/lay-phrases.sh [--previous GIT_REV] (also the
# calibration shipped at that revision, e.g. 14ce643, the last one without the non-entity part).
set -euo pipefail
DATA=${CUILINK_DATA:-../shared/data}
[ -f "$DATA/hpo/hp.json.gz" ] || { echo "no $DATA/hpo/hp.json.gz (set CUILINK_DATA)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cuilink() { node --import tsx src/cli/main.ts "$@"; }
OTHER=""
if [ "${1:-}" = "--previous" ]; then OTHER="$WORK/calibration-at-$2.json"; git show "$2:models/default/calibration.json" > "$OTHER"; fi
{
  echo "\$ python3 bench/lay-phrases.py $DATA/hpo/hp.json.gz WORK"
  python3 bench/lay-phrases.py "$DATA/hpo/hp.json.gz" "$WORK"
  echo "\$ cuilink index build --kb WORK/hp-nolay.json.gz --kb-format obograph --out WORK/index"
  cuilink index build --kb "$WORK/hp-nolay.json.gz" --kb-format obograph --out "$WORK/index" --no-progress 2>&1 | grep '^index build: [0-9]* concepts'
  for calibration in models/default/calibration.json ${OTHER:+"$OTHER"}; do
    echo "\$ cuilink eval --index WORK/index --corpus WORK/lay.PubTator --calibration $calibration --predictions P"
    cuilink eval --index "$WORK/index" --corpus "$WORK/lay.PubTator" --calibration "$calibration" --predictions "$WORK/p.jsonl" 2>&1 | grep -E '^overall|^confidence \(all'
    node -e '
      const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
      const nil = rows.filter((r) => r.nil), right = rows.filter((r) => r.scores.hit1);
      const linked = rows.filter((r) => !r.nil);
      console.log(`${rows.length} lay phrases (every concept in the KB, so no NIL is right): NIL ${nil.length}, of them ${nil.filter((r) => r.scores.hit1).length} with a right top-1 (of ${right.length} right top-1s); linked acc@1 ${(linked.filter((r) => r.scores.hit1).length / linked.length).toFixed(3)}`);
    ' "$WORK/p.jsonl"
  done
} | sed "s#$WORK#WORK#g" > bench/results/lay-phrases.txt
cat bench/results/lay-phrases.txt
