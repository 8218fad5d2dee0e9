# The preamble every recipe sources: strict mode, paths, option helpers, reuse of finished steps.
#   source "$(dirname "$0")/../lib/common.sh"
# Sets: here (the calling script's folder), root (the repository), lib (this folder), MT_DATA (exported;
# default ../shared/data beside the repository), bin (console scripts: $BIN or .venv/bin), py ($PYTHON or
# $bin/python), suffix (filled by quick_suffix).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$lib/../.." && pwd)
export MT_DATA=${MT_DATA:-$root/../shared/data}
bin=${BIN:-$root/.venv/bin}
py=${PYTHON:-$bin/python}

# unknown_option OPT: the one refusal of an option a recipe does not know (exit 2).
unknown_option() { echo "unknown option $1" >&2; exit 2; }

# common_option OPT [VALUE]: the options every recipe shares: --quick, --work DIR, --mert-runs N, --threads N,
# --truecase (they set quick, work, runs, threads, truecase). Sets `taken` to the words it used (1 or 2); false
# for any other option.
#   while [ $# -gt 0 ]; do if common_option "$@"; then shift "$taken"; continue; fi; case "$1" in ...
common_option() {
  case "$1" in
    --quick) quick=1; taken=1 ;;
    --truecase) truecase=1; taken=1 ;;  # the data is truecased (nmt-prepare --truecase): detruecase before scoring
    --work | --mert-runs | --threads)
      [ $# -ge 2 ] || { echo "option $1 needs a value" >&2; exit 2; }
      case "$1" in --work) work=$2 ;; --mert-runs) runs=$2 ;; --threads) threads=$2 ;; esac
      taken=2 ;;
    *) return 1 ;;
  esac
}

# quick_suffix: sets suffix to _quick when quick is 1, else empty (work folders, config sections).
quick_suffix() { if [ "$quick" = 1 ]; then suffix=_quick; else suffix=""; fi; }

# quick_flag QUICK: prints --quick when QUICK is 1 (to pass the scale on to another stage).
quick_flag() { if [ "$1" = 1 ]; then echo --quick; fi; }

# abs_dir DIR: creates DIR and prints its absolute path.
abs_dir() { mkdir -p "$1" && (cd "$1" && pwd); }

# config_value FILE[:SECTION] KEY... | config_value --flags FILE:SECTION: one value of a recipe's config.yaml
# (lists: one item a line), or a section as flags (recipes/lib/config_value.py says how). A FILE read by
# config_load is answered from memory, the same text and the same refusal, without a Python process.
declare -A _config=()
config_value() {
  local flags=0
  _config_missing=""
  [ "$1" = --flags ] && [ $# = 2 ] && flags=1
  # config_value.py's own answer: FILE not loaded, a usage error, a section's value, a value's flags
  if [ $flags = 1 ] && _config_node "$2" && [ "${_config_text:0:2}" = $'\x1e=' ]; then
    printf '%s' "${_config_text:2}"
  elif [ $flags = 0 ] && [ $# -ge 2 ] && [ "${1:0:1}" != - ] && _config_node "$@" && \
       [ "${_config_text:0:1}" != $'\x1e' ]; then
    printf '%s' "$_config_text"
  elif [ "${_config_missing:-}" ]; then
    echo "$_config_missing" >&2
    return 1
  else
    "$py" "$lib/config_value.py" "$@"
  fi
}

# config_has FILE[:SECTION] KEY...: status 0 when FILE has that value or section, 1 when it has not.
config_has() {
  if _config_node "$@"; then return 0; fi
  [ -z "${_config_missing:-}" ] || return 1
  config_value "$@" > /dev/null 2>&1
}

# _config_node FILE[:SECTION] KEY...: status 0 with the node's record of a loaded FILE in _config_text (a section:
# \x1e, then "=" and its flags or "?"); 1 with config_value.py's refusal in _config_missing when a key is not
# there; 1 with _config_missing empty when FILE is not loaded.
_config_node() {
  local spec=$1 file=${1%%:*} section=${1#*:} key path where="the file"
  shift
  [ "$section" != "$spec" ] || section=""
  _config_missing=""
  _config_text=""
  [ -n "${_config[$file]+x}" ] || return 1
  path=$file
  for key in ${section:+"$section"} "$@"; do
    if [ "${_config[$path]:0:1}" != $'\x1e' ] || [ -z "${_config[$path$'\x1f'$key]+x}" ]; then
      _config_missing="config_value.py: $file: no $key in $where"
      return 1
    fi
    path=$path$'\x1f'$key
    where=$key
  done
  _config_text=${_config[$path]}
}

# config_load FILE: reads FILE once (one Python process: config_value.py --dump), so that config_value and
# config_has answer from memory in this shell and in the subshells it starts ($(config_value ...)). For a
# recipe's own config: an input that does not change during the run. Stops (status 1, config_value.py's one
# line) when FILE can't be read.
config_load() {
  [ -z "${_config[$1]+x}" ] || return 0
  local key text whole=0
  local -A read_now=()
  while IFS= read -r -d '' key && IFS= read -r -d '' text; do
    if [ "$key" = $'\x1f'end ]; then whole=1; break; fi
    read_now[$key]=$text
  done < <("$py" "$lib/config_value.py" --dump "$1")
  [ $whole = 1 ] || return 1
  for key in "${!read_now[@]}"; do _config[$key]=${read_now[$key]}; done
}

# run_cmd CMD...: run CMD. RECIPE_TRACE=1 (a shell variable of the recipe, not exported): print it first,
# shell-quoted after "+"; RECIPE_DRY_RUN=1: print it and run nothing.
run_cmd() {
  if [ "${RECIPE_TRACE:-0}" = 1 ] || [ "${RECIPE_DRY_RUN:-0}" = 1 ]; then printf '+'; printf ' %q' "$@"; printf '\n'; fi
  [ "${RECIPE_DRY_RUN:-0}" = 1 ] || "$@"
}

# run_step NAME OUTPUT -- CMD...: run CMD (as run_cmd) unless OUTPUT exists: a finished step is reused, not
# redone (RECIPE_TRACE=1 says so; a dry run prints the command anyway). NAME says what the step makes.
run_step() {
  local name=$1 output=$2
  shift 2
  [ "${1:-}" = -- ] || { echo "run_step $name: expected -- before the command" >&2; exit 2; }
  shift
  if [ -e "$output" ]; then
    if [ "${RECIPE_TRACE:-0}" = 1 ] || [ "${RECIPE_DRY_RUN:-0}" = 1 ]; then echo "  (done: $output exists; skipped)"; fi
    if [ "${RECIPE_DRY_RUN:-0}" = 1 ]; then printf '+'; printf ' %q' "$@"; printf '\n'; fi
    return 0
  fi
  run_cmd "$@"
}

# evaluate_outputs HYP OUT REF NAME JSON [HYP OUT REF NAME JSON ...]: nmt-evaluate on each Moses-tokenized French
# output HYP, detokenized into OUT, against the raw references REF (the scores in JSON, NAME on the line printed),
# all in one process (evaluate_sets.py: nmt-evaluate's cli_main per set; sacremoses is imported once). With
# truecase=1 (set by --truecase) HYP is detruecased first (nmt-evaluate --detruecase: Moses's detruecase.perl, each
# sentence's first letter uppercased), so that sacreBLEU sees properly cased text.
evaluate_outputs() {
  local tc=()
  [ "${truecase:-0}" = 1 ] && tc=(--detruecase)
  "$py" "$lib/evaluate_sets.py" ${tc[@]+"${tc[@]}"} "$@"
}

# first_lines FILE N OUT: prints FILE when N is empty or 0 (every line), else OUT, written (atomically, once)
# with FILE's first N lines. A dry run (RECIPE_DRY_RUN=1) writes nothing and prints OUT.
first_lines() {
  if [ -z "$2" ] || [ "$2" = 0 ]; then echo "$1"; return 0; fi
  if [ "${RECIPE_DRY_RUN:-0}" != 1 ] && [ ! -f "$3" ]; then
    mkdir -p "$(dirname "$3")"
    head -n "$2" "$1" > "$3.tmp" && mv "$3.tmp" "$3"
  fi
  echo "$3"
}

# fresh OUTPUT INPUT: true when OUTPUT exists and is newer than INPUT (scores of the current weights).
fresh() { [ -f "$1" ] && [ "$1" -nt "$2" ]; }

# binarize_step TABLE: TABLE.bin, the binarized sidecar smt-decode then memory-maps instead of reading TABLE
# (same translations and n-best lists; docs/decoder.md), when smt-binarize-table is installed. Reused while
# newer than TABLE; an older one (TABLE rewritten since) is removed and rebuilt, as smt-decode refuses it.
binarize_step() {
  [ -x "$bin/smt-binarize-table" ] || return 0
  if [ "${RECIPE_DRY_RUN:-0}" != 1 ] && [ -e "$1.bin" ] && ! fresh "$1.bin" "$1"; then rm -f "$1.bin"; fi
  run_step "binarized table" "$1.bin" -- "$bin/smt-binarize-table" --table "$1" --progress false
}

# tune_decode_evaluate --label L --moses-ini INI --work-dir TUNE --seed R --text T --dev DEV --tests "A B"
#                      --threads N [--tune-flags FLAG... --] [--decode-flags FLAG... --]
# One MERT run and its scores: smt-tune (reused when TUNE/moses.tuned.ini exists) → for the dev set and each
# test set: smt-decode with the tuned weights; then nmt-evaluate of them all in one process (evaluate_outputs;
# --truecase: detruecased first; detokenized French against T/SET.ref.fr) →
# TUNE/SET.{tok.fr,fr,scores.json} (reused while newer than the tuned weights). L prefixes the log lines and
# the score names ("L run R SET"). Needs $bin.
tune_decode_evaluate() {
  local label="" ini="" tune="" seed="" text="" dev="" tests="" threads="" t0 s hyp scored
  local tune_flags=() decode_flags=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --label) label=$2; shift ;;
      --moses-ini) ini=$2; shift ;;
      --work-dir) tune=$2; shift ;;
      --seed) seed=$2; shift ;;
      --text) text=$2; shift ;;
      --dev) dev=$2; shift ;;
      --tests) tests=$2; shift ;;
      --threads) threads=$2; shift ;;
      --tune-flags) shift; while [ $# -gt 0 ] && [ "$1" != -- ]; do tune_flags+=("$1"); shift; done ;;
      --decode-flags) shift; while [ $# -gt 0 ] && [ "$1" != -- ]; do decode_flags+=("$1"); shift; done ;;
      *) echo "tune_decode_evaluate: unknown option $1" >&2; exit 2 ;;
    esac
    shift
  done
  echo "== ${label:+$label: }MERT run $seed (seed $seed)"
  t0=$(date +%s)
  run_step "MERT run $seed" "$tune/moses.tuned.ini" -- "$bin/smt-tune" --moses-ini "$ini" --dev-src "$text/$dev.en" \
    --dev-ref "$text/$dev.fr" --work-dir "$tune" --seed "$seed" --threads "$threads" --resume \
    ${tune_flags[@]+"${tune_flags[@]}"}
  echo "${label:+$label }MERT run $seed: $(( $(date +%s) - t0 )) s"
  scored=()
  for s in $dev $tests; do   # the dev set too: the dev column (the tuning set itself)
    fresh "$tune/$s.scores.json" "$tune/moses.tuned.ini" && continue
    "$bin/smt-decode" --moses-ini "$tune/moses.tuned.ini" --input "$text/$s.en" --output "$tune/$s.tok.fr" \
      --threads "$threads" --progress false ${decode_flags[@]+"${decode_flags[@]}"}
    scored+=("$tune/$s.tok.fr" "$tune/$s.fr" "$text/$s.ref.fr" "${label:+$label }run $seed $s" "$tune/$s.scores.json")
  done
  [ ${#scored[@]} = 0 ] || evaluate_outputs "${scored[@]}"
}

# phrase_vocab SMT K DIR: DIR/vocab.{en,fr}.tsv, the phrase model's vocabularies: the 4 special symbols, then the K
# most frequent words of SMT/data/vocab.LANG.tsv (the prepare step's; K = full: every word).
phrase_vocab() {
  local k=$2 l
  [ "$k" != full ] || k=1000000000
  mkdir -p "$3"
  for l in en fr; do
    awk -v k="$k" 'NR <= 4 && /^</ { print; next } n < k { print; n++ }' "$1/data/vocab.$l.tsv" > "$3/vocab.$l.tsv"
  done
}

# average_checkpoints MODEL_DIR "NAMES": the step that writes MODEL_DIR/checkpoint_avg_NAME_NAME....pt, the mean of
# the model's checkpoints NAMES (best, last, epochN; nmt-average-checkpoints), reused when it exists; sets
# `averaged` to its path.
average_checkpoints() {
  local names
  averaged=$1/checkpoint_avg_${2// /_}.pt
  read -r -a names <<< "$2"
  run_step "averaged checkpoints" "$averaged" -- "$bin/nmt-average-checkpoints" --model "$1" --inputs "${names[@]}" \
    --output "$averaged"
}

# train_phrase_model CFG:SECTION SMT VOCAB_DIR DEV OUT THREADS DEVICE [FLAG...]: the RNN Encoder–Decoder on the
# unique pairs of SMT/model/phrase-table.gz (Cho et al. 2014 §3.1; nmt-train with the config section, then FLAG...;
# dev loss on SMT/data/DEV.tok.*), into OUT, marked finished by OUT/train.done; --resume continues a killed run.
train_phrase_model() {
  local section=$1 smt=$2 vocab_dir=$3 dev=$4 out=$5 threads=$6 device=$7
  shift 7
  "$bin/nmt-train" --config "$section" --data-dir "$smt/data" \
    --src-vocab "$vocab_dir/vocab.en.tsv" --tgt-vocab "$vocab_dir/vocab.fr.tsv" \
    --dev-src "$smt/data/$dev.tok.en" --dev-tgt "$smt/data/$dev.tok.fr" \
    --phrase-table "$smt/model/phrase-table.gz" --out-dir "$out" --threads "$threads" --device "$device" --resume \
    "$@" && touch "$out/train.done"
}
