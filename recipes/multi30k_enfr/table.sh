#!/usr/bin/env bash
# The Multi30k En→Fr experiment table and its report (run.sh --table calls this), one stage after the other
# (each reuses its finished steps): recipes/lib/smt_baseline.sh (Baseline) → recipes/lib/rnn_rescore.sh
# (+RNN, +RNN+WP) → lm_rerank.sh (the neural LM rows) → smt-report.
#   recipes/multi30k_enfr/table.sh [--quick] [--mert-runs N] [--threads N] [--work DIR] [--encdec DIR]
# WORK (default work/multi30k_table[_quick]) holds smt/, rnn/, lm/, rerank/ and report/; the wall time of
# every stage is printed and kept in WORK/wall_time.txt. SMT settings: config.yaml smt (--quick: smt_quick).
source "$(dirname "$0")/../lib/common.sh"
quick=0
work=""
runs=3
threads=2
encdec=""
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --encdec) encdec=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
suffix=$([ $quick = 1 ] && echo _quick || true)
work=$(abs_dir "${work:-$root/work/multi30k_table$suffix}")
cfg=$here/config.yaml
qflag=$(quick_flag $quick)
start=$(date +%s)

bash "$lib/smt_baseline.sh" $qflag --work "$work/smt" --mert-runs "$runs" --threads "$threads" --config "$cfg"
echo "== Baseline, +RNN, +RNN+WP (rnn_rescore.sh)"
bash "$lib/rnn_rescore.sh" $qflag --config "$cfg" --smt-work "$work/smt" --work "$work/rnn" --mert-runs "$runs" \
  --threads "$threads"
bash "$here/lm_rerank.sh" $qflag --mert-runs "$runs" --threads "$threads" --smt-work "$work/smt" \
  --rnn-work "$work/rnn" --lm-work "$work/lm" --work "$work/rerank" ${encdec:+--encdec "$encdec"}
table_end=$(date +%s)

echo "== report ($work/report)"
in=$work/report_in
rm -rf "$in"
mkdir -p "$in/results" "$in/perplexity" "$in/models"
cp "$work/rerank/results/"*.json "$in/results/"
for m in kenlm lstm-1x128 rm+tM-g mogrifier; do
  for split in valid test; do
    [ -f "$work/lm/$m/$split.json" ] && cp "$work/lm/$m/$split.json" "$in/perplexity/$m.$split.json"
  done
  [ -f "$work/lm/$m/history.json" ] && mkdir -p "$in/models/$m" && cp "$work/lm/$m/history.json" "$in/models/$m/"
done
[ -f "$work/rnn/phrase_model/history.json" ] && mkdir -p "$in/models/phrase_model" && \
  cp "$work/rnn/phrase_model/history.json" "$in/models/phrase_model/"
# Cho et al. Fig. 4-5: frequent source phrases of 2-4 words (the table's sources with the most target options)
"$bin/smt-frequent-phrases" --table "$work/smt/model/phrase-table.gz" --output "$in/phrases.txt" \
  --limit "$(config_value "$cfg:smt$suffix" report_phrases)"
head -n 3 "$work/smt/text/val.fr" > "$in/attention_sentences.txt"
cp "$work/rerank/examples.json" "$in/"
"$bin/smt-report" --experiment-dir "$in" --out "$work/report" --title "Multi30k En→Fr: RNN Encoder–Decoder and neural LM features" \
  --phrase-model "$work/rnn/phrase_model" --phrases "$in/phrases.txt" --projection tsne \
  --rmn-model "$work/lm/rm+tM-g" --attention-sentences "$in/attention_sentences.txt"
end=$(date +%s)
{
  echo "table (smt_baseline + rnn_rescore + lm_rerank, reused steps take ~0 s): $((table_end - start)) s"
  echo "report: $((end - table_end)) s"
  echo "total: $((end - start)) s"
} | tee "$work/wall_time.txt"
cat "$work/rerank/scores.md"
