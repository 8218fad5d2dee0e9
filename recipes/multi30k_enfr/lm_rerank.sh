#!/usr/bin/env bash
# The neural LM rows on Multi30k En→Fr (recipes/lib/lm_rerank.sh with this folder's config.yaml, the LMs on
# Multi30k French, the work folders of the earlier stages by default).
#   recipes/multi30k_enfr/lm_rerank.sh [--quick] [--smt-work DIR] [--rnn-work DIR] [--lm-work DIR] [--work DIR]
#                                      [other recipes/lib/lm_rerank.sh options]
source "$(dirname "$0")/../lib/common.sh"
quick=0
for a in "$@"; do [ "$a" = --quick ] && quick=1; done
quick_suffix
exec bash "$lib/lm_rerank.sh" --config "$here/config.yaml" --lm-corpus multi30k-fr \
  --smt-work "$root/work/multi30k_smt$suffix" --rnn-work "$root/work/multi30k_rnn$suffix" \
  --lm-work "$root/work/multi30k_fr_lm$suffix" --work "$root/work/multi30k_rerank$suffix" "$@"
