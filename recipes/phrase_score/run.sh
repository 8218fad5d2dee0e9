#!/usr/bin/env bash
# The ablation of the RNN phrase score (issue 23; docs/phrase_score.md): rows = the experiment's Baseline plus one
# variant of the phrase-score feature, each tuned by --mert-runs MERT runs with the Baseline's seeds 1..N.
#   recipes/phrase_score/run.sh CONFIG.yaml [--quick] [--work DIR] [--experiment-work DIR] [--rows "a b"]
#                               [--mert-runs N] [--threads N] [--device cpu|cuda[:i]] [--jobs N]
#                               [--stop-after rescore]
# CONFIG's `ablation.experiment` names the experiment config whose Baseline the rows extend; its work folder
# (default work/experiment/<name>[_quick], or --experiment-work) must hold the Baseline (recipes/experiment/run.sh
# runs it). `models` (`models_quick` with --quick): vocab (K words per side, or full), section (the experiment's
# config section of nmt-train settings, default train_phrases; [_quick]) and train (extra nmt-train flags after
# it), trained into WORK/models/NAME; `rows` (`rows_quick`):
# model, reverse_model (its p(f|e) appended too), rescore (extra smt-rescore flags), average (optional: checkpoint
# names, e.g. "epoch1 epoch2": the row scores with their mean: rnn_rescore.sh --average). Each row is
# recipes/lib/rnn_rescore.sh --systems rnn in WORK/ROW (the filtered rescored table, ROW/rnn.tune.R/).
# --jobs N: up to N models train (and then N rows rescore) at once, e.g. on a GPU; --stop-after rescore: stop
# once the rows' tables are written (the MERT runs follow with the same command, which reuses every finished
# step). WORK (default work/phrase_score/<name>[_quick]) gets scores.md (the Baseline and every row, mean ± sd
# over the runs) and wall_time.txt.
source "$(dirname "$0")/../lib/common.sh"
[ $# -ge 1 ] && [ "${1#-}" = "$1" ] || { echo "usage: run.sh CONFIG.yaml [--quick] [--work DIR] [--experiment-work DIR] [--rows \"a b\"] [--mert-runs N] [--threads N] [--device D] [--jobs N] [--stop-after rescore]" >&2; exit 2; }
cfg=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
[ -f "$cfg" ] || { echo "phrase_score/run.sh: no config $cfg" >&2; exit 2; }
quick=0
work=""
exp_work=""
rows=""
runs=""
threads=2
device=cpu
jobs=1
stop_after=""
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --experiment-work | --rows | --device | --jobs | --stop-after)
      [ $# -ge 2 ] || { echo "option $1 needs a value" >&2; exit 2; }
      case "$1" in
        --experiment-work) exp_work=$2 ;; --rows) rows=$2 ;; --device) device=$2 ;; --jobs) jobs=$2 ;;
        --stop-after) stop_after=$2 ;;
      esac
      shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
case $stop_after in "" | rescore) ;; *) echo "phrase_score/run.sh: --stop-after takes 'rescore', not '$stop_after'" >&2; exit 2 ;; esac
quick_suffix
config_load "$cfg"
exp_cfg=$(dirname "$cfg")/$(config_value "$cfg:ablation" experiment)
[ -f "$exp_cfg" ] || { echo "phrase_score/run.sh: $cfg: no experiment config $exp_cfg" >&2; exit 2; }
exp_cfg=$(cd "$(dirname "$exp_cfg")" && pwd)/$(basename "$exp_cfg")
config_load "$exp_cfg"
name=$(basename "$cfg" .yaml)
exp_work=${exp_work:-$root/work/experiment/$(basename "$exp_cfg" .yaml)$suffix}
smt=$exp_work/smt
[ -f "$smt/model/moses.ini" ] && [ -f "$smt/data/prepare.json" ] || \
  { echo "phrase_score/run.sh: no Baseline in $smt: run the experiment recipe on $exp_cfg${suffix:+ (--quick)} first" >&2; exit 2; }
smt=$(cd "$smt" && pwd)
work=$(abs_dir "${work:-$root/work/phrase_score/$name$suffix}")
[ -n "$rows" ] || rows=$(config_value "$cfg:ablation" "rows$suffix")
rows=$(echo $rows)
x=$exp_cfg:experiment
runs=${runs:-$(config_value "$x" mert_runs)}
dev_split=$(config_value "$x" dev)
dev=${dev_split##*:}
tests=""
while read -r t_split; do tests="$tests ${t_split##*:}"; done < <(config_value "$x" tests)
tests=${tests# }
tc=()
[ "$(config_value "$x" truecase 2> /dev/null || true)" != True ] || tc=(--truecase)

value() { config_value "$cfg:$1$suffix" "$2" "$3" 2> /dev/null || true; }  # value models|rows NAME KEY
# the models the rows need, in order of first use
models=""
for row in $rows; do
  config_has "$cfg:rows$suffix" "$row" || { echo "phrase_score/run.sh: $cfg: no row '$row' in rows$suffix" >&2; exit 2; }
  for m in $(value rows "$row" model) $(value rows "$row" reverse_model); do
    config_has "$cfg:models$suffix" "$m" || \
      { echo "phrase_score/run.sh: $cfg: row '$row': no model '$m' in models$suffix" >&2; exit 2; }
    grep -qw -- "$m" <<< "$models" || models="$models $m"
  done
done

train_model() {  # train_model NAME: WORK/models/NAME (log: WORK/models/NAME.log)
  local m=$1 k
  local k section
  k=$(value models "$m" vocab)
  section=$(value models "$m" section)
  phrase_vocab "$smt" "$k" "$work/vocab.$k"
  # shellcheck disable=SC2046  # the train flags are words
  run_step "phrase model $m" "$work/models/$m/train.done" -- train_phrase_model "$exp_cfg:${section:-train_phrases}$suffix" \
    "$smt" "$work/vocab.$k" \
    "$dev" "$work/models/$m" "$threads" "$device" $(value models "$m" train) >> "$work/models/$m.log" 2>&1 \
    || { echo "model $m failed: see $work/models/$m.log" >&2; return 1; }
}
run_row() {  # run_row ROW: the row's rnn_rescore.sh (log: WORK/ROW.log)
  local row=$1 rev
  local args=(--config "$exp_cfg" --smt-work "$smt" --work "$work/$row" --systems rnn --tag "$row"
              --mert-runs "$runs" --threads "$threads" --device "$device" --dev "$dev" --tests "$tests"
              --filter-sets "$dev $tests" --model "$work/models/$(value rows "$row" model)"
              ${tc[@]+"${tc[@]}"} $(quick_flag $quick))
  rev=$(value rows "$row" reverse_model)
  # a row without a reverse model has none (whatever the experiment's smt.phrase_reverse says)
  if [ -n "$rev" ]; then args+=(--reverse-model "$work/models/$rev"); else args+=(--no-reverse); fi
  # the row scores with the mean of these checkpoints (of both models), or none (the experiment's smt.phrase_average)
  args+=(--average "$(value rows "$row" average)")
  # the rows score with the best-by-dev-loss checkpoint (auto), not the experiment's smt.phrase_checkpoint, unless
  # their rescore flags name one (or they average)
  args+=(--checkpoint auto)
  [ -z "$(value rows "$row" rescore)" ] || args+=(--rescore-flags "$(value rows "$row" rescore)")
  [ -z "$stop_after" ] || args+=(--stop-after "$stop_after")
  echo "== row $row: rnn_rescore.sh ${args[*]}"
  bash "$lib/rnn_rescore.sh" "${args[@]}" > "$work/$row.log" 2>&1 || { echo "row $row failed: see $work/$row.log" >&2; return 1; }
}
# in_parallel FUNC ITEM...: FUNC ITEM for each item, up to --jobs at once; false if any failed
in_parallel() {
  local func=$1 item running=0 failed=0 t0
  shift
  for item in "$@"; do
    { t0=$SECONDS; "$func" "$item" && echo "$func $item: $((SECONDS - t0)) s" >> "$work/wall_time.txt"; } &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then wait -n || failed=1; running=$((running - 1)); fi
  done
  while [ $running -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
  return $failed
}
mkdir -p "$work/models"
start=$SECONDS
echo "== models:$models (device $device, $jobs at once)"
# shellcheck disable=SC2086
in_parallel train_model $models || { echo "phrase_score/run.sh: a model failed (logs in $work/models)" >&2; exit 1; }
echo "== rows: $rows"
if [ "$stop_after" = rescore ]; then
  # shellcheck disable=SC2086
  in_parallel run_row $rows || { echo "phrase_score/run.sh: a row failed (logs in $work)" >&2; exit 1; }
  echo "total: $((SECONDS - start)) s" >> "$work/wall_time.txt"
  echo "phrase_score/run.sh: --stop-after rescore: the rows' tables are in $work/ROW/phrase-table.rnn.gz"
  exit 0
fi
for row in $rows; do  # the MERT runs one row after the other (each uses --threads)
  t0=$SECONDS
  run_row "$row" || exit 1
  echo "run_row $row: $((SECONDS - t0)) s" >> "$work/wall_time.txt"
done
echo "total: $((SECONDS - start)) s" >> "$work/wall_time.txt"
echo "== summary over $runs MERT run(s)"
sys_flags=(--system "Baseline=$smt/tune")
for row in $rows; do sys_flags+=(--system "+RNN($row)=$work/$row/rnn.tune"); done
# every row tested against the Baseline on the test sets (nmt-significance: paired approximate randomization over
# the MERT runs joined; 200 trials with --quick, else sacreBLEU's 10,000)
"$py" "$lib/summarize.py" --runs "$runs" --sets "$dev $tests" --out-json "$work/results" "${sys_flags[@]}" \
  --text "$smt/text" --significance "$tests" --significance-trials "$([ "$quick" = 1 ] && echo 200 || echo 10000)" \
  | tee "$work/scores.md"
