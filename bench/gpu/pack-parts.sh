#!/usr/bin/env bash
# Packs what bench:gpu needs on a borrowed GPU machine that reaches no registry, in parts that each
# fit one device call (64 MiB with the working tree): .gpu/{a,b,c,d}/. Run from the repository root
# after npm ci, with ../shared/data present. The fp16 model files must not travel in the tree
# itself (bench/gpu/README.md says how).
#   a: ONNX Runtime's CUDA provider (sm_90 code only, bench/gpu/prune-fatbin.py) + onnxruntime core
#   b: this machine's node binary + node_modules (no CPU-only dev tools) + the benchmark's data
#   c: the bi-encoder's fp16 file      d: the cross-encoder's fp16 file
set -euo pipefail
provider=${PROVIDER_TGZ:-}
rm -rf .gpu && mkdir -p .gpu/a .gpu/b .gpu/c .gpu/d /tmp/cuilink-gpu-pack
if [ -z "$provider" ]; then
  (cd /tmp/cuilink-gpu-pack && npm pack --silent com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9 >/dev/null)
  provider=/tmp/cuilink-gpu-pack/com.github.asus4.onnxruntime.linux-x64-gpu-0.4.9.tgz
fi
tar -C /tmp/cuilink-gpu-pack -xzf "$provider" package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so package/Plugins/Linux/x64/libonnxruntime_providers_shared.so
lib=/tmp/cuilink-gpu-pack/package/Plugins/Linux/x64
python3 bench/gpu/prune-fatbin.py "$lib/libonnxruntime_providers_cuda.so" /tmp/cuilink-gpu-pack/cuda90.so 90
xz -T0 -9e -c /tmp/cuilink-gpu-pack/cuda90.so > .gpu/a/libonnxruntime_providers_cuda.so.xz
cp "$lib/libonnxruntime_providers_shared.so" .gpu/a/
ort=node_modules/onnxruntime-node/bin/napi-v6/linux/x64
xz -T0 -6 -c "$ort/libonnxruntime.so.1" > .gpu/a/libonnxruntime.so.1.xz
xz -T0 -9e -c "$(command -v node)" > .gpu/b/node.xz
tar -cf - --exclude="$ort/libonnxruntime.so.1" --exclude=node_modules/onnxruntime-node/bin/napi-v6/darwin \
  --exclude=node_modules/onnxruntime-node/bin/napi-v6/win32 --exclude=node_modules/onnxruntime-node/bin/napi-v6/linux/arm64 \
  --exclude=node_modules/typescript --exclude=node_modules/eslint --exclude=node_modules/@eslint \
  --exclude=node_modules/@typescript-eslint --exclude=node_modules/typescript-eslint --exclude=node_modules/.cache \
  node_modules | xz -T0 -6 > .gpu/b/node_modules.tar.xz
tar -C .. -cf .gpu/b/shared-data.tar shared/data/medic/CTD_diseases.tsv.gz shared/data/medic/medic_06Jul2012.txt.gz \
  shared/data/doid/doid.obo.gz shared/data/hpo/hp.json.gz shared/data/ncbi-disease/NCBIdevelopset_corpus.txt \
  shared/data/ncbi-disease/NCBItrainset_corpus.txt
xz -T0 -3 -c models/default/biencoder/model.fp16.onnx > .gpu/c/biencoder.model.fp16.onnx.xz
xz -T0 -3 -c models/default/crossencoder/model.fp16.onnx > .gpu/d/crossencoder.model.fp16.onnx.xz
du -b .gpu/* | sed 's/^/part bytes: /'
