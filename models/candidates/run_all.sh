#!/bin/bash
# Candidate first, then the base, same command; then interleaved speed rounds. 1 thread, nice 19.
set -e
cd "$(dirname "$0")"
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
PY=../../.venv/bin/python
DICT=../kb/medic.jsonl
CORPUS=/work/shared/data/ncbi-disease/NCBIdevelopset_corpus.txt
for m in paraphrase-minilm-l3-v2 base-minilm-l6-v2; do
  nice -n 19 $PY run.py evaluate --dict $DICT --corpus $CORPUS --onnx export/$m --out eval-$m.json
done
nice -n 19 $PY run.py speed export/paraphrase-minilm-l3-v2 export/base-minilm-l6-v2 --corpus $CORPUS --rounds 5 --out speed.json
