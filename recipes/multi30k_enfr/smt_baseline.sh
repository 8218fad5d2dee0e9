#!/usr/bin/env bash
# Phrase-based baseline (the system Cho et al. 2014 add their phrase score to), Multi30k En→Fr by default:
# prepare (Moses tokenization, case kept, as the encoder–decoder sees it) → eflomal alignment both
# ways + grow-diag-final-and → phrase extraction (max 7) and Moses scoring → KenLM 5-gram on the
# French side → MERT on the dev set (--mert-runs runs, seeds 1..N) → decode the dev and test sets
# with each tuned system → detokenize → sacreBLEU BLEU / chrF, mean ± spread.
#   recipes/multi30k_enfr/smt_baseline.sh [--quick] [--work DIR] [--mert-runs N] [--threads N]
#                                         [--max-iterations N] [--config FILE] [--dev SPLIT] [--tests "A B"]
#                                         [--dev-lines N] [--tune-flags "..."] [-- extra smt-decode flags for MERT and test]
# --tune-flags "...": extra smt-tune flags (e.g. "--ranges LM0:0..1 --clip-to-ranges --nbest 50").
# --dev-lines N: tune (and report the dev column) on the first N dev sentences only (a CPU budget).
# --config: the YAML whose `prepare` section nmt-prepare reads (default: config.yaml beside this script);
#   --dev / --tests name its dev and test splits as prepared (default val / test_2016_flickr test_2017_flickr).
#   recipes/wmt_small/run.sh uses this for Europarl + newstest2012/2013.
# --quick: CI scale (2,000 training pairs, MERT on 40 dev sentences with 20-best lists and at most 2
# iterations, LM/TM/distortion weights kept in [0, 1], 50 test sentences); the figures are then only a smoke test.
# Data: $MT_DATA (default ../shared/data beside the repository). Reruns reuse finished steps.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=0
work=""
runs=3
threads=2
max_iter=""
cfg=$here/config.yaml
dev=val
tests="test_2016_flickr test_2017_flickr"
dev_lines=""
tune_extra=""
decode_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --work) work=$2; shift ;;
    --mert-runs) runs=$2; shift ;;
    --threads) threads=$2; shift ;;
    --max-iterations) max_iter=$2; shift ;;
    --config) cfg=$2; shift ;;
    --dev) dev=$2; shift ;;
    --tests) tests=$2; shift ;;
    --dev-lines) dev_lines=$2; shift ;;
    --tune-flags) tune_extra=$2; shift ;;
    --) shift; decode_extra=("$@"); break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export MT_DATA=${MT_DATA:-$root/../shared/data}
suffix=$([ $quick = 1 ] && echo _quick || true)
work=${work:-$root/work/multi30k_smt$suffix}
bin=${BIN:-$root/.venv/bin}
mkdir -p "$work"
start=$(date +%s)

echo "== prepare ($work/data)"
[ -f "$work/data/prepare.json" ] || "$bin/nmt-prepare" --config "$cfg:prepare" --out-dir "$work/data"
d=$work/data
t=$work/text
mkdir -p "$t"
# text/: SET.en (tokenized source), DEV.fr (tokenized reference, for MERT), SET.ref.fr (raw reference)
if [ $quick = 1 ]; then
  head -n 2000 "$d/train.tok.en" > "$t/train.en"; head -n 2000 "$d/train.tok.fr" > "$t/train.fr"
  head -n 40 "$d/$dev.tok.en" > "$t/$dev.en"; head -n 40 "$d/$dev.tok.fr" > "$t/$dev.fr"
  head -n 40 "$d/$dev.fr" > "$t/$dev.ref.fr"
  for s in $tests; do
    head -n 50 "$d/$s.tok.en" > "$t/$s.en"; head -n 50 "$d/$s.fr" > "$t/$s.ref.fr"
  done
  # two MERT iterations can end on weights never decoded with (negative TM weights gave 0.75 BLEU once):
  # at this scale keep LM/TM/distortion weights in [0, 1] (Moses --range + clipping), as wmt_small does
  tune_flags=(--nbest 20 --max-iterations "${max_iter:-2}" --restarts 5 --ranges LM0:0..1 TranslationModel0:0..1 Distortion0:0..1 --clip-to-ranges)
  lm_flags=(--discount-fallback)
else
  cp "$d/train.tok.en" "$t/train.en"; cp "$d/train.tok.fr" "$t/train.fr"
  n=${dev_lines:-$(wc -l < "$d/$dev.tok.en")}
  head -n "$n" "$d/$dev.tok.en" > "$t/$dev.en"; head -n "$n" "$d/$dev.tok.fr" > "$t/$dev.fr"
  head -n "$n" "$d/$dev.fr" > "$t/$dev.ref.fr"
  for s in $tests; do
    cp "$d/$s.tok.en" "$t/$s.en"; cp "$d/$s.fr" "$t/$s.ref.fr"
  done
  tune_flags=(--nbest 100 ${max_iter:+--max-iterations "$max_iter"})
  lm_flags=()
fi

echo "== KenLM 5-gram on the French side"
[ -f "$work/lm/fr5.binary" ] || "$bin/python" -m smt_features.model.kenlm train --text "$t/train.fr" \
  --out-prefix "$work/lm/fr5" --order 5 ${lm_flags[@]+"${lm_flags[@]}"}

echo "== alignment, phrase extraction and scoring"
t0=$(date +%s)
[ -f "$work/model/moses.ini" ] || "$bin/smt-train-phrases" --src "$t/train.en" --tgt "$t/train.fr" \
  --out-dir "$work/model" --lm "$work/lm/fr5.binary" --processes "$threads"
t1=$(date +%s)
echo "training the phrase-based system: $((t1 - t0)) s"

dflags=""
[ ${#decode_extra[@]} -gt 0 ] && dflags="${decode_extra[*]}"
for r in $(seq 1 "$runs"); do
  echo "== MERT run $r (seed $r)"
  tune=$work/tune.$r
  t2=$(date +%s)
  [ -f "$tune/moses.tuned.ini" ] || "$bin/smt-tune" --config "$work/model/moses.ini" --dev-src "$t/$dev.en" \
    --dev-ref "$t/$dev.fr" --work-dir "$tune" --seed "$r" --threads "$threads" --resume \
    ${dflags:+--decoder-flags="$dflags"} "${tune_flags[@]}" $tune_extra
  t3=$(date +%s)
  echo "MERT run $r: $((t3 - t2)) s"
  for s in $dev $tests; do   # the dev set too: the dev column (the tuning set itself)
    [ -f "$tune/$s.scores.json" ] && [ "$tune/$s.scores.json" -nt "$tune/moses.tuned.ini" ] && continue
    "$bin/smt-decode" --config "$tune/moses.tuned.ini" --input "$t/$s.en" --output "$tune/$s.tok.fr" \
      --threads "$threads" --progress false ${decode_extra[@]+"${decode_extra[@]}"}
    "$bin/nmt-evaluate" --hyp "$tune/$s.tok.fr" --detokenize fr --detok-out "$tune/$s.fr" --ref "$t/$s.ref.fr" \
      --name "run $r $s" --json "$tune/$s.scores.json"
  done
done

echo "== summary over $runs MERT run(s)"
"$bin/python" "$here/summarize.py" --runs "$runs" --sets "$dev $tests" --system "Baseline=$work/tune" \
  | tee "$work/scores.md"
end=$(date +%s)
echo "total $((end - start)) s; outputs in $work"
