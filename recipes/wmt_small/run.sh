#!/usr/bin/env bash
# The paper's setting at toy scale: Europarl v7 excerpt (20,000 pairs) to train, newstest2012 to tune,
# newstest2013 to test; phrase-based baseline, +RNN and +RNN+WP (the encoder–decoder trained on the
# phrase table's unique pairs), each tuned with N MERT runs; BLEU / chrF (sacreBLEU on detokenized output
# against the unescaped, detokenized newstest references), mean ± sd, and the report.
#   recipes/wmt_small/run.sh [--quick] [--work DIR] [--mert-runs N] [--threads N]
# A thin wrapper: the generic experiment recipe (recipes/lib/experiment.sh) with this folder's config.yaml,
# whose `experiment` section names the data, sets and systems and whose other sections size each stage
# (smt: MERT on the first dev_lines = 1,000 of newstest2012's 3,003 sentences, LM/TM/distortion weights kept
# in range: without the ranges the first MERT iteration here picked a negative LM weight and the next decode
# produced word salad, dev BLEU 8.73 -> 0.20; phrase_vocab 15,000, the paper's: the excerpt has ~30k word types,
# so as in the paper some words stay unknown to the network and WP counts them).
# Outputs: WORK (default work/wmt_small[_quick]) /smt (baseline), /rnn (model, rescored table, MERT runs,
# scores.md), /report. Reruns reuse steps.
source "$(dirname "$0")/../lib/common.sh"
work=""
quick=0
for ((i = 1; i <= $#; i++)); do
  case "${!i}" in
    --work) j=$((i + 1)); work=${!j} ;;
    --quick) quick=1 ;;
  esac
done
[ -n "$work" ] || set -- "$@" --work "$root/work/wmt_small$([ $quick = 1 ] && echo _quick || true)"
exec bash "$lib/experiment.sh" "$here/config.yaml" "$@"
