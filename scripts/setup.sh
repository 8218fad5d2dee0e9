#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: a virtual environment in .venv with the
# CPU build of torch and this package, then KenLM's lmplz/build_binary and the decoder's search core.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
stamp="$VENV/.rnnsmt-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
  # torch first, pinned to the CPU wheel: an open range would pull a CUDA build of several GB
  "$VENV/bin/pip" install -q "torch==2.13.0"
  "$VENV/bin/pip" install -q -e ".[dev]"
  touch "$stamp"
fi
if [ -f third_party/build_kenlm.sh ]; then
  bash third_party/build_kenlm.sh
fi
# the compiled search core of smt-decode (identical results, ~10x faster); without it the
# decoder falls back to its Python search, so a failed build warns instead of stopping the set-up
if [ -f third_party/build_search.sh ]; then
  bash third_party/build_search.sh || echo "WARNING: compiled search core not built (see above); smt-decode will use its Python search" >&2
fi
