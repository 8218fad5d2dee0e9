#!/usr/bin/env bash
# Cho et al. (2014) §5.1 at full scale: WMT'14 English→French, for a machine with internet access and a GPU.
# Documented and dry-run tested only: it has never been run here (no internet, no GPU). docs/wmt14_enfr.md.
#   recipes/wmt14_enfr/run.sh [--work DIR] [--mert-runs N] [--threads N] [--device cuda|cpu]
#                             [--select-words N] [--quick] [--dry-run] [--download-only] [--data-only]
# Stages (each reused when its output exists; WORK defaults to work/wmt14_enfr):
#   1 download   Europarl v7, Common Crawl, UN, News Commentary v9, 10^9 (giga-fren), dev.tgz, test-full.tgz
#                from statmt.org into $MT_CACHE/wmt14 (default ~/.cache/rnnsmt/wmt14), a temp file then renamed;
#                files already there are skipped. WMT14_URL_BASE=URL fetches BASE/NAME instead (a mirror).
#   2 extract    the en-fr members → WORK/extract
#   3 dev/test   newstest2012+2013 (tuning and data selection) and newstest2014 (test): SGML → raw text
#   4 pool       the five corpora concatenated → WORK/corpus/pool.{en,fr} (+ pool.json: pairs and words)
#   5 selection  bilingual cross-entropy difference against newstest2012+2013 (select_data.py) down to
#                --select-words French words (default 348000000: the paper's 348M; 0 = keep the whole pool)
#   6 prepare    nmt-prepare (config.yaml:prepare: Moses tokenization, 15,000-word vocabularies) → WORK/smt/data
#   7 baseline   recipes/lib/smt_baseline.sh: eflomal, phrase table, KenLM 5-gram, N MERT runs (config.yaml:smt)
#   8 RNN        nmt-train (config.yaml:train_phrases: cho2014, Adadelta, 64 pairs/update) on the table's
#                unique pairs, on --device → WORK/rnn/phrase_model
#   9 rescore    smt-rescore --device: p_rnn(e|f) and WP for every pair of the table
#  10 MERT       recipes/lib/rnn_rescore.sh --model (+RNN, +RNN+WP; N MERT runs each; scores.md)
# --dry-run: print every stage and command with resolved paths, download and run nothing, exit 0.
# --download-only: stop after stage 1. --data-only: stop after stage 6 (e.g. prepare on a CPU machine).
# --quick: plumbing check on the real data (no selection, the first 20,000 pairs, the `--quick` scale of
#   smt_baseline.sh / rnn_rescore.sh: config.yaml:smt_quick, train_phrases_quick); its figures mean nothing.
# --threads: CPU threads/processes for every stage. --device: nmt-train and smt-rescore (default cuda).
source "$(dirname "$0")/../lib/common.sh"
work=""
runs=3
threads=2
device=cuda
select_words=348000000
quick=0
dry=0
stop=""
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --device) device=$2; shift ;;
    --select-words) select_words=$2; shift ;;
    --dry-run) dry=1 ;;
    --download-only) stop=download ;;
    --data-only) stop=data ;;
    -h|--help) sed -n '2,/^source /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
case $device in cpu|cuda|cuda:*) ;; *) echo "--device must be cpu or cuda[:i], not $device" >&2; exit 2 ;; esac
quick_suffix
work=${work:-$root/work/wmt14_enfr$suffix}
case $work in /*) ;; *) work=$PWD/$work ;; esac
cache=${MT_CACHE:-$HOME/.cache/rnnsmt}/wmt14
py=$bin/python
cfg=$here/config.yaml
# the set names come from the config (experiment.files: plain PREFIX.LANG files under WORK/corpus/wmt14_enfr);
# stage 3 fills them from the WMT release's SGML files newstest2012+2013 (dev) and newstest2014 (test)
dev=$(basename "$(config_value "$cfg:experiment" files dev)")
tests=$(config_value "$cfg:experiment" files tests)
[ "$(wc -w <<< "$tests")" = 1 ] || { echo "wmt14_enfr/run.sh: $cfg: experiment.files.tests must name one set (newstest2014's)" >&2; exit 2; }
tests=$(basename "$tests")
ex=$work/extract
corpus=$work/corpus
files=$corpus/wmt14_enfr
smt=$work/smt
qflag=()
if [ $quick = 1 ]; then
  qflag=(--quick); select_words=0   # config.yaml:prepare_quick keeps the first 20,000 pairs
fi

# run_cmd / run_step (recipes/lib/common.sh) print every command; --dry-run: print only, run nothing.
RECIPE_TRACE=1
RECIPE_DRY_RUN=$dry
stage() { echo "== $*"; }

echo "wmt14_enfr: work $work, cache $cache, device $device, $runs MERT run(s), $threads thread(s)$(
  [ $quick = 1 ] && echo ', QUICK' || true)$([ $dry = 1 ] && echo ', DRY RUN (nothing is downloaded or run)' || true)"
start=$(date +%s)

stage "1. download the WMT'14 files into $cache"
printf '+ %q %q download --cache %q\n' "$py" "$here/wmt14.py" "$cache"
if [ $dry = 1 ]; then "$py" "$here/wmt14.py" download --cache "$cache" --dry-run
else "$py" "$here/wmt14.py" download --cache "$cache"; fi
if [ "$stop" = download ]; then echo "wmt14_enfr: --download-only: done"; exit 0; fi

if [ $dry = 0 ] && [ "$device" != cpu ] && [ "$stop" != data ] && \
   ! "$py" "$here/wmt14.py" cuda; then
  echo "wmt14_enfr: --device $device but torch sees no CUDA device; use --device cpu (slow) or --data-only" >&2
  exit 1
fi
[ $dry = 1 ] || mkdir -p "$work"

stage "2. extract the en-fr members into $ex"
run_cmd "$py" "$here/wmt14.py" extract --cache "$cache" --out "$ex"

stage "3. tuning set ($dev) and test set ($tests): SGML → raw text in $files"
run_cmd "$py" "$here/wmt14.py" sgm --out "$files/$dev.en" "$ex"/dev/newstest201{2,3}-src.en.sgm
run_cmd "$py" "$here/wmt14.py" sgm --out "$files/$dev.fr" "$ex"/dev/newstest201{2,3}-ref.fr.sgm
run_cmd "$py" "$here/wmt14.py" sgm --out "$files/$tests.en" "$ex/test-full/newstest2014-fren-src.en.sgm"
run_cmd "$py" "$here/wmt14.py" sgm --out "$files/$tests.fr" "$ex/test-full/newstest2014-fren-ref.fr.sgm"

stage "4. concatenate the five parallel corpora → $corpus/pool.{en,fr}"
run_cmd "$py" "$here/wmt14.py" concat --extract "$ex" --out-dir "$corpus"

if [ "$select_words" -gt 0 ]; then
  stage "5. data selection (bilingual cross-entropy difference vs $dev) down to $select_words French words"
  run_cmd "$py" "$here/select_data.py" --pool-src "$corpus/pool.en" --pool-tgt "$corpus/pool.fr" \
    --in-src "$files/$dev.en" --in-tgt "$files/$dev.fr" --out-src "$files/train.en" --out-tgt "$files/train.fr" \
    --work "$work/select" --words "$select_words" --count-side tgt --processes "$threads"
else
  stage "5. no data selection: the whole pool is the training set"
  run_cmd ln -sfn ../pool.en "$files/train.en"
  run_cmd ln -sfn ../pool.fr "$files/train.fr"
fi

stage "6-10. the generic experiment recipe on these files (config.yaml: experiment, prepare, smt, train_phrases)"
if [ $dry = 0 ] && [ -f "$smt/data/prepare.json" ] && [ "$files/train.en" -nt "$smt/data/prepare.json" ]; then
  echo "wmt14_enfr: $files/train.en is newer than $smt/data/prepare.json (other selection settings?);" \
    "the later stages would reuse outputs of the old data: use a new --work" >&2
  exit 1
fi
# recipes/lib/experiment.sh: prepare (nmt-prepare on the plain files) → smt_baseline.sh → rnn_rescore.sh (the
# phrase model on the table's unique pairs and smt-rescore on --device, +RNN and +RNN+WP) → scores.md, report
exp_flags=(${qflag[@]+"${qflag[@]}"} --work "$work" --files-root "$files" --mert-runs "$runs" --threads "$threads"
           --device "$device")
[ "$stop" = data ] && exp_flags+=(--data-only)
printf '+'; printf ' %q' bash "$lib/experiment.sh" "$cfg" "${exp_flags[@]}"; printf '\n'
# a dry run: experiment.sh prints its own stages' commands and runs none of them
RECIPE_DRY_RUN=$dry bash "$lib/experiment.sh" "$cfg" "${exp_flags[@]}"
if [ "$stop" = data ]; then exit 0; fi

if [ $dry = 1 ]; then echo "wmt14_enfr: dry run done (nothing was downloaded or run)"; exit 0; fi
echo "wmt14_enfr: total $(( $(date +%s) - start )) s; table in $work/scores.md, report in $work/report"
