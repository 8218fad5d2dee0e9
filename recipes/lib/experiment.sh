#!/usr/bin/env bash
# One experiment from one config file (EMS style): prepare → Baseline → +RNN/+RNN+WP → neural LM rows → report.
#   recipes/lib/experiment.sh CONFIG.yaml [--quick] [--work DIR] [--mert-runs N] [--threads N] [--encdec DIR]
#                             [--files-root DIR] [--device cpu|cuda[:i]] [--data-only] [--rnnsearch DIR]
#                             [--systems "Baseline +RNN ..."] [--no-report]
# (recipes/experiment/run.sh and recipes/multi30k_enfr/table.sh run it.) CONFIG's `experiment` section names
# the data (a registry `corpus`, or `files: {train: PREFIX, dev: PREFIX, tests: [PREFIX...]}` of plain
# PREFIX.LANG files), `src`/`tgt`, the `dev` set and the `tests` (any number), the `systems` (Baseline, +RNN,
# +RNN+WP, +LSTM-LM, +RMN-LM, +Mogrifier-LM, +all, +RNNsearch, +all+RNNsearch), `mert_runs`, `lm_corpus`, `filter_table`, `truecase` (optional,
# default false: true = Moses truecasing, nmt-prepare --truecase and every stage --truecase), and the `scale`
# label printed with the table (`scale_quick` with --quick); its other sections size each stage (prepare,
# train_phrases[_quick], smt[_quick]: see recipes/lib/smt_baseline.sh, rnn_rescore.sh, lm_rerank.sh; with
# --quick a `prepare_quick` section, when the config has one, replaces `prepare`).
# --files-root DIR: relative `files` prefixes are under DIR (default: the folder the recipe is run from).
# --device: where the phrase model trains and rescores the table (rnn_rescore.sh; default cpu).
# --data-only: stop after prepare (WORK/smt/data), e.g. on a CPU server before the GPU stages.
# --systems "A B ...": make these rows only, instead of the config's `systems` (space-separated; a later call with
# more rows reuses every finished step, so a table can be built row group by row group).
# --no-report: stop after the table (WORK/scores.md, WORK/results/); no smt-report (e.g. all but the last call of
# a table built row group by row group).
# +RNNsearch: the Baseline's n-best lists reranked with ln p(hyp | source) of an RNNsearch model (Bahdanau et
# al. 2015) trained on the experiment's own prepared data (the config's train_rnnsearch[_quick] section, into
# WORK/rnnsearch/model), or the model of --rnnsearch DIR; +all+RNNsearch: the +all lists with that feature added.
# WORK (default work/experiment/<config name>[_quick]) holds smt/, rnn/, lm/, rerank/, report/, scores.md and
# wall_time.txt (the seconds of every stage). Every step is reused once its output exists. RECIPE_DRY_RUN=1:
# print the stage commands and run nothing.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ $# -ge 1 ] && [ "${1#-}" = "$1" ] || { echo "usage: experiment.sh CONFIG.yaml [--quick] [--work DIR] [--mert-runs N] [--threads N] [--encdec DIR] [--files-root DIR] [--device D] [--data-only] [--rnnsearch DIR] [--systems \"A B ...\"] [--no-report]" >&2; exit 2; }
cfg=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
[ -f "$cfg" ] || { echo "experiment.sh: no config $cfg" >&2; exit 2; }
config_load "$cfg"
quick=0
work=""
runs=""
threads=2
encdec=""
rnnsearch=""
files_root=""
device=cpu
data_only=0
systems_arg=""
make_report=1
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --encdec | --files-root | --device | --rnnsearch | --systems)
      [ $# -ge 2 ] || { echo "option $1 needs a value" >&2; exit 2; }
      case "$1" in
        --encdec) encdec=$2 ;; --files-root) files_root=$2 ;; --device) device=$2 ;; --rnnsearch) rnnsearch=$2 ;;
        --systems) systems_arg=$2 ;;
      esac
      shift ;;
    --data-only) data_only=1 ;;
    --no-report) make_report=0 ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
case $device in cpu | cuda | cuda:*) ;; *) echo "experiment.sh: --device must be cpu or cuda[:i], not $device" >&2; exit 2 ;; esac
x=$cfg:experiment
quick_suffix
name=$(basename "$cfg" .yaml)
work=${work:-$root/work/experiment/$name$suffix}
case $work in /*) ;; *) work=$PWD/$work ;; esac
# a relative `files` prefix: under --files-root (default: the current folder)
files_root=${files_root:-$PWD}
under_root() { case $1 in /*) echo "$1" ;; *) echo "$files_root/$1" ;; esac; }
prepare_section=prepare
if [ $quick = 1 ] && config_has "$cfg" prepare_quick; then
  prepare_section=prepare_quick
fi
# max_eval_pairs (nmt-prepare --max-eval-pairs) keeps only the first pairs of the dev and test sets: the SMT stages
# must not ask for more of their lines (smt[_quick]'s dev_lines / test_lines)
if config_has "$cfg:$prepare_section" max_eval_pairs; then
  max_eval=$(config_value "$cfg:$prepare_section" max_eval_pairs)
  for key in dev_lines test_lines; do
    n=$(config_value "$cfg:smt$suffix" "$key")
    if [ -z "$n" ] || [ "$n" = 0 ] || [ "$n" -gt "$max_eval" ]; then
      echo "experiment.sh: $cfg: $prepare_section's max_eval_pairs ($max_eval) keeps fewer dev/test pairs than" \
        "smt$suffix's $key (${n:-all} lines)" >&2
      exit 2
    fi
  done
fi
runs=${runs:-$(config_value "$x" mert_runs)}
src=$(config_value "$x" src)
tgt=$(config_value "$x" tgt)
if [ -n "$systems_arg" ]; then
  systems=$(tr -s ' ' '\n' <<< "$systems_arg" | sed '/^$/d')   # one system a line, as config_value lists them
else
  systems=$(config_value "$x" systems)
fi
title=$(config_value "$x" title)
scale=$(config_value "$x" "scale$suffix")
qflag=$(quick_flag $quick)

# the data: a registry corpus, or plain files (the set names: the prefixes' base names)
prep=("$bin/nmt-prepare" --config "$cfg:$prepare_section" --src-lang "$src" --tgt-lang "$tgt" --out-dir "$work/smt/data")
if config_has "$x" files; then
  train_prefix=$(under_root "$(config_value "$x" files train)")
  dev_prefix=$(under_root "$(config_value "$x" files dev)")
  mapfile -t test_prefixes < <(config_value "$x" files tests)
  for i in "${!test_prefixes[@]}"; do test_prefixes[i]=$(under_root "${test_prefixes[i]}"); done
  dev=$(basename "$dev_prefix")
  tests=""
  for p in "${test_prefixes[@]}"; do tests="$tests $(basename "$p")"; done
  tests=${tests# }
  train=$(basename "$train_prefix")
  prep+=(--train "$train_prefix" --dev "$dev_prefix" --test "${test_prefixes[@]}")
else
  train=train   # nmt-prepare names a registry corpus's training split `train`
  dev_split=$(config_value "$x" dev)
  mapfile -t test_splits < <(config_value "$x" tests)
  prep+=(--corpus "$(config_value "$x" corpus)" --train-split "$(config_value "$x" train)" --dev-split "$dev_split"
         --test-splits "${test_splits[@]}")
  # a split of another corpus (`newstest:newstest2012`): nmt-prepare names its files after the last `:`
  dev=${dev_split##*:}
  tests=""
  for t_split in "${test_splits[@]}"; do tests="$tests ${t_split##*:}"; done
  tests=${tests# }
fi
# the SMT stages name their files SET.en / SET.fr and detokenize French (recipes/lib): other pairs are refused
[ "$src-$tgt" = en-fr ] || { echo "experiment.sh: $cfg: src $src, tgt $tgt: the SMT stages handle en→fr only for now" >&2; exit 2; }
[ -n "$dev" ] && [ -n "$tests" ] || { echo "experiment.sh: $cfg: the experiment needs a dev set and test sets" >&2; exit 2; }

# the systems → the stages that make them
want() { grep -qxF -- "$1" <<< "$systems"; }
rnn_systems=""
want +RNN && rnn_systems="rnn"
{ want +RNN+WP || want +all || want +all+RNNsearch; } && rnn_systems="$rnn_systems rnnwp"
rnn_systems=${rnn_systems# }
lm_rows=""
for row in "lstm|+LSTM-LM" "rmn|+RMN-LM" "mog|+Mogrifier-LM" "all|+all" "rnnsearch|+RNNsearch" "allrs|+all+RNNsearch"; do
  want "${row#*|}" && lm_rows="$lm_rows ${row%%|*}"
done
lm_rows=${lm_rows# }
while read -r s; do
  case $s in Baseline | +RNN | +RNN+WP | +LSTM-LM | +RMN-LM | +Mogrifier-LM | +all | +RNNsearch | +all+RNNsearch) ;;
    *) echo "experiment.sh: $cfg: unknown system '$s' (Baseline, +RNN, +RNN+WP, +LSTM-LM, +RMN-LM, +Mogrifier-LM," \
            "+all, +RNNsearch, +all+RNNsearch)" >&2; exit 2 ;;
  esac
done <<< "$systems"
filter=$(config_value "$x" filter_table)
if [ $quick = 1 ]; then  # filter_table_quick (optional): the --quick run's own choice
  filter_quick=$(config_value "$x" filter_table_quick 2> /dev/null || true)
  filter=${filter_quick:-$filter}
fi
# truecase: true: the tokenized splits are truecased (nmt-prepare --truecase: truecase-model.<lang>), so the
# phrase table, KenLM, MERT's references and the neural models see truecased text; each stage detruecases
# its output (common.sh evaluate_outputs) before detokenizing and sacreBLEU against the raw, cased references
tc_flags=()
if [ "$(config_value "$x" truecase 2> /dev/null || true)" = True ]; then
  prep+=(--truecase true)
  tc_flags=(--truecase)
fi

echo "== $title"
echo "   config $cfg; work $work"
echo "   scale: $scale"
echo "   data: $src→$tgt, dev $dev, tests $tests; systems: $(paste -sd ' ' <<< "$systems"); $runs MERT run(s)"
[ ${#tc_flags[@]} = 0 ] || echo "   truecased (Moses truecaser), detruecased before scoring"
sets=(--dev "$dev" --tests "$tests")
common=($qflag --config "$cfg" --mert-runs "$runs" --threads "$threads" ${tc_flags[@]+"${tc_flags[@]}"})
stage_times=()
stage() {  # stage NAME CMD...: run CMD (run_cmd: a dry run prints it), note its wall time
  local t0=$SECONDS
  run_cmd "${@:2}"
  stage_times+=("$1: $((SECONDS - t0)) s")
}
start=$SECONDS
[ "${RECIPE_DRY_RUN:-0}" = 1 ] || mkdir -p "$work/smt"
t0=$SECONDS
run_step prepare "$work/smt/data/prepare.json" -- "${prep[@]}"
stage_times+=("prepare: $((SECONDS - t0)) s")
if [ $data_only = 1 ]; then echo "experiment.sh: --data-only: prepared data in $work/smt/data"; exit 0; fi
stage "Baseline (smt_baseline.sh)" bash "$lib/smt_baseline.sh" "${common[@]}" --work "$work/smt" --train "$train" \
  "${sets[@]}"
if [ -n "$rnn_systems" ]; then
  filter_flags=()
  if [ "$filter" = True ]; then
    filter_flags=(--filter-sets "$dev $tests")
  fi
  stage "+RNN (rnn_rescore.sh)" bash "$lib/rnn_rescore.sh" "${common[@]}" --smt-work "$work/smt" --work "$work/rnn" \
    "${sets[@]}" --systems "$rnn_systems" --device "$device" ${filter_flags[@]+"${filter_flags[@]}"}
fi
if { want +RNNsearch || want +all+RNNsearch; } && [ -z "$rnnsearch" ]; then
  rnnsearch=$work/rnnsearch/model
  d=$work/smt/data
  train_rnnsearch() {
    "$bin/nmt-train" --config "$cfg:train_rnnsearch$suffix" --train-src "$d/$train.tok.$src" --train-tgt "$d/$train.tok.$tgt" \
      --dev-src "$d/$dev.tok.$src" --dev-tgt "$d/$dev.tok.$tgt" --src-vocab "$d/vocab.$src.tsv" \
      --tgt-vocab "$d/vocab.$tgt.tsv" --out-dir "$rnnsearch" --threads "$threads" --device "$device" --resume \
      && touch "$rnnsearch/train.done"
  }
  stage "RNNsearch (nmt-train, train_rnnsearch$suffix)" run_step RNNsearch "$rnnsearch/train.done" -- train_rnnsearch
fi
if [ -n "$lm_rows" ]; then
  # lm_corpus: a corpus name of recipes/ptb_lm/run.sh (multi30k-fr, ptb), or `target`: the experiment's own
  # tokenized target side (train / dev / first test set); lm_epochs, lm_max_updates (optional): at most N
  # epochs / updates per LM (not needed when +RNNsearch is the only reranked row); with --quick lm_epochs_quick,
  # lm_max_updates_quick instead (unset: the ptb_lm recipe's quick sizes)
  qkey=$([ $quick = 1 ] && echo _quick || true)
  lm_corpus=$(config_value "$x" lm_corpus 2> /dev/null || true)
  lm_flags=(${lm_corpus:+--lm-corpus "$lm_corpus"})
  if [ "$lm_corpus" = target ]; then
    first_test=${tests%% *}
    lm_valid=$work/smt/data/$dev.tok.$tgt
    lm_test=$work/smt/data/$first_test.tok.$tgt
    if [ $quick = 1 ]; then
      # --quick: perplexity on the dev / test lines the SMT stages use (smt_quick's dev_lines / test_lines), not
      # on the whole sets: at CI scale the full sets' evaluations were most of the LM stage's time
      lm_valid=$(first_lines "$lm_valid" "$(config_value "$cfg:smt$suffix" dev_lines)" "$work/lm_text/valid.txt")
      lm_test=$(first_lines "$lm_test" "$(config_value "$cfg:smt$suffix" test_lines)" "$work/lm_text/test.txt")
    fi
    lm_flags=(--lm-corpus files --lm-text "$work/smt/data/$train.tok.$tgt $lm_valid $lm_test")
  fi
  lm_epochs=$(config_value "$x" "lm_epochs$qkey" 2> /dev/null || true)
  [ -n "$lm_epochs" ] && lm_flags+=(--lm-epochs "$lm_epochs")
  lm_max_updates=$(config_value "$x" "lm_max_updates$qkey" 2> /dev/null || true)
  [ -n "$lm_max_updates" ] && lm_flags+=(--lm-max-updates "$lm_max_updates")
  stage "neural LM rows (lm_rerank.sh)" bash "$lib/lm_rerank.sh" "${common[@]}" --smt-work "$work/smt" \
    --rnn-work "$work/rnn" --lm-work "$work/lm" --work "$work/rerank" "${sets[@]}" --rows "$lm_rows" \
    ${lm_flags[@]+"${lm_flags[@]}"} ${encdec:+--encdec "$encdec"} ${rnnsearch:+--rnnsearch "$rnnsearch"}
fi
table_end=$SECONDS
[ "${RECIPE_DRY_RUN:-0}" = 1 ] && exit 0

# the table: the chosen systems only
sys_flags=()
while read -r s; do
  case $s in
    Baseline) d=$work/smt/tune ;; +RNN) d=$work/rnn/rnn.tune ;; +RNN+WP) d=$work/rnn/rnnwp.tune ;;
    +LSTM-LM) d=$work/rerank/lstm ;; +RMN-LM) d=$work/rerank/rmn ;; +Mogrifier-LM) d=$work/rerank/mog ;;
    +all) d=$work/rerank/all ;; +RNNsearch) d=$work/rerank/rnnsearch ;; +all+RNNsearch) d=$work/rerank/allrs ;;
  esac
  sys_flags+=(--system "$s=$d")
done <<< "$systems"
rm -rf "$work/results"
mkdir -p "$work/results"
# the test sets' significance against the first system (nmt-significance: paired approximate randomization over
# the MERT runs joined); --quick: 200 trials (the suite's budget), else sacreBLEU's 10,000
sig_trials=$([ $quick = 1 ] && echo 200 || echo 10000)
"$py" "$lib/summarize.py" --runs "$runs" --sets "$dev $tests" --out-json "$work/results" "${sys_flags[@]}" \
  --text "$work/smt/text" --significance "$tests" --significance-trials "$sig_trials" > "$work/scores.md"

if [ $make_report = 0 ]; then
  echo "== table: $work/scores.md (--no-report: no report made)"
  cat "$work/scores.md"
  exit 0
fi
echo "== report ($work/report)"
in=$work/report_in
rm -rf "$in"
mkdir -p "$in/perplexity" "$in/models"
cp -r "$work/results" "$in/results"
for m in kenlm lstm-1x128 rm+tM-g mogrifier; do
  for split in valid test; do
    [ -f "$work/lm/$m/$split.json" ] && cp "$work/lm/$m/$split.json" "$in/perplexity/$m.$split.json"
  done
  [ -f "$work/lm/$m/history.json" ] && mkdir -p "$in/models/$m" && cp "$work/lm/$m/history.json" "$in/models/$m/"
done
report=(--experiment-dir "$in" --out "$work/report" --title "$title")
if [ -f "$work/rnn/phrase_model/history.json" ]; then
  mkdir -p "$in/models/phrase_model" && cp "$work/rnn/phrase_model/history.json" "$in/models/phrase_model/"
  # Cho et al. Fig. 4-5: frequent source phrases of 2-4 words (the table's sources with the most target options)
  "$bin/smt-frequent-phrases" --table "$work/smt/model/phrase-table.gz" --output "$in/phrases.txt" \
    --limit "$(config_value "$cfg:smt$suffix" report_phrases 2> /dev/null || echo 200)"
  head -n 3 "$work/smt/text/$dev.$tgt" > "$in/attention_sentences.txt"
  report+=(--phrase-model "$work/rnn/phrase_model" --phrases "$in/phrases.txt" --projection tsne
           --attention-sentences "$in/attention_sentences.txt")
fi
[ -f "$work/rerank/examples.json" ] && cp "$work/rerank/examples.json" "$in/"
[ -d "$work/lm/rm+tM-g" ] && report+=(--rmn-model "$work/lm/rm+tM-g")
"$bin/smt-report" "${report[@]}"
end=$SECONDS
{
  for s in "${stage_times[@]}"; do echo "$s"; done
  echo "table (reused steps take ~0 s): $((table_end - start)) s"
  echo "report: $((end - table_end)) s"
  echo "total: $((end - start)) s"
} | tee "$work/wall_time.txt"
echo "== $title"
echo "scale: $scale"
cat "$work/scores.md"
echo "report: $work/report/report.md (and report.html)"
