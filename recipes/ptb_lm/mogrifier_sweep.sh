#!/usr/bin/env bash
# Mogrifier rounds sweep on PTB at small scale (Melis et al. 2020, Fig./Table of r): r = 0 (exactly
# the LSTM), 2, 4, 6 at d = 128 in our stream regime (20 rows x 35 tokens, our choice: the Mogrifier
# paper uses BPTT 70, batch 64; Adam beta1 = 0, lr 0.002, clip 10), plus the LSTM widened to the
# r = 5 Mogrifier's parameter count (hidden 135), all for --epochs (default 2) epochs; one table of
# valid/test perplexity (stream and sentence-level).
#   recipes/ptb_lm/mogrifier_sweep.sh [--epochs N] [--threads N] [--work DIR]
source "$(dirname "$0")/../lib/common.sh"
epochs=2
threads=${THREADS:-2}
work=$root/work/ptb_mogrifier_sweep
while [ $# -gt 0 ]; do
  case "$1" in
    --epochs) epochs=$2; shift ;;
    --threads) threads=$2; shift ;;
    --work) work=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
exec "$here/run.sh" --no-kenlm --epochs "$epochs" --threads "$threads" --work "$work" \
  --models "mogrifier-r0 mogrifier-r2 mogrifier-r4 mogrifier-r6 lstm-1x135-stream"
