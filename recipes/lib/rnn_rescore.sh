#!/usr/bin/env bash
# The +RNN / +RNN+WP stage, Cho et al. (2014) §3.1: score every pair of the baseline's phrase table with the
# RNN Encoder–Decoder and add the score (and the WP feature) to the log-linear model.
#   the baseline of smt_baseline.sh (run it first, same --config/--quick) → encoder–decoder (trained the
#   paper's way on the table's unique pairs, or --model DIR) → smt-rescore (p_rnn(e|f) and WP =
#   exp(−unknown words) appended, moses.ini written beside) → MERT on the dev set for +RNN (WP weight fixed
#   at 0) and +RNN+WP, seeds 1..N → decode dev and test sets → sacreBLEU BLEU / chrF, mean ± sd over the
#   runs, beside the baseline's runs.
#   recipes/lib/rnn_rescore.sh --config YAML --smt-work DIR --work DIR [--quick] [--model DIR]
#                              [--mert-runs N] [--threads N] [--systems "rnn rnnwp"] [--tag TAG]
#                              [--vocab K] [--device D] [--dev SPLIT] [--tests "A B"] [--tune-flags "..."]
#                              [--filter-sets "A B"] [--train-flags "..."] [--reverse | --no-reverse] [--reverse-model DIR]
#                              [--rescore-flags "..."] [--checkpoint WHICH] [--average "NAMES"]
#                              [--stop-after rescore]
# --config: the recipe's config.yaml (its train_phrases[_quick] section trains the phrase model; its
#   smt[_quick] section: dev/test splits, MERT settings, phrase_vocab, phrase_checkpoint: the checkpoint that scores
#   the table, best|last|epochN|auto, default auto); --dev/--tests/--tune-flags as
#   smt_baseline.sh. Used by recipes/multi30k_enfr/table.sh, recipes/wmt_small/run.sh, recipes/wmt14_enfr/run.sh.
# --vocab K: the phrase model's vocabularies are the K most frequent words per side (default: the config's
#   phrase_vocab; Multi30k: 3000 — its ~11k words would leave no word unknown, while the paper's 15,000 of
#   WMT'14 cover ~93% of the tokens and WP counts the rest; 3,000 cover 96% of Multi30k's training tokens).
# --filter-sets "A B": rescore only the pairs whose source phrase occurs in these sets (text/SET.en, e.g. the dev
#   and test sets), with smt-filter-table (without it: the whole table, and a warning); the model still
#   trains on the whole table.
# --device: cpu (default) or cuda[:i], for training the phrase model and for smt-rescore.
# --tag: appended to the system names (+RNN(TAG), +RNN+WP(TAG)), to tell models apart in one report.
# --model: an nmt-train folder with the prepare step's vocabularies (e.g. the sentence-trained model of
#   recipes/multi30k_enfr/run.sh); default: train one on the phrase table (train_phrases, quick: train_phrases_quick).
# --vocab full: every word of the prepare step's vocabularies (the paper's 15,000 cover all of Multi30k's).
# --train-flags "...": extra nmt-train flags for the phrase model(s) (e.g. "--max-epochs 3 --max-updates 0
#   --phrase-pairs count --preset cho2014"; docs/phrase_score.md).
# --reverse: also train the reverse model p(f|e) (nmt-train --reverse, same settings, WORK/phrase_model.reverse)
#   and append its score; --reverse-model DIR: take that reverse model instead; default: the config's
#   smt.phrase_reverse (true: as --reverse; recipes/wmt_small, docs/phrase_score.md), else none; --no-reverse: none.
# --rescore-flags "...": extra smt-rescore flags (e.g. --length-normalize; a --checkpoint there wins, being later).
# --checkpoint WHICH: the phrase model's checkpoint that scores the table (default: the config's phrase_checkpoint).
# --average "NAMES": score with the mean of the phrase model's checkpoints NAMES instead (e.g. "epoch1 epoch2 last";
#   nmt-average-checkpoints, MODEL/checkpoint_avg_epoch1_epoch2_last.pt, of the reverse model too; default: the
#   config's phrase_average, if any; "" = none).
# --stop-after rescore: stop once the rescored table is written (e.g. on a GPU machine: the MERT runs follow on
#   CPU with the same command, which reuses the model and the table).
# Outputs: WORK/phrase-table.rnn.gz (+ .moses.ini, .rescore.json), WORK/{rnn,rnnwp}.tune.R/, WORK/scores.md,
#   WORK/results/*.json (the smt-report layout). Reruns reuse finished steps.
source "$(dirname "$0")/common.sh"
quick=0
smt=""
work=""
model=""
runs=3
threads=2
systems="rnn rnnwp"
tag=""
vocab=""
device=cpu
cfg=""
dev=""
tests=""
tune_extra=""
filter_sets=""
train_extra=""
reverse=""
reverse_model=""
rescore_extra=""
checkpoint=""
average=unset
stop_after=""
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --smt-work) smt=$2; shift ;;
    --model) model=$2; shift ;;
    --systems) systems=$2; shift ;;
    --tag) tag=$2; shift ;;
    --vocab) vocab=$2; shift ;;
    --device) device=$2; shift ;;
    --config) cfg=$2; shift ;;
    --dev) dev=$2; shift ;;
    --tests) tests=$2; shift ;;
    --tune-flags) tune_extra=$2; shift ;;
    --filter-sets) filter_sets=$2; shift ;;
    --train-flags) train_extra=$2; shift ;;
    --reverse) reverse=1 ;;
    --no-reverse) reverse=0 ;;
    --reverse-model) reverse_model=$2; shift ;;
    --rescore-flags) rescore_extra=$2; shift ;;
    --checkpoint) checkpoint=$2; shift ;;
    --average) average=$2; shift ;;
    --stop-after) stop_after=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
[ -n "$cfg" ] && [ -n "$smt" ] && [ -n "$work" ] || \
  { echo "rnn_rescore.sh: give --config YAML, --smt-work DIR (smt_baseline.sh's) and --work DIR" >&2; exit 2; }
case $stop_after in "" | rescore) ;; *) echo "rnn_rescore.sh: --stop-after takes 'rescore', not '$stop_after'" >&2; exit 2 ;; esac
[ "$reverse" != 1 ] || [ -z "$reverse_model" ] || { echo "rnn_rescore.sh: give --reverse or --reverse-model, not both" >&2; exit 2; }
[ -f "$smt/model/moses.ini" ] || { echo "rnn_rescore.sh: no $smt/model/moses.ini: run smt_baseline.sh first" >&2; exit 1; }
config_load "$cfg"
smt_cfg=$cfg:smt$([ $quick = 1 ] && echo _quick || true)
dev=${dev:-$(config_value "$smt_cfg" dev)}
tests=${tests:-$(config_value "$smt_cfg" tests)}
vocab=${vocab:-$(config_value "$smt_cfg" phrase_vocab)}
# which checkpoint of the phrase model scores the table (smt-rescore --checkpoint; --rescore-flags may override it)
checkpoint=${checkpoint:-$(config_value "$smt_cfg" phrase_checkpoint 2> /dev/null || true)}
checkpoint=${checkpoint:-auto}
# or the mean of several of its checkpoints (smt-rescore then reads that one file)
[ "$average" != unset ] || average=$(config_value "$smt_cfg" phrase_average 2> /dev/null || true)
# the reverse model p(f|e) too: --reverse / --no-reverse / --reverse-model, else the config's phrase_reverse
if [ -z "$reverse" ]; then
  reverse=0
  if [ -z "$reverse_model" ]; then
    from_config=$(config_value "$smt_cfg" phrase_reverse 2> /dev/null || true)
    case ${from_config,,} in true) reverse=1 ;; "" | false) ;;
      *) echo "rnn_rescore.sh: smt.phrase_reverse must be true or false, not '$from_config'" >&2; exit 2 ;;
    esac
  fi
fi
max_iter=$(config_value "$smt_cfg" mert_max_iterations)
tune_flags=(--nbest "$(config_value "$smt_cfg" mert_nbest)" ${max_iter:+--max-iterations "$max_iter"})
mert_flags=$(config_value "$smt_cfg" mert_flags)
work=$(abs_dir "$work")
mkdir -p "$work/results"
smt=$(cd "$smt" && pwd)   # absolute: smt-tune --resume compares the paths it was started with
start=$(date +%s)
t=$smt/text

section=$([ $quick = 1 ] && echo train_phrases_quick || echo train_phrases)
if [ -z "$model" ] || [ $reverse = 1 ]; then phrase_vocab "$smt" "$vocab" "$work"; fi
if [ -z "$model" ]; then
  model=$work/phrase_model
  echo "== encoder–decoder on the phrase table's unique pairs ($section${train_extra:+ + $train_extra})"
  t0=$(date +%s)
  run_step "phrase model" "$model/train.done" -- train_phrase_model "$cfg:$section" "$smt" "$work" "$dev" "$model" \
    "$threads" "$device" $train_extra
  echo "training the phrase model: $(( $(date +%s) - t0 )) s"
fi
if [ $reverse = 1 ]; then
  reverse_model=$work/phrase_model.reverse
  echo "== the reverse model p(f|e) ($section${train_extra:+ + $train_extra} --reverse)"
  t0=$(date +%s)
  run_step "reverse phrase model" "$reverse_model/train.done" -- train_phrase_model "$cfg:$section" "$smt" "$work" \
    "$dev" "$reverse_model" "$threads" "$device" $train_extra --reverse
  echo "training the reverse phrase model: $(( $(date +%s) - t0 )) s"
fi
if [ -n "$average" ]; then
  echo "== the phrase model's checkpoints $average averaged (nmt-average-checkpoints)"
  average_checkpoints "$model" "$average"
  model=$averaged
  if [ -n "$reverse_model" ]; then
    average_checkpoints "$reverse_model" "$average"
    reverse_model=$averaged
  fi
fi

in_table=$smt/model/phrase-table.gz
if [ -n "$filter_sets" ] && [ -x "$bin/smt-filter-table" ]; then
  echo "== smt-filter-table: the pairs the sources of $filter_sets can use"
  inputs=()
  for s in $filter_sets; do inputs+=("$t/$s.en"); done
  run_step filter "$work/phrase-table.filtered.gz" -- "$bin/smt-filter-table" --table "$in_table" \
    --input "${inputs[@]}" --output "$work/phrase-table.filtered.gz"
  in_table=$work/phrase-table.filtered.gz
elif [ -n "$filter_sets" ]; then
  echo "rnn_rescore.sh: no $bin/smt-filter-table: rescoring the whole table" >&2
fi
echo "== smt-rescore: p_rnn(e|f) and WP for every pair of $in_table"
table=$work/phrase-table.rnn.gz
t0=$(date +%s)
run_step rescore "$table.moses.ini" -- "$bin/smt-rescore" --table "$in_table" --model "$model" \
  ${reverse_model:+--reverse-model "$reverse_model"} --checkpoint "$checkpoint" $rescore_extra \
  --output "$table" --wp-column --resume --threads "$threads" --device "$device" --moses-ini "$smt/model/moses.ini"
echo "rescoring: $(( $(date +%s) - t0 )) s"
if [ "$stop_after" = rescore ]; then echo "rnn_rescore.sh: --stop-after rescore: $table"; exit 0; fi
binarize_step "$table"
# +RNN: the same table with the WP weight (the last score) at 0 and fixed; +RNN+WP: all scores tuned
"$py" "$lib/set_weight.py" "$table.moses.ini" "$work/rnn.moses.ini" TranslationModel0 -1 0
cp "$table.moses.ini" "$work/rnnwp.moses.ini"
wp_index=$(awk '/^TranslationModel0=/ { print NF - 2 }' "$table.moses.ini")   # the last of its weights

for sys in $systems; do
  case $sys in
    rnn) name="+RNN${tag:+($tag)}"; fixed=(--fixed "TranslationModel0_$wp_index") ;;
    rnnwp) name="+RNN+WP${tag:+($tag)}"; fixed=() ;;
    *) echo "unknown system $sys (rnn, rnnwp)" >&2; exit 2 ;;
  esac
  for r in $(seq 1 "$runs"); do
    tune_decode_evaluate --label "$name" --moses-ini "$work/$sys.moses.ini" --work-dir "$work/$sys.tune.$r" \
      --seed "$r" --text "$t" --dev "$dev" --tests "$tests" --threads "$threads" \
      --tune-flags ${fixed[@]+"${fixed[@]}"} "${tune_flags[@]}" $mert_flags $tune_extra --
  done
done

echo "== summary over $runs MERT run(s)"
sys_flags=(--system "Baseline=$smt/tune")
for sys in $systems; do
  case $sys in rnn) n="+RNN" ;; rnnwp) n="+RNN+WP" ;; esac
  sys_flags+=(--system "$n${tag:+($tag)}=$work/$sys.tune")
done
"$py" "$lib/summarize.py" --runs "$runs" --sets "$dev $tests" --out-json "$work/results" "${sys_flags[@]}" \
  | tee "$work/scores.md"
echo "total $(( $(date +%s) - start )) s; outputs in $work"
