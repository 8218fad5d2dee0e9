#!/usr/bin/env bash
# The paper's setting at toy scale: Europarl v7 excerpt (20,000 pairs) to train, newstest2012 to tune,
# newstest2013 to test; phrase-based baseline, +RNN and +RNN+WP (the encoder–decoder trained on the
# phrase table's unique pairs), each tuned with N MERT runs; BLEU / chrF (sacreBLEU on detokenized output
# against the unescaped, detokenized newstest references), mean ± sd.
#   recipes/wmt_small/run.sh [--quick] [--work DIR] [--mert-runs N] [--threads N] [--vocab K] [--dev-lines N]
# --dev-lines: MERT tunes on the first N sentences of newstest2012 (default 1000 of 3,003: a CPU budget;
#   0 = all).
# --tune-flags: smt-tune flags; default keeps the LM, translation-model and distortion weights >= 0 and every
#   weight in [-1, 1] (Moses --range + clipping), 50-best lists, at most 6 iterations. Without the ranges the
#   first MERT iteration here (BLEU ~9 on the 100-best pool) picked a negative LM weight and the next
#   decode produced word salad (dev BLEU 8.73 -> 0.20).
# --vocab: the phrase model's vocabulary per side (default 10000; the excerpt has ~30k word types, so as in
#   the paper some words stay unknown to the network and WP counts them).
# The pipeline is recipes/multi30k_enfr/{smt_baseline,rnn_rescore}.sh with this folder's config.yaml.
# Outputs: WORK/smt (baseline), WORK/rnn (model, rescored table, MERT runs, scores.md). Reruns reuse steps.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=0
work=""
runs=3
threads=2
vocab=10000
dev_lines=1000
tune_flags=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --work) work=$2; shift ;;
    --mert-runs) runs=$2; shift ;;
    --threads) threads=$2; shift ;;
    --vocab) vocab=$2; shift ;;
    --dev-lines) dev_lines=$2; shift ;;
    --tune-flags) tune_flags=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$tune_flags" ]; then  # the default; --quick keeps smt_baseline.sh's own n-best size and iterations
  tune_flags="--ranges LM0:0..1 TranslationModel0:0..1 Distortion0:0..1 --clip-to-ranges"
  [ $quick = 1 ] || tune_flags+=" --nbest 50 --max-iterations 6"
fi
suffix=$([ $quick = 1 ] && echo _quick || true)
work=${work:-$root/work/wmt_small$suffix}
mkdir -p "$work"
start=$(date +%s)
bash "$root/recipes/multi30k_enfr/rnn_rescore.sh" $([ $quick = 1 ] && echo --quick || true) \
  --config "$here/config.yaml" --dev newstest2012 --tests newstest2013 --smt-work "$work/smt" --work "$work/rnn" \
  --mert-runs "$runs" --threads "$threads" --vocab "$vocab" $([ "$dev_lines" != 0 ] && echo --dev-lines "$dev_lines") \
  --tune-flags "$tune_flags"
echo "wmt_small: total $(( $(date +%s) - start )) s; table in $work/rnn/scores.md"
