#!/usr/bin/env bash
# The Multi30k En→Fr experiment table and its report (run.sh --table calls this):
#   smt_baseline.sh → rnn_rescore.sh → lm_rerank.sh (each reused if done) → smt-report.
#   recipes/multi30k_enfr/table.sh [--quick] [--mert-runs N] [--threads N] [--work DIR] [--encdec DIR]
# WORK (default work/multi30k_table[_quick]) holds smt/, rnn/, lm/, rerank/ and report/; the wall time of
# every stage is printed and kept in WORK/wall_time.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=0
work=""
runs=3
threads=2
encdec=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --mert-runs) runs=$2; shift ;;
    --threads) threads=$2; shift ;;
    --work) work=$2; shift ;;
    --encdec) encdec=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export MT_DATA=${MT_DATA:-$root/../shared/data}
suffix=$([ $quick = 1 ] && echo _quick || true)
work=${work:-$root/work/multi30k_table$suffix}
bin=${BIN:-$root/.venv/bin}
mkdir -p "$work"
work=$(cd "$work" && pwd)
qflag=$([ $quick = 1 ] && echo --quick || true)
start=$(date +%s)

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
"$bin/python" - "$work/smt/model/phrase-table.gz" "$in/phrases.txt" "$([ $quick = 1 ] && echo 40 || echo 200)" <<'PY'
import collections, gzip, sys
counts = collections.Counter()
with gzip.open(sys.argv[1], "rt", encoding="utf-8") as fh:
    for line in fh:
        src = line.split(" ||| ", 1)[0]
        if 2 <= len(src.split()) <= 4 and src[0].isalpha():
            counts[src] += 1
with open(sys.argv[2], "w", encoding="utf-8") as out:
    out.writelines(f"{p}\n" for p, _ in counts.most_common(int(sys.argv[3])))
PY
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
