#!/usr/bin/env bash
# Target-side neural LMs as log-linear features, by n-best reranking:
#   the Baseline and +RNN+WP systems (recipes/lib/smt_baseline.sh and rnn_rescore.sh: run them first) → for
#   each MERT run r: decode the dev and test sets with its tuned weights into N-best lists → smt-rerank adds
#   ln p(hyp) under the LSTM, RMN and Mogrifier LMs trained on the target-side corpus --lm-corpus
#   (recipes/ptb_lm/run.sh --corpus) and the encoder–decoder's ln p(hyp | source) → MERT on the dev list
#   (seed r, from the run's tuned weights, new features from 0) → reranked 1-best of the test lists →
#   detokenize → sacreBLEU.
# Rows: +LSTM-LM, +RMN-LM, +Mogrifier-LM (Baseline's lists + that LM), +all (the +RNN+WP lists + the three
# LMs + the encoder–decoder), +RNNsearch (Baseline's lists + ln p(hyp | source) under the RNNsearch model given
# by --rnnsearch DIR, in lists of their own: WORK/baseline.rnnsearch.R, made from the Baseline's lists WORK/baseline.R
# when the LM rows decoded them (their LM features dropped), else decoded; no LM is trained for this row alone),
# +all+RNNsearch (the +all lists with RNNsearch's ln p(hyp | source) added: WORK/rnnwp.rnnsearch.R, no new decoding).
#   recipes/lib/lm_rerank.sh --config YAML --smt-work DIR --rnn-work DIR --lm-work DIR --work DIR
#                            --lm-corpus NAME [--quick] [--encdec DIR] [--mert-runs N] [--threads N]
#                            [--lm-text "TRAIN VALID TEST"] [--lm-epochs N] [--lm-max-updates N]
#                            [--nbest N] [--dev SPLIT] [--tests "A B"] [--rows "lstm rmn mog all rnnsearch allrs"]
#                            [--rnnsearch DIR] [--optimizer mert|kbmira|pro] [--prefix-tree true|false]
# --config: the recipe's config (its smt[_quick] section: rerank_nbest, and dev/tests unless given).
# --encdec: the encoder–decoder of the sentence-level feature (default: the phrase model of rnn_rescore.sh).
# --nbest: the list size (default: the config's smt.rerank_nbest, --quick: smt_quick.rerank_nbest).
# --rows: the rows to make (default the first four; +RNN+WP's tuned runs are needed only for `all` and `allrs`).
# --lm-corpus files --lm-text "TRAIN VALID TEST": the LMs on these tokenized target-side files (experiment.sh's
# `lm_corpus: target`: the experiment's own training text and its dev / first test set). --lm-epochs: at most N
# epochs per LM (default: the ptb_lm config's, 15 at the RMN paper's setting); --lm-max-updates: at most N updates.
# --optimizer: how each row's weights are tuned on the dev list (smt-rerank --tune --optimizer; default mert). Any
# other optimiser reuses the lists and writes its rows to WORK/<row>.OPTIMIZER.R and its summary (scores.md,
# results/, examples.*) to WORK/by_optimizer/OPTIMIZER/: MERT, kbMIRA and PRO compared on the same n-best lists.
# --prefix-tree: the neural features read each sentence's n-best list over its prefix tree, each shared prefix once
# (smt-rerank --prefix-tree; default: the config's smt.rerank_prefix_tree, else true: the same values up to float
# rounding, 2-4x faster, docs/rerank_report.md); false: every hypothesis whole, as the tables before 2026-12-07 were made.
# Used by recipes/lib/experiment.sh and recipes/multi30k_enfr/lm_rerank.sh.
# Outputs: WORK/{baseline,rnnwp}.R/*.nbest(.feat.gz), WORK/<row>.R/*, WORK/scores.md, WORK/examples.md,
#   WORK/results/*.json (the smt-report layout). Reruns reuse finished steps.
source "$(dirname "$0")/common.sh"
quick=0
smt=""
rnn=""
lmw=""
work=""
encdec=""
rnnsearch=""
runs=3
threads=2
nbest=""
cfg=""
dev=""
tests=""
rows="lstm rmn mog all"
lm_corpus=""
lm_text=""
lm_epochs=""
lm_max_updates=""
optimizer=mert
prefix_tree=""
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --smt-work) smt=$2; shift ;;
    --rnn-work) rnn=$2; shift ;;
    --lm-work) lmw=$2; shift ;;
    --encdec) encdec=$2; shift ;;
    --rnnsearch) rnnsearch=$2; shift ;;
    --nbest) nbest=$2; shift ;;
    --config) cfg=$2; shift ;;
    --dev) dev=$2; shift ;;
    --tests) tests=$2; shift ;;
    --rows) rows=$2; shift ;;
    --lm-corpus) lm_corpus=$2; shift ;;
    --lm-text) lm_text=$2; shift ;;
    --lm-epochs) lm_epochs=$2; shift ;;
    --lm-max-updates) lm_max_updates=$2; shift ;;
    --optimizer) optimizer=$2; shift ;;
    --prefix-tree) prefix_tree=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
# the neural LMs are needed by every row but +RNNsearch
need_lms=0
grep -qwE "lstm|rmn|mog|all|allrs" <<< "$rows" && need_lms=1
[ -n "$cfg" ] && [ -n "$smt" ] && [ -n "$rnn" ] && [ -n "$lmw" ] && [ -n "$work" ] || \
  { echo "lm_rerank.sh: give --config, --smt-work, --rnn-work, --lm-work and --work" >&2; exit 2; }
[ $need_lms = 0 ] || [ -n "$lm_corpus" ] || { echo "lm_rerank.sh: give --lm-corpus (rows $rows)" >&2; exit 2; }
if grep -qwE "rnnsearch|allrs" <<< "$rows"; then
  [ -n "$rnnsearch" ] || { echo "lm_rerank.sh: the rnnsearch and allrs rows need --rnnsearch DIR (an nmt-train model)" >&2; exit 2; }
fi
case $optimizer in mert) osuffix="" ;; kbmira | pro) osuffix=.$optimizer ;;
  *) echo "lm_rerank.sh: --optimizer must be mert, kbmira or pro, not '$optimizer'" >&2; exit 2 ;;
esac
quick_suffix
config_load "$cfg"
prefix_tree=${prefix_tree:-$(config_value "$cfg:smt$suffix" rerank_prefix_tree 2> /dev/null || true)}
prefix_tree=${prefix_tree:-true}
case ${prefix_tree,,} in true | false) prefix_tree=${prefix_tree,,} ;;
  *) echo "lm_rerank.sh: --prefix-tree (smt.rerank_prefix_tree) must be true or false, not '$prefix_tree'" >&2; exit 2 ;;
esac
nbest=${nbest:-$(config_value "$cfg:smt$suffix" rerank_nbest)}
dev=${dev:-$(config_value "$cfg:smt$suffix" dev)}
tests=${tests:-$(config_value "$cfg:smt$suffix" tests)}
need=("$smt/tune.1/moses.tuned.ini")
grep -qwE "all|allrs" <<< "$rows" && need+=("$rnn/rnnwp.tune.1/moses.tuned.ini")
for f in "${need[@]}"; do
  [ -f "$f" ] || { echo "lm_rerank.sh: no $f: run smt_baseline.sh and rnn_rescore.sh first" >&2; exit 1; }
done
work=$(abs_dir "$work")
out=$work
[ -z "$osuffix" ] || out=$work/by_optimizer/$optimizer
mkdir -p "$out/results"
smt=$(cd "$smt" && pwd)
rnn=$(abs_dir "$rnn")
start=$(date +%s)
qflag=$(quick_flag $quick)
models="lstm-1x128 rm+tM-g mogrifier"

encdec=${encdec:-$rnn/phrase_model}
t=$smt/text

if [ $need_lms = 1 ]; then
  echo "== neural LMs on $lm_corpus ($lmw)"
  t0=$(date +%s)
  lm_data=()
  if [ "$lm_corpus" = files ]; then
    read -r lm_train lm_valid lm_test <<< "$lm_text"
    [ -n "$lm_test" ] || { echo "lm_rerank.sh: --lm-corpus files needs --lm-text \"TRAIN VALID TEST\"" >&2; exit 2; }
    lm_data=(--train-text "$lm_train" --valid-text "$lm_valid" --test-text "$lm_test")
  fi
  run_step "neural LMs" "$lmw/table.md" -- bash "$root/recipes/ptb_lm/run.sh" $qflag --corpus "$lm_corpus" --models "$models" \
    --threads "$threads" --work "$lmw" ${lm_data[@]+"${lm_data[@]}"} ${lm_epochs:+--epochs "$lm_epochs"} \
    ${lm_max_updates:+--max-updates "$lm_max_updates"}
  echo "language models: $(( $(date +%s) - t0 )) s"
fi
lm_flags=(--lm "LSTM0=$lmw/lstm-1x128" "RMN0=$lmw/rm+tM-g" "MOG0=$lmw/mogrifier")

# the n-best lists and their features: baseline (+ the LMs), rnnwp (+ the LMs and the encoder–decoder),
# rnnwp.rnnsearch (rnnwp's lists + RNNsearch's ln p(hyp | source)), baseline.rnnsearch (+ RNNsearch's only)
sets="$dev $tests"
# tuned_ini BASE R: sets ini to the tuned moses.ini the BASE lists of run R come from (+RNN+WP's or the Baseline's)
tuned_ini() { case $1 in rnnwp*) ini=$rnn/rnnwp.tune.$2/moses.tuned.ini ;; *) ini=$smt/tune.$2/moses.tuned.ini ;; esac; }
bases=""
grep -qwE "lstm|rmn|mog" <<< "$rows" && bases=baseline
grep -qwE "all|allrs" <<< "$rows" && bases="$bases rnnwp"
grep -qw allrs <<< "$rows" && bases="$bases rnnwp.rnnsearch"
grep -qw rnnsearch <<< "$rows" && bases="$bases baseline.rnnsearch"
# rerank_lists TRIPLES FLAG...: smt-rerank on NBEST SRC OUTPUT triples (the first as --nbest, the rest --also)
rerank_lists() {
  local n=$1
  shift
  local lists=("${@:1:n}")
  shift "$n"
  [ "$n" -gt 0 ] || return 0
  local more=()
  [ "$n" -gt 3 ] && more=(--also "${lists[@]:3}")
  "$bin/smt-rerank" --nbest "${lists[0]}" --src "${lists[1]}" --output "${lists[2]}" ${more[@]+"${more[@]}"} "$@" \
    --threads "$threads" --prefix-tree "$prefix_tree"
}
for base in $bases; do
  for r in $(seq 1 "$runs"); do
    d=$work/$base.$r
    mkdir -p "$d"
    features=("${lm_flags[@]}")
    [ $base = rnnwp ] && features+=(--encdec "RNN0=$encdec")
    [ $base = baseline.rnnsearch ] && features=(--encdec "RNNS0=$rnnsearch")
    # the sets' lists are scored by one smt-rerank call per kind of list (its --also: the models loaded once)
    added=() reused=() decoded=()
    for s in $sets; do
      [ -f "$d/$s.nbest.feat.gz" ] && continue
      if [ $base = rnnwp.rnnsearch ]; then
        echo "== $base run $r: $s: RNNsearch's ln p(hyp | source) added to the rnnwp list"
        added+=("$work/rnnwp.$r/$s.nbest.feat.gz" "$t/$s.en" "$d/$s.nbest.feat.gz")
      elif [ $base = baseline.rnnsearch ] && [ -f "$work/baseline.$r/$s.nbest.feat.gz" ]; then
        # the Baseline's list of the same run is already decoded (for the LM rows): the same hypotheses, its LM
        # features dropped and RNNsearch's added, instead of decoding it again
        echo "== $base run $r: $s: RNNsearch's ln p(hyp | source) added to the baseline list (its LM features dropped)"
        reused+=("$work/baseline.$r/$s.nbest.feat.gz" "$t/$s.en" "$d/$s.nbest.feat.gz")
      else
        tuned_ini "$base" "$r"
        echo "== $base run $r: $s $nbest-best list and its neural features"
        "$bin/smt-decode" --moses-ini "$ini" --input "$t/$s.en" --output "$d/$s.1best" \
          --n-best-list "$d/$s.nbest" "$nbest" --threads "$threads" --progress false
        decoded+=("$d/$s.nbest" "$t/$s.en" "$d/$s.nbest.feat.gz")
      fi
    done
    rerank_lists ${#added[@]} ${added[@]+"${added[@]}"} --encdec "RNNS0=$rnnsearch"
    rerank_lists ${#reused[@]} ${reused[@]+"${reused[@]}"} --drop LSTM0 RMN0 MOG0 --encdec "RNNS0=$rnnsearch"
    rerank_lists ${#decoded[@]} ${decoded[@]+"${decoded[@]}"} "${features[@]}"
    for ((i = 0; i < ${#decoded[@]}; i += 3)); do rm -f "${decoded[i]}"; done
  done
done

# row: name base dropped-features
row_specs=("lstm|+LSTM-LM|baseline|RMN0 MOG0" "rmn|+RMN-LM|baseline|LSTM0 MOG0" "mog|+Mogrifier-LM|baseline|LSTM0 RMN0"
      "all|+all|rnnwp|" "rnnsearch|+RNNsearch|baseline.rnnsearch|" "allrs|+all+RNNsearch|rnnwp.rnnsearch|")
sys_flags=(--system "Baseline=$smt/tune")
[ -f "$rnn/rnn.tune.1/moses.tuned.ini" ] && sys_flags+=(--system "+RNN=$rnn/rnn.tune")
[ -f "$rnn/rnnwp.tune.1/moses.tuned.ini" ] && sys_flags+=(--system "+RNN+WP=$rnn/rnnwp.tune")
for row in "${row_specs[@]}"; do
  IFS='|' read -r key name base drop <<< "$row"
  grep -qw "$key" <<< "$rows" || continue
  [ -z "$osuffix" ] || name="$name ($optimizer)"
  sys_flags+=(--system "$name=$work/$key$osuffix")
  for r in $(seq 1 "$runs"); do
    src=$work/$base.$r
    d=$work/$key$osuffix.$r
    mkdir -p "$d"
    tuned_ini "$base" "$r"
    dflag=()
    [ -n "$drop" ] && dflag=(--drop $drop)
    [ -f "$d/weights" ] || echo "== $name run $r: $optimizer on the $dev $nbest-best list"
    run_step "$name run $r: $optimizer" "$d/weights" -- "$bin/smt-rerank" --nbest "$src/$dev.nbest.feat.gz" \
      --src "$t/$dev.en" ${dflag[@]+"${dflag[@]}"} --tune --optimizer "$optimizer" --ref "$t/$dev.fr" --weights "$ini" \
      --weights-out "$d/weights" --seed "$r" --one-best "$d/$dev.tok.fr"
    scored=()
    for s in $sets; do
      fresh "$d/$s.scores.json" "$d/weights" && continue
      [ "$s" = "$dev" ] || "$bin/smt-rerank" --nbest "$src/$s.nbest.feat.gz" --src "$t/$s.en" ${dflag[@]+"${dflag[@]}"} \
        --weights "$d/weights" --one-best "$d/$s.tok.fr"
      scored+=("$d/$s.tok.fr" "$d/$s.fr" "$t/$s.ref.fr" "$name run $r $s" "$d/$s.scores.json")
    done
    [ ${#scored[@]} = 0 ] || evaluate_outputs "${scored[@]}"  # common.sh
  done
done

echo "== summary over $runs MERT run(s)"
"$py" "$lib/summarize.py" --runs "$runs" --sets "$sets" --out-json "$out/results" "${sys_flags[@]}" \
  | tee "$out/scores.md"
last=${sys_flags[-1]}
"$py" "$lib/summarize.py" --examples --text "$t" --run 1 --limit 8 \
  --set "${tests%% *}" --system "Baseline=$smt/tune" --system "$last" --json "$out/examples.json" > "$out/examples.md"
echo "total $(( $(date +%s) - start )) s; outputs in $work"
