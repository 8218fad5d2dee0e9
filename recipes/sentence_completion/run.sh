#!/usr/bin/env bash
# MSR Sentence Completion Challenge (Tran et al. 2016, §6): KenLM 5-gram, an LSTM and the paper's 69.2 %
# model -- a unidirectional RM(+tM-g) with three LSTM layers below the memory block and dropout 0.3
# (config.yaml:rm+tM-g-3x128, preset rm-paper-msr) -- trained on a subset of the Holmes corpus, each
# answering the 1,040 questions by the most probable sentence.
#   recipes/sentence_completion/run.sh [--quick] [--novels N] [--epochs N] [--models "lstm-1x128 rm+tM-g-3x128"]
#                                      [--threads N] [--work DIR]
# --quick: the archive's first 2 novels, 1 epoch on 1,000 sentences (a smoke test; the accuracy is then near chance, 20 %).
# Data: $MT_DATA/msr-sentence-completion (default ../shared/data beside the repository).
source "$(dirname "$0")/../lib/common.sh"
quick=0
novels=""
epochs=""
models="lstm-1x128 rm+tM-g-3x128"
threads=${THREADS:-2}
work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --novels) novels=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    --models) models=$2; shift ;;
    --threads) threads=$2; shift ;;
    --work) work=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
msr=$MT_DATA/msr-sentence-completion
for f in Holmes_Training_Data.tar.xz testing_data.csv test_answer.csv; do
  [ -f "$msr/$f" ] || { echo "missing $msr/$f (set MT_DATA)" >&2; exit 1; }
done
cfg=$here/config.yaml
suffix=$([ $quick = 1 ] && echo -quick || true)
work=${work:-$root/work/sentence_completion${suffix/-/_}}
section=prepare$suffix
novels=${novels:-$(config_value "$cfg:$section" novels)}
seed=$(config_value "$cfg:$section" seed)
draw=$(config_value "$cfg:$section" draw)
mkdir -p "$work"
start=$(date +%s)

echo "== Holmes subset: $novels novels ($([ "$draw" = first ] && echo "the archive's first" || echo "seed $seed"))"
[ -f "$work/text/novels.txt" ] && [ "$(wc -l < "$work/text/novels.txt")" = "$novels" ] || \
  "$py" "$here/prepare_holmes.py" --archive "$msr/Holmes_Training_Data.tar.xz" --novels "$novels" --seed "$seed" \
    --draw "$draw" --out-dir "$work/text"

echo "== KenLM 5-gram"
[ -f "$work/kenlm/holmes5.binary" ] || "$bin/smt-kenlm" train --text "$work/text/train.txt" \
  --out-prefix "$work/kenlm/holmes5" --order 5 $([ $quick = 1 ] && echo --discount-fallback)
model_flags=(--model "kenlm-5gram=$work/kenlm/holmes5.binary")

# the neural LMs trained one after the other, then the questions answered by every model, in one process
# (train_and_answer.py: torch starts once)
epoch_flag=()
[ -n "$epochs" ] && epoch_flag=(--max-epochs "$epochs")
"$py" "$here/train_and_answer.py" --config "$cfg" --suffix="$suffix" --work "$work" --models "$models" \
  --threads "$threads" --train-text "$work/text/train.txt" --valid-text "$work/text/valid.txt" \
  ${epoch_flag[@]+"${epoch_flag[@]}"} -- --questions "$msr/testing_data.csv" --answers "$msr/test_answer.csv" \
  --threads "$threads" "${model_flags[@]}" --json "$work/accuracy.json" --predictions "$work/predictions" \
  --summary "$work/accuracy.txt"
echo "training subset: $novels novels ($(wc -l < "$work/text/train.txt") sentences, listed in $work/text/novels.txt);" \
  "RMN paper (whole 41M-word corpus, unidirectional RM(+tM-g), 3 LSTM layers, dropout 0.3): 69.2 %"
end=$(date +%s)
echo "total $((end - start)) s; outputs in $work"
