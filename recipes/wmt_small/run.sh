#!/usr/bin/env bash
# The paper's setting at toy scale: Europarl v7 excerpt (20,000 pairs) to train, newstest2012 to tune,
# newstest2013 to test; phrase-based baseline, +RNN and +RNN+WP (the encoder–decoder trained on the
# phrase table's unique pairs), each tuned with N MERT runs; BLEU / chrF (sacreBLEU on detokenized output
# against the unescaped, detokenized newstest references), mean ± sd.
#   recipes/wmt_small/run.sh [--quick] [--work DIR] [--mert-runs N] [--threads N] [--vocab K] [--dev-lines N]
#                            [--tune-flags "..."]
# SMT settings: config.yaml smt (--quick: smt_quick). MERT tunes on the first dev_lines (1000 of 3,003: a CPU
#   budget; --dev-lines overrides, 0 = all) sentences of newstest2012, keeps the LM, translation-model and
#   distortion weights >= 0 and every weight in [-1, 1] (Moses --range + clipping), 50-best lists, at most 6
#   iterations. Without the ranges the first MERT iteration here (BLEU ~9 on the 100-best pool) picked a
#   negative LM weight and the next decode produced word salad (dev BLEU 8.73 -> 0.20).
# --tune-flags: extra smt-tune flags (after the config's).
# --vocab: the phrase model's vocabulary per side (default: phrase_vocab, 10000; the excerpt has ~30k word
#   types, so as in the paper some words stay unknown to the network and WP counts them).
# The pipeline is recipes/lib/smt_baseline.sh → recipes/lib/rnn_rescore.sh with this folder's config.yaml.
# Outputs: WORK/smt (baseline), WORK/rnn (model, rescored table, MERT runs, scores.md). Reruns reuse steps.
source "$(dirname "$0")/../lib/common.sh"
quick=0
work=""
runs=3
threads=2
vocab=""
dev_lines=""
tune_flags=""
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --vocab) vocab=$2; shift ;;
    --dev-lines) dev_lines=$2; shift ;;
    --tune-flags) tune_flags=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
quick_suffix
work=$(abs_dir "${work:-$root/work/wmt_small$suffix}")
cfg=$here/config.yaml
qflag=$(quick_flag $quick)
start=$(date +%s)
bash "$lib/smt_baseline.sh" $qflag --work "$work/smt" --mert-runs "$runs" --threads "$threads" --config "$cfg" \
  ${dev_lines:+--dev-lines "$dev_lines"} ${tune_flags:+--tune-flags "$tune_flags"}
bash "$lib/rnn_rescore.sh" $qflag --config "$cfg" --smt-work "$work/smt" --work "$work/rnn" --mert-runs "$runs" \
  --threads "$threads" ${vocab:+--vocab "$vocab"} ${tune_flags:+--tune-flags "$tune_flags"}
echo "wmt_small: total $(( $(date +%s) - start )) s; table in $work/rnn/scores.md"
