#!/usr/bin/env bash
# The combined real En–Fr corpus for the scaling runs: Multi30k train + Tatoeba fra-eng + the Europarl
# excerpt (~216k pairs), 1,000 dev + 1,000 test pairs held out (seed 13; no dev/test sentence in train).
#   recipes/scaling/combine.sh OUT_DIR [nmt-combine-enfr flags, e.g. --seed N --dev-size N]
# Writes OUT_DIR/{train,dev,test}.{en,fr} (raw text) and OUT_DIR/combine.json; the data stays outside the
# repository. Reruns reuse a finished OUT_DIR.
source "$(dirname "$0")/../lib/common.sh"
[ $# -ge 1 ] || { echo "usage: recipes/scaling/combine.sh OUT_DIR [flags]" >&2; exit 2; }
out=$1
shift
run_step combine "$out/combine.json" -- "$py" -m nmt.cli.combine --out-dir "$out" --data "$MT_DATA" "$@"
