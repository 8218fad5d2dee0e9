#!/usr/bin/env bash
# Multi30k En→Fr with the RNN Encoder–Decoder: prepare → train → translate the
# config's test sets (prepare.test_splits) → BLEU and chrF (sacreBLEU, detokenised output vs raw references).
#   recipes/multi30k_enfr/run.sh [--quick] [--train-section NAME] [--work DIR] [-- extra nmt-train flags]
#   recipes/multi30k_enfr/run.sh --table [--quick] [--mert-runs N] [--threads N] [--work DIR] [--systems "A B ..."] [--no-report]
# --table: the experiment table of the phrase-based system instead (Baseline, +RNN, +RNN+WP, +LSTM-LM,
#   +RMN-LM, +Mogrifier-LM, +all; val and both test sets; mean ± sd over MERT runs): smt_baseline.sh →
#   rnn_rescore.sh → lm_rerank.sh (table.sh), then the report (report.md, report.html, PNGs) in WORK/report
#   (default WORK: work/multi30k_table[_quick]). --systems "Baseline +RNN ...": those rows only, --no-report: no report (experiment.sh).
# An RNNsearch model (--train-section train_rnnsearch) also gets its attention drawn for 3 test sentences
# (WORK/attention/*.png, nmt-plot-attention).
# Data: $MT_DATA (default ../shared/data beside the repository).
source "$(dirname "$0")/../lib/common.sh"
quick=0
work=""
train_section=""
train_extra=()
table=0
systems=""
no_report=()
runs=3
threads=2
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --table) table=1 ;;
    --systems) systems=$2; shift ;;
    --no-report) no_report=(--no-report) ;;
    --train-section) train_section=$2; shift ;;
    --) shift; train_extra=("$@"); break ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
quick_suffix
if [ $table = 1 ]; then
  exec bash "$here/table.sh" $(quick_flag $quick) --mert-runs "$runs" --threads "$threads" \
    ${work:+--work "$work"} ${systems:+--systems "$systems"} ${no_report[@]+"${no_report[@]}"}
fi
work=${work:-$root/work/multi30k_enfr$suffix}
cfg=$here/config.yaml
train_section=${train_section:-$([ $quick = 1 ] && echo train_quick || echo train)}
mapfile -t test_splits < <(config_value "$cfg:prepare" test_splits)   # the config names the test sets
mkdir -p "$work"
start=$(date +%s)

echo "== prepare ($work/data)"
"$bin/nmt-prepare" --config "$cfg:prepare" --out-dir "$work/data"

echo "== train ($train_section)"
"$bin/nmt-train" --config "$cfg:$train_section" --data-dir "$work/data" --out-dir "$work/model" --resume \
  ${train_extra[@]+"${train_extra[@]}"}
train_end=$(date +%s)

for split in "${test_splits[@]}"; do
  echo "== translate $split"
  "$bin/nmt-translate" --config "$cfg:translate" --model "$work/model" --input "$work/data/$split.en" \
    --output "$work/$split.hyp.fr"
done
echo "== evaluate"
for split in "${test_splits[@]}"; do
  "$bin/nmt-evaluate" --hyp "$work/$split.hyp.fr" --ref "$work/data/$split.fr" --name "$split" \
    --json "$work/$split.scores.json"
done | tee "$work/scores.txt"
if [ "$(config_value "$work/model/config.yaml" arch 2> /dev/null || true)" = rnnsearch ]; then
  # RNNsearch attends: the alignment of the first 3 sentences of the first test set (Bahdanau et al. Fig. 3)
  echo "== attention (${test_splits[0]}, first 3 sentences) → $work/attention/"
  head -n 3 "$work/data/${test_splits[0]}.en" > "$work/attention_sentences.en"
  rm -f "$work/attention_sentences.hyp.fr" "$work/attention.json"
  "$bin/nmt-translate" --config "$cfg:translate" --model "$work/model" --input "$work/attention_sentences.en" \
    --output "$work/attention_sentences.hyp.fr" --attention "$work/attention.json"
  rm -rf "$work/attention"
  "$bin/nmt-plot-attention" --attention "$work/attention.json" --out-dir "$work/attention"
fi
end=$(date +%s)
echo "training $((train_end - start)) s (incl. data preparation), total $((end - start)) s; outputs in $work"
