#!/usr/bin/env bash
# Target-side neural LMs as log-linear features on Multi30k En→Fr, by n-best reranking:
#   the Baseline and +RNN+WP systems (recipes/lib/smt_baseline.sh and rnn_rescore.sh: table.sh runs them
#   first) → for each MERT run r: decode val / test_2016_flickr / test_2017_flickr with its tuned weights into
#   N-best lists → smt-rerank adds ln p(hyp) under the LSTM, RMN and Mogrifier LMs trained on Multi30k French
#   (recipes/ptb_lm/run.sh --corpus multi30k-fr) and the encoder–decoder's ln p(hyp | source) →
#   MERT on the val list (seed r, from the run's tuned weights, new features from 0) → reranked 1-best
#   of the test lists → detokenize → sacreBLEU.
# Rows: +LSTM-LM, +RMN-LM, +Mogrifier-LM (Baseline's lists + that LM), +all (the +RNN+WP lists + the three
# LMs + the encoder–decoder).
#   recipes/multi30k_enfr/lm_rerank.sh [--quick] [--smt-work DIR] [--rnn-work DIR] [--lm-work DIR]
#                                      [--work DIR] [--encdec DIR] [--mert-runs N] [--threads N] [--nbest N]
# --encdec: the encoder–decoder of the sentence-level feature (default: the phrase model of rnn_rescore.sh).
# --nbest: the list size (default: config.yaml smt.rerank_nbest, --quick: smt_quick.rerank_nbest).
# Outputs: WORK/{baseline,rnnwp}.R/*.nbest(.feat.gz), WORK/<row>.R/*, WORK/scores.md, WORK/examples.md,
#   WORK/results/*.json (the smt-report layout). Reruns reuse finished steps.
source "$(dirname "$0")/../lib/common.sh"
quick=0
smt=""
rnn=""
lmw=""
work=""
encdec=""
runs=3
threads=2
nbest=""
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --smt-work) smt=$2; shift ;;
    --rnn-work) rnn=$2; shift ;;
    --lm-work) lmw=$2; shift ;;
    --encdec) encdec=$2; shift ;;
    --nbest) nbest=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
suffix=$([ $quick = 1 ] && echo _quick || true)
smt=${smt:-$root/work/multi30k_smt$suffix}
rnn=${rnn:-$root/work/multi30k_rnn$suffix}
lmw=${lmw:-$root/work/multi30k_fr_lm$suffix}
work=${work:-$root/work/multi30k_rerank$suffix}
nbest=${nbest:-$(config_value "$here/config.yaml:smt$suffix" rerank_nbest)}
for f in "$smt/tune.1/moses.tuned.ini" "$rnn/rnnwp.tune.1/moses.tuned.ini"; do
  [ -f "$f" ] || { echo "lm_rerank.sh: no $f: run smt_baseline.sh and rnn_rescore.sh first (table.sh)" >&2; exit 1; }
done
work=$(abs_dir "$work")
mkdir -p "$work/results"
smt=$(cd "$smt" && pwd)
rnn=$(cd "$rnn" && pwd)
start=$(date +%s)
qflag=$(quick_flag $quick)
models="lstm-1x128 rm+tM-g mogrifier"

encdec=${encdec:-$rnn/phrase_model}
t=$smt/text

echo "== neural LMs on Multi30k French ($lmw)"
t0=$(date +%s)
run_step "neural LMs" "$lmw/table.md" -- bash "$root/recipes/ptb_lm/run.sh" $qflag --corpus multi30k-fr --models "$models" \
  --threads "$threads" --work "$lmw"
echo "language models: $(( $(date +%s) - t0 )) s"
lm_flags=(--lm "LSTM0=$lmw/lstm-1x128" "RMN0=$lmw/rm+tM-g" "MOG0=$lmw/mogrifier")

sets="val test_2016_flickr test_2017_flickr"
for base in baseline rnnwp; do
  for r in $(seq 1 "$runs"); do
    ini=$([ $base = baseline ] && echo "$smt/tune.$r/moses.tuned.ini" || echo "$rnn/rnnwp.tune.$r/moses.tuned.ini")
    d=$work/$base.$r
    mkdir -p "$d"
    extra=()
    [ $base = rnnwp ] && extra=(--encdec "RNN0=$encdec")
    for s in $sets; do
      if [ ! -f "$d/$s.nbest.feat.gz" ]; then
        echo "== $base run $r: $s $nbest-best list and its neural features"
        "$bin/smt-decode" --moses-ini "$ini" --input "$t/$s.en" --output "$d/$s.1best" \
          --n-best-list "$d/$s.nbest" "$nbest" --threads "$threads" --progress false
        "$bin/smt-rerank" --nbest "$d/$s.nbest" --src "$t/$s.en" --output "$d/$s.nbest.feat.gz" \
          "${lm_flags[@]}" ${extra[@]+"${extra[@]}"} --threads "$threads"
        rm -f "$d/$s.nbest"
      fi
    done
  done
done

# row: name base dropped-features
rows=("lstm|+LSTM-LM|baseline|RMN0 MOG0" "rmn|+RMN-LM|baseline|LSTM0 MOG0" "mog|+Mogrifier-LM|baseline|LSTM0 RMN0"
      "all|+all|rnnwp|")
for row in "${rows[@]}"; do
  IFS='|' read -r key name base drop <<< "$row"
  for r in $(seq 1 "$runs"); do
    src=$work/$base.$r
    d=$work/$key.$r
    mkdir -p "$d"
    ini=$([ $base = baseline ] && echo "$smt/tune.$r/moses.tuned.ini" || echo "$rnn/rnnwp.tune.$r/moses.tuned.ini")
    dflag=()
    [ -n "$drop" ] && dflag=(--drop $drop)
    [ -f "$d/weights" ] || echo "== $name run $r: MERT on the val $nbest-best list"
    run_step "$name run $r: MERT" "$d/weights" -- "$bin/smt-rerank" --nbest "$src/val.nbest.feat.gz" --src "$t/val.en" \
      ${dflag[@]+"${dflag[@]}"} --tune --ref "$t/val.fr" --weights "$ini" --weights-out "$d/weights" --seed "$r" \
      --one-best "$d/val.tok.fr"
    for s in val test_2016_flickr test_2017_flickr; do
      fresh "$d/$s.scores.json" "$d/weights" && continue
      [ $s = val ] || "$bin/smt-rerank" --nbest "$src/$s.nbest.feat.gz" --src "$t/$s.en" ${dflag[@]+"${dflag[@]}"} \
        --weights "$d/weights" --one-best "$d/$s.tok.fr"
      "$bin/nmt-evaluate" --hyp "$d/$s.tok.fr" --detokenize fr --detok-out "$d/$s.fr" --ref "$t/$s.ref.fr" \
        --name "$name run $r $s" --json "$d/$s.scores.json"
    done
  done
done

echo "== summary over $runs MERT run(s)"
"$py" "$lib/summarize.py" --runs "$runs" --out-json "$work/results" \
  --system "Baseline=$smt/tune" --system "+RNN=$rnn/rnn.tune" --system "+RNN+WP=$rnn/rnnwp.tune" \
  --system "+LSTM-LM=$work/lstm" --system "+RMN-LM=$work/rmn" --system "+Mogrifier-LM=$work/mog" \
  --system "+all=$work/all" | tee "$work/scores.md"
"$py" "$lib/summarize.py" --examples --text "$t" --run 1 --limit 8 \
  --system "Baseline=$smt/tune" --system "+all=$work/all" --json "$work/examples.json" > "$work/examples.md"
echo "total $(( $(date +%s) - start )) s; outputs in $work"
