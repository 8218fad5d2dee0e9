#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: a virtual environment in .venv with the
# CPU build of torch and this package, the optional fairseq extra (nmt/fairseq_plugin),
# then KenLM's lmplz/build_binary and the decoder's search core.
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
# The fairseq extra (pyproject.toml, docs/scale_out.md), so that tests/nmt/fairseq_plugin/test_fairseq_plugin.py runs
# instead of skipping. Not `pip install .[fairseq]`: fairseq-fixed declares torchaudio, which would
# replace our CPU torch by a CUDA build; so its run-time dependencies first, then fairseq-fixed itself
# with --no-deps --no-build-isolation (it compiles C++/Cython extensions against the installed torch:
# a few minutes the first time on a machine, then pip's wheel cache makes it seconds).
# A failure stops the set-up: CI must not quietly skip the plugin's tests.
fairseq_stamp="$VENV/.fairseq-installed"
if [ ! -f "$fairseq_stamp" ] || [ pyproject.toml -nt "$fairseq_stamp" ]; then
  fail_fairseq() {
    echo "ERROR: installing the fairseq extra failed ($1); see docs/scale_out.md, 'Installing the optional extra'" >&2
    exit 1
  }
  echo "== set-up: fairseq extra (fairseq-fixed, built without dependencies against the CPU torch)"
  t0=$(date +%s)
  torch_before=$("$VENV/bin/python" -c "import torch; print(torch.__version__)") || fail_fairseq "torch not importable"
  # the extra's list, read from pyproject.toml: fairseq-fixed apart, the rest are its run-time dependencies
  deps_txt=$("$VENV/bin/python" - <<'PY'
import tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["fairseq"]
fairseq = [r for r in extra if r.startswith("fairseq-fixed")]
assert len(fairseq) == 1, extra
print(fairseq[0])
print(*[r for r in extra if not r.startswith("fairseq-fixed")], sep="\n")
PY
  ) || fail_fairseq "cannot read the extra 'fairseq' from pyproject.toml"
  mapfile -t deps <<< "$deps_txt"
  fairseq_req=${deps[0]}
  "$VENV/bin/pip" install -q "${deps[@]:1}" || fail_fairseq "its run-time dependencies"
  "$VENV/bin/pip" install -q --no-deps --no-build-isolation "$fairseq_req" || fail_fairseq "$fairseq_req"
  torch_after=$("$VENV/bin/python" -c "import torch; print(torch.__version__)")
  [ "$torch_after" = "$torch_before" ] || fail_fairseq "torch changed from $torch_before to $torch_after"
  # the compiled parts the plugin's tests use (data pipeline, BLEU of fairseq-generate), and the plugin
  "$VENV/bin/python" -c "import fairseq.models, fairseq.data.data_utils_fast, fairseq.data.token_block_utils_fast, fairseq.libbleu, nmt.fairseq_plugin" \
    2> "$VENV/.fairseq-import.log" || { cat "$VENV/.fairseq-import.log" >&2; fail_fairseq "import fairseq / nmt.fairseq_plugin"; }
  touch "$fairseq_stamp"
  echo "== set-up: fairseq extra installed in $(( $(date +%s) - t0 )) s (torch still $torch_after)"
fi
# bytecode of this package's own modules: pip compiles what it installs, but not the sources of an editable
# install, and where PYTHONDONTWRITEBYTECODE is set (as on some CI machines) every process would compile them again
# (0.1-0.15 s a process on a 2-core AMD EPYC; the recipes start hundreds). Up-to-date files are skipped.
"$VENV/bin/python" -m compileall -q nmt smt_features >/dev/null
if [ -f third_party/build_kenlm.sh ]; then
  bash third_party/build_kenlm.sh
fi
# the compiled search core of smt-decode (identical results, ~10x faster); without it the
# decoder falls back to its Python search, so a failed build warns instead of stopping the set-up
if [ -f third_party/build_search.sh ]; then
  bash third_party/build_search.sh || echo "WARNING: compiled search core not built (see above); smt-decode will use its Python search" >&2
fi
# MERT's compiled line search (smt-tune; identical weights, several times faster); without it MERT
# runs the numpy line search it reproduces, so a failed build warns instead of stopping the set-up
if [ -f third_party/build_mert.sh ]; then
  bash third_party/build_mert.sh || echo "WARNING: compiled MERT kernel not built (see above); smt-tune will use the numpy line search" >&2
fi
# Debian's Chromium and its WebDriver for the browser tests (smt-serve's web page, the report's screenshot): the
# tests start /usr/bin/chromium through chromedriver with selenium (the dev extra); nothing is downloaded when they
# run. Root and apt-get install them (skipped when both are there); without them the tests skip, and fail under CI.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== set-up: chromium + chromium-driver (apt-get), for the browser tests"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium chromium-driver fonts-dejavu-core >/dev/null
  else
    echo "WARNING: chromium / chromedriver missing and no root apt-get: the browser tests will skip (fail with CI set);" \
         "install them: apt-get install chromium chromium-driver" >&2
  fi
fi
