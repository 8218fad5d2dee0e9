#!/usr/bin/env bash
# The phrase-based baseline stage (the system Cho et al. 2014 add their phrase score to), for any corpus
# that nmt-prepare knows: prepare (Moses tokenization, case kept, as the encoder–decoder sees it) → eflomal
# alignment both ways + grow-diag-final-and → phrase extraction (max 7) and Moses scoring → KenLM on the
# target side → MERT on the dev set (--mert-runs runs, seeds 1..N) → decode the dev and test sets with each
# tuned system → detokenize → sacreBLEU BLEU / chrF, mean ± spread.
#   recipes/lib/smt_baseline.sh --config YAML --work DIR [--quick] [--mert-runs N] [--threads N]
#                               [--max-iterations N] [--train SPLIT] [--dev SPLIT] [--tests "A B"] [--dev-lines N]
#                               [--tune-flags "..."] [-- extra smt-decode flags for MERT and test]
# --config: the recipe's config.yaml: its `prepare` section for nmt-prepare, its `smt` (--quick: `smt_quick`)
#   section for the SMT settings (dev/test splits, subset sizes, LM order, MERT n-best size and flags).
# --train / --dev / --tests: the splits as prepared (default: train, the config's smt.dev / smt.tests).
# --tune-flags "...": extra smt-tune flags (e.g. "--ranges LM0:0..1 --clip-to-ranges --nbest 50").
# --dev-lines N: tune (and report the dev column) on the first N dev sentences only (a CPU budget; default:
#   the config's dev_lines; 0 or empty: all).
# --truecase: Moses truecasing (nmt-prepare --truecase; the output detruecased before scoring, common.sh).
# Used by recipes/multi30k_enfr/table.sh, recipes/wmt_small/run.sh, recipes/wmt14_enfr/run.sh.
# Outputs: WORK/{data,text,lm,model}/, WORK/tune.R/, WORK/scores.md. Reruns reuse finished steps.
source "$(dirname "$0")/common.sh"
quick=0
work=""
runs=3
threads=2
max_iter=""
cfg=""
train=train
dev=""
tests=""
dev_lines=""
tune_extra=""
decode_extra=()
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --max-iterations) max_iter=$2; shift ;;
    --config) cfg=$2; shift ;;
    --train) train=$2; shift ;;
    --dev) dev=$2; shift ;;
    --tests) tests=$2; shift ;;
    --dev-lines) dev_lines=$2; shift ;;
    --tune-flags) tune_extra=$2; shift ;;
    --) shift; decode_extra=("$@"); break ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
[ -n "$cfg" ] && [ -n "$work" ] || { echo "smt_baseline.sh: give --config YAML and --work DIR" >&2; exit 2; }
config_load "$cfg"
smt=$cfg:smt$([ $quick = 1 ] && echo _quick || true)
dev=${dev:-$(config_value "$smt" dev)}
tests=${tests:-$(config_value "$smt" tests)}
train_lines=$(config_value "$smt" train_lines)
test_lines=$(config_value "$smt" test_lines)
dev_lines=${dev_lines:-$(config_value "$smt" dev_lines)}
[ "$dev_lines" != 0 ] || dev_lines=""
mkdir -p "$work"
start=$(date +%s)

echo "== prepare ($work/data)"
prep_tc=()
if [ "${truecase:-0}" = 1 ]; then prep_tc=(--truecase true); fi
run_step prepare "$work/data/prepare.json" -- "$bin/nmt-prepare" --config "$cfg:prepare" --out-dir "$work/data" \
  ${prep_tc[@]+"${prep_tc[@]}"}
d=$work/data
t=$work/text
mkdir -p "$t"
# first N lines of a file, or all of it when N is empty
subset() { if [ -n "$1" ]; then head -n "$1" "$2" > "$3"; else cp "$2" "$3"; fi; }
# text/: SET.en (tokenized source), DEV.fr (tokenized reference, for MERT), SET.ref.fr (raw reference)
subset "$train_lines" "$d/$train.tok.en" "$t/train.en"; subset "$train_lines" "$d/$train.tok.fr" "$t/train.fr"
subset "$dev_lines" "$d/$dev.tok.en" "$t/$dev.en"; subset "$dev_lines" "$d/$dev.tok.fr" "$t/$dev.fr"
subset "$dev_lines" "$d/$dev.fr" "$t/$dev.ref.fr"
for s in $tests; do
  subset "$test_lines" "$d/$s.tok.en" "$t/$s.en"; subset "$test_lines" "$d/$s.fr" "$t/$s.ref.fr"
done
max_iter=${max_iter:-$(config_value "$smt" mert_max_iterations)}
tune_flags=(--nbest "$(config_value "$smt" mert_nbest)" ${max_iter:+--max-iterations "$max_iter"})
mert_flags=$(config_value "$smt" mert_flags)
lm_order=$(config_value "$smt" lm_order)
lm_flags=$(config_value "$smt" lm_flags)

echo "== KenLM $lm_order-gram on the French side"
run_step kenlm "$work/lm/fr5.binary" -- "$bin/smt-kenlm" train --text "$t/train.fr" \
  --out-prefix "$work/lm/fr5" --order "$lm_order" $lm_flags

echo "== alignment, phrase extraction and scoring"
t0=$(date +%s)
# smt.reordering (optional): msd-bidirectional-fe adds Moses's lexicalized reordering (its table from the same
# alignment, the LexicalReordering0 feature in moses.ini); empty or absent: distance reordering only
reordering=$(config_value "$smt" reordering 2> /dev/null || true)
# smt.align_flags (optional): extra smt-train-phrases flags, e.g. --eflomal-rel-iterations 0.3 in the quick sections
align_flags=$(config_value "$smt" align_flags 2> /dev/null || true)
run_step phrases "$work/model/moses.ini" -- "$bin/smt-train-phrases" --src "$t/train.en" --tgt "$t/train.fr" \
  --out-dir "$work/model" --lm "$work/lm/fr5.binary" --processes "$threads" ${reordering:+--reordering "$reordering"} \
  $align_flags
binarize_step "$work/model/phrase-table.gz"   # the test decodes memory-map it instead of reading 1M+ lines
[ -z "$reordering" ] || binarize_step "$work/model/reordering-table.wbe-msd-bidirectional-fe.gz"
echo "training the phrase-based system: $(( $(date +%s) - t0 )) s"

dflags=""
[ ${#decode_extra[@]} -gt 0 ] && dflags="${decode_extra[*]}"
for r in $(seq 1 "$runs"); do
  tune_decode_evaluate --moses-ini "$work/model/moses.ini" --work-dir "$work/tune.$r" --seed "$r" --text "$t" \
    --dev "$dev" --tests "$tests" --threads "$threads" \
    --tune-flags ${dflags:+--decoder-flags="$dflags"} "${tune_flags[@]}" $mert_flags $tune_extra -- \
    --decode-flags ${decode_extra[@]+"${decode_extra[@]}"} --
done

echo "== summary over $runs MERT run(s)"
"$py" "$lib/summarize.py" --runs "$runs" --sets "$dev $tests" --system "Baseline=$work/tune" \
  | tee "$work/scores.md"
echo "total $(( $(date +%s) - start )) s; outputs in $work"
