#!/usr/bin/env bash
# Cho et al. (2014) §3.1 on Multi30k En→Fr: score every pair of the baseline's phrase table with the
# RNN Encoder–Decoder and add the score (and the WP feature) to the log-linear model.
#   phrase-based baseline (smt_baseline.sh, reused if done) → encoder–decoder (trained the paper's way on
#   the table's unique pairs, or --model DIR) → smt-rescore (p_rnn(e|f) and WP = exp(−unknown words)
#   appended, moses.ini written beside) → MERT on the dev set (val) for +RNN (WP weight fixed at 0) and
#   +RNN+WP, seeds 1..N → decode dev and test sets → sacreBLEU BLEU / chrF, mean ± sd over the runs,
#   beside the baseline's runs.
#   recipes/multi30k_enfr/rnn_rescore.sh [--quick] [--smt-work DIR] [--work DIR] [--model DIR]
#                                        [--mert-runs N] [--threads N] [--systems "rnn rnnwp"] [--tag TAG]
#                                        [--vocab K] [--device D] [--config FILE] [--dev SPLIT] [--tests "A B"]
#                                        [--dev-lines N] [--tune-flags "..."]
# --dev-lines / --tune-flags: passed to smt_baseline.sh and used for this script's MERT runs too.
# --config/--dev/--tests: as smt_baseline.sh (another corpus; recipes/wmt_small/run.sh); the train_phrases
#   sections are read from the same config.
# --vocab K: the phrase model's vocabularies are the K most frequent words per side (default 3000; Multi30k's
#   ~11k words would leave no word unknown, while the paper's 15,000 of WMT'14 cover ~93% of the tokens and
#   WP counts the rest; 3,000 cover 96% of Multi30k's training tokens).
# --device: cpu (default) or cuda[:i], for training the phrase model and for smt-rescore.
# --tag: appended to the system names (+RNN(TAG), +RNN+WP(TAG)), to tell models apart in one report.
# --model: an nmt-train folder with the prepare step's vocabularies (e.g. the sentence-trained model of
#   run.sh); default: train one on the phrase table (config.yaml:train_phrases, quick: train_phrases_quick).
# Outputs: WORK/phrase-table.rnn.gz (+ .moses.ini, .rescore.json), WORK/{rnn,rnnwp}.tune.R/, WORK/scores.md,
#   WORK/results/*.json (the smt-report layout). Reruns reuse finished steps.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=0
smt=""
work=""
model=""
runs=3
threads=2
systems="rnn rnnwp"
tag=""
vocab=3000
device=cpu
cfg=$here/config.yaml
dev=val
tests="test_2016_flickr test_2017_flickr"
dev_lines=""
tune_extra=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --smt-work) smt=$2; shift ;;
    --work) work=$2; shift ;;
    --model) model=$2; shift ;;
    --mert-runs) runs=$2; shift ;;
    --threads) threads=$2; shift ;;
    --systems) systems=$2; shift ;;
    --tag) tag=$2; shift ;;
    --vocab) vocab=$2; shift ;;
    --device) device=$2; shift ;;
    --config) cfg=$2; shift ;;
    --dev) dev=$2; shift ;;
    --tests) tests=$2; shift ;;
    --dev-lines) dev_lines=$2; shift ;;
    --tune-flags) tune_extra=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export MT_DATA=${MT_DATA:-$root/../shared/data}
suffix=$([ $quick = 1 ] && echo _quick || true)
smt=${smt:-$root/work/multi30k_smt$suffix}
work=${work:-$root/work/multi30k_rnn$suffix}
bin=${BIN:-$root/.venv/bin}
mkdir -p "$work/results" "$smt"
work=$(cd "$work" && pwd)
smt=$(cd "$smt" && pwd)   # absolute: smt-tune --resume compares the paths it was started with
start=$(date +%s)
qflag=$([ $quick = 1 ] && echo --quick || true)

echo "== phrase-based baseline ($smt)"
bash "$here/smt_baseline.sh" $qflag --work "$smt" --mert-runs "$runs" --threads "$threads" --config "$cfg" \
  --dev "$dev" --tests "$tests" ${dev_lines:+--dev-lines "$dev_lines"} \
  ${tune_extra:+--tune-flags "$tune_extra"}
t=$smt/text
if [ $quick = 1 ]; then
  # two MERT iterations can end on weights never decoded with (negative TM weights gave 0.75 BLEU once):
  # at this scale keep LM/TM/distortion weights in [0, 1] (Moses --range + clipping), as wmt_small does
  tune_flags=(--nbest 20 --max-iterations 2 --restarts 5 --ranges LM0:0..1 TranslationModel0:0..1 Distortion0:0..1 --clip-to-ranges)
else
  tune_flags=(--nbest 100)
fi

if [ -z "$model" ]; then
  model=$work/phrase_model
  section=$([ $quick = 1 ] && echo train_phrases_quick || echo train_phrases)
  echo "== encoder–decoder on the phrase table's unique pairs ($section)"
  t0=$(date +%s)
  for l in en fr; do  # the 4 special symbols, then the K most frequent words
    awk -v k="$vocab" 'NR <= 4 && /^</ { print; next } n < k { print; n++ }' "$smt/data/vocab.$l.tsv" \
      > "$work/vocab.$l.tsv"
  done
  [ -f "$model/train.done" ] || { "$bin/nmt-train" --config "$cfg:$section" --data-dir "$smt/data" \
    --src-vocab "$work/vocab.en.tsv" --tgt-vocab "$work/vocab.fr.tsv" \
    --dev-src "$smt/data/$dev.tok.en" --dev-tgt "$smt/data/$dev.tok.fr" \
    --phrase-table "$smt/model/phrase-table.gz" --out-dir "$model" --threads "$threads" --device "$device" --resume \
    && touch "$model/train.done"; }
  echo "training the phrase model: $(( $(date +%s) - t0 )) s"
fi

echo "== smt-rescore: p_rnn(e|f) and WP for every pair of the table"
table=$work/phrase-table.rnn.gz
t0=$(date +%s)
[ -f "$table.moses.ini" ] || "$bin/smt-rescore" --table "$smt/model/phrase-table.gz" --model "$model" \
  --output "$table" --wp-column --resume --threads "$threads" --device "$device" --moses-ini "$smt/model/moses.ini"
echo "rescoring: $(( $(date +%s) - t0 )) s"
# +RNN: the same table with the WP weight at 0 and fixed (the 5-score system); +RNN+WP: all 6 scores tuned
"$bin/python" - "$table.moses.ini" "$work/rnn.moses.ini" <<'EOF'
import sys
from smt_features.model.moses_ini import read_moses_ini
cfg = read_moses_ini(sys.argv[1])
cfg.weights["TranslationModel0"][-1] = 0.0
cfg.write(sys.argv[2])
EOF
cp "$table.moses.ini" "$work/rnnwp.moses.ini"

for sys in $systems; do
  case $sys in
    rnn) name="+RNN${tag:+($tag)}"; fixed=(--fixed TranslationModel0_5) ;;
    rnnwp) name="+RNN+WP${tag:+($tag)}"; fixed=() ;;
    *) echo "unknown system $sys (rnn, rnnwp)" >&2; exit 2 ;;
  esac
  for r in $(seq 1 "$runs"); do
    tune=$work/$sys.tune.$r
    echo "== $name: MERT run $r (seed $r)"
    t2=$(date +%s)
    [ -f "$tune/moses.tuned.ini" ] || "$bin/smt-tune" --config "$work/$sys.moses.ini" --dev-src "$t/$dev.en" \
      --dev-ref "$t/$dev.fr" --work-dir "$tune" --seed "$r" --threads "$threads" --resume \
      ${fixed[@]+"${fixed[@]}"} "${tune_flags[@]}" $tune_extra
    echo "$name MERT run $r: $(( $(date +%s) - t2 )) s"
    for s in $dev $tests; do
      [ -f "$tune/$s.scores.json" ] && [ "$tune/$s.scores.json" -nt "$tune/moses.tuned.ini" ] && continue
      "$bin/smt-decode" --config "$tune/moses.tuned.ini" --input "$t/$s.en" --output "$tune/$s.tok.fr" \
        --threads "$threads" --progress false
      "$bin/nmt-evaluate" --hyp "$tune/$s.tok.fr" --detokenize fr --detok-out "$tune/$s.fr" \
        --ref "$t/$s.ref.fr" --name "$name run $r $s" --json "$tune/$s.scores.json"
    done
  done
done

echo "== summary over $runs MERT run(s)"
sys_flags=(--system "Baseline=$smt/tune")
for sys in $systems; do
  case $sys in rnn) n="+RNN" ;; rnnwp) n="+RNN+WP" ;; esac
  sys_flags+=(--system "$n${tag:+($tag)}=$work/$sys.tune")
done
"$bin/python" "$here/summarize.py" --runs "$runs" --sets "$dev $tests" --out-json "$work/results" "${sys_flags[@]}" \
  | tee "$work/scores.md"
echo "total $(( $(date +%s) - start )) s; outputs in $work"
