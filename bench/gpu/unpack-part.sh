#!/usr/bin/env bash
# On the borrowed machine: unpacks one part of bench/gpu/pack-parts.sh into /opt/cuilink-gpu, outside
# the repository copy (which each call syncs), and lists what is there so far.
#   bash bench/gpu/unpack-part.sh a|b|c|d
set -euo pipefail
root=${CUILINK_GPU_ROOT:-/opt/cuilink-gpu}
mkdir -p "$root/lib" "$root/models" "$root/bin"
case $1 in
  a) xz -dc .gpu/a/libonnxruntime_providers_cuda.so.xz > "$root/lib/libonnxruntime_providers_cuda.so"
     xz -dc .gpu/a/libonnxruntime.so.1.xz > "$root/lib/libonnxruntime.so.1"
     cp .gpu/a/libonnxruntime_providers_shared.so "$root/lib/" ;;
  b) xz -dc .gpu/b/node.xz > "$root/bin/node" && chmod +x "$root/bin/node"
     xz -dc .gpu/b/node_modules.tar.xz | tar -C "$root" -xf -
     tar -C "$root" -xf .gpu/b/shared-data.tar ;;
  c) xz -dc .gpu/c/biencoder.model.fp16.onnx.xz > "$root/models/biencoder.model.fp16.onnx" ;;
  d) xz -dc .gpu/d/crossencoder.model.fp16.onnx.xz > "$root/models/crossencoder.model.fp16.onnx" ;;
  *) echo "unpack-part: a, b, c or d" >&2; exit 2 ;;
esac
du -sh "$root"/* 2>/dev/null
