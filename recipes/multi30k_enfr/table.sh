#!/usr/bin/env bash
# The Multi30k En→Fr experiment table and its report (run.sh --table calls this): the generic experiment recipe
# (recipes/lib/experiment.sh, as recipes/experiment/run.sh) on recipes/experiment/multi30k.yaml: Baseline →
# +RNN, +RNN+WP → the neural LM rows → smt-report, each stage reusing its finished steps.
#   recipes/multi30k_enfr/table.sh [--quick] [--mert-runs N] [--threads N] [--work DIR] [--encdec DIR]
# WORK (default work/multi30k_table[_quick]) holds smt/, rnn/, lm/, rerank/ and report/; the wall time of
# every stage is printed and kept in WORK/wall_time.txt. Sizes: multi30k.yaml smt (--quick: smt_quick).
source "$(dirname "$0")/../lib/common.sh"
quick=0
for a in "$@"; do [ "$a" = --quick ] && quick=1; done
exec bash "$lib/experiment.sh" "$root/recipes/experiment/multi30k.yaml" \
  --work "$root/work/multi30k_table$([ $quick = 1 ] && echo _quick || true)" "$@"
