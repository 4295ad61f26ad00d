#!/usr/bin/env bash
# The training step of bench/results/context-student-many-queries-record.txt, on a borrowed GPU: three
# students trained at once from one untrained student (an --init-only run), each with its own setting.
# The one kept is the best held-out agreement with the teacher (same top-1, then Pearson r, from each
# training.json), never the tune split: its trained weights stay in $OUT/<setting>/ (<= 15 MiB shards:
# what comes back from such a machine, 64 MiB in all, so the others' are dropped); every setting's
# record and log go to $OUT/records.tgz, the choice to runs/chosen.txt in it.
#   bash models/distill-context-student-gpu.sh PAIRS.jsonl.gz INIT/final MINUTES ['NAME:FLAGS' ...]
# (python3 with torch; DEVICE=cpu for a dry run). Without settings: the three of the record's first run.
set -euo pipefail
pairs=$(realpath "$1") init=$(realpath "$2") minutes=$3
out=$(realpath -m "${OUT:?set OUT to the folder that receives the trained weights}")  # resolved before the cd below
mkdir -p /tmp/runs
cd "$(dirname "$0")"
run() {
  local name=$1
  shift
  PYTHONUNBUFFERED=1 python3 -m cuilink_models.distill_crossencoder --teacher default/crossencoder-context \
    --pairs "$pairs" --init "$init" --out "/tmp/runs/$name" --trainable-out "$out/$name" --device "${DEVICE:-cuda}" \
    --threads 4 --epochs 1000 --minutes "$minutes" "$@" > "/tmp/runs/$name.log" 2>&1 || echo "setting $name failed" >> "/tmp/runs/$name.log"
}
shift 3
[ $# -gt 0 ] || set -- "a:--top 3 --batch 32 --lr 1e-4" "b:--top 5 --batch 32 --lr 1e-4" "c:--top 3 --batch 64 --lr 2e-4"
names=()
for setting in "$@"; do
  names+=("${setting%%:*}")
  # shellcheck disable=SC2086 # the flags are words on purpose
  run "${setting%%:*}" ${setting#*:} &
done
wait
status=0
python3 - "$out" "${names[@]}" > /tmp/runs/chosen.txt <<'PY' || status=$?
import json, shutil, sys
from pathlib import Path
out = Path(sys.argv[1])
scores = {}
for name in sys.argv[2:]:
    record = Path("/tmp/runs") / name / "training.json"
    if record.exists() and (out / name).exists():
        after = json.loads(record.read_text())["heldOutAgreement"]["afterTraining"]
        scores[name] = (after["sameTop1"], after["pearson"])
if not scores:
    sys.exit("no setting finished: see /tmp/runs/*.log (in records.tgz)")
best = max(scores, key=scores.get)
for name in scores:
    if name != best:
        shutil.rmtree(out / name)
print(json.dumps({"chosen": best, "heldOut(sameTop1, pearson)": scores}))
PY
cat /tmp/runs/chosen.txt
tar -C /tmp -czf "$out/records.tgz" runs
tail -n 4 /tmp/runs/*.log
exit "$status"
