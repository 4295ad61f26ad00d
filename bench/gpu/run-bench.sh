#!/usr/bin/env bash
# On the borrowed machine, after unpack-part.sh a b c d: puts the unpacked parts in place and runs
# bench:gpu (bench/link.bench.ts --provider cuda: fp16 on CUDA) or bench/gpu/parallel-linkers.ts,
# everything under $OUT.
#   bash bench/gpu/run-bench.sh link|parallel [flags...]
set -uo pipefail
root=${CUILINK_GPU_ROOT:-/opt/cuilink-gpu}
out=${OUT:?set OUT}
export PATH="$root/bin:$PATH"
ln -sfn "$root/node_modules" node_modules
ort=node_modules/onnxruntime-node/bin/napi-v6/linux/x64
cp "$root"/lib/* "$ort/"
for model in biencoder crossencoder; do
  [ -f "$root/models/$model.model.fp16.onnx" ] && ln -sf "$root/models/$model.model.fp16.onnx" "models/default/$model/model.fp16.onnx"
done
# The CUDA 13 / cuDNN 9 libraries the provider links against, wherever the image keeps them.
libdirs=$(find / -xdev \( -name libcublasLt.so.13 -o -name libcudart.so.13 -o -name libcudnn.so.9 -o -name libcufft.so.12 \
  -o -name libcurand.so.10 -o -name libcublas.so.13 \) -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export LD_LIBRARY_PATH="${libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; node -v; } 2>&1 | tee "$out/machine.txt"
node scripts/gpu/install-cuda-provider.mjs --check 2>&1 | tee -a "$out/machine.txt"
data=$root/shared/data
kb=(--kb "$data/medic/CTD_diseases.tsv.gz" --kb-supplement "$data/medic/medic_06Jul2012.txt.gz" --xref-names "$data/doid/doid.obo.gz,$data/hpo/hp.json.gz")
corpora=(--corpus "$data/ncbi-disease/NCBIdevelopset_corpus.txt" --train "$data/ncbi-disease/NCBItrainset_corpus.txt")
mode=${1:?link or parallel}
shift
case $mode in
  link) timeout "${BENCH_SECONDS:-520}" node --import tsx bench/link.bench.ts --provider "${BENCH_PROVIDER:-cuda}" "${kb[@]}" "${corpora[@]}" \
          --out "$out/link-gpu.json" "$@" 2>&1 | tee "$out/bench.log" ;;
  parallel)
    index=/tmp/cuilink-gpu-index
    [ -f "$index/manifest.json" ] || node bin/cuilink.js index build "${kb[@]:0:4}" --xref-names "$data/doid/doid.obo.gz" --xref-names "$data/hpo/hp.json.gz" --out "$index" --force --no-progress --provider "${BENCH_PROVIDER:-cuda}" || exit 1
    timeout "${BENCH_SECONDS:-520}" node --import tsx bench/gpu/parallel-linkers.ts --index "$index" --provider "${BENCH_PROVIDER:-cuda}" "${corpora[@]}" \
      --out "$out/parallel-linkers.json" "$@" 2>&1 | grep -v 'onnxruntime\|^cuilink:' | tee "$out/parallel.log" ;;
  *) echo "run-bench: link or parallel" >&2; exit 2 ;;
esac
