#!/usr/bin/env bash
# Penn Treebank language models: KenLM 5-gram + the neural LMs (LSTM 1-3 x 128, RM/RMR, Mogrifier),
# valid and test perplexity of each (N = words + one </s> per line), one markdown table.
#   recipes/ptb_lm/run.sh [--quick] [--epochs N] [--max-updates N] [--work DIR] [--models "lstm-1x128 rm+tM-g ..."]
#                         [--threads N] [--no-kenlm] [--corpus ptb|multi30k-fr|files]
#                         [--train-text F --valid-text F --test-text F]
# --corpus multi30k-fr: the same models on the target side of the translation experiments, the
# Moses-tokenized, cased French of Multi30k exactly as recipes/multi30k_enfr prepares it (train /
# val / test_2016_flickr as train / valid / test), given PTB's closed vocabulary: words seen once
# in train become <unk> everywhere (closed_vocab.py), so every model sees the same words, no OOV.
# --corpus files: the same models on any tokenized text, one sentence per line (--train-text, --valid-text,
# --test-text; --work required), with the same closed vocabulary step as multi30k-fr (the generic
# experiment recipe gives the target side of its own corpus this way).
# --quick: 1 epoch on the first 5,000 training sentences (KenLM on the same 5,000), full valid/test.
# KenLM reads PTB's literal <unk> as the ordinary word _unk_ (lmplz refuses <unk>); the neural LMs
# have <unk> as an ordinary vocabulary word. A model stream-trained (Mogrifier) is evaluated both as
# a stream (its training regime) and sentence by sentence (comparable with KenLM and the others).
# Data: $MT_DATA/ptb (default ../shared/data beside the repository). Reruns resume / reuse.
source "$(dirname "$0")/../lib/common.sh"
quick=0
epochs=""
max_updates=""
work=""
models="lstm-1x128 lstm-2x128 lstm-3x128 rm+tM-g rm-tM-l rmr-tM-g mogrifier lstm-1x135-stream"
threads=${THREADS:-2}
kenlm=1
corpus=ptb
train_text_in=""
valid_text_in=""
test_text_in=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --epochs) epochs=$2; shift ;;
    --max-updates) max_updates=$2; shift ;;
    --work) work=$2; shift ;;
    --models) models=$2; shift ;;
    --threads) threads=$2; shift ;;
    --no-kenlm) kenlm=0 ;;
    --corpus) corpus=$2; shift ;;
    --train-text) train_text_in=$2; shift ;;
    --valid-text) valid_text_in=$2; shift ;;
    --test-text) test_text_in=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
cfg=$here/config.yaml
suffix=$([ $quick = 1 ] && echo -quick || true)
data_flags=()
case "$corpus" in
  ptb)
    work=${work:-$root/work/ptb_lm${suffix/-/_}}
    ptb=$MT_DATA/ptb
    for f in train valid test; do
      [ -f "$ptb/ptb.$f.txt" ] || { echo "missing $ptb/ptb.$f.txt (set MT_DATA)" >&2; exit 1; }
    done
    train_file=$ptb/ptb.train.txt; valid_file=$ptb/ptb.valid.txt; test_file=$ptb/ptb.test.txt
    table_flags=() ;;
  multi30k-fr)
    work=${work:-$root/work/multi30k_fr_lm${suffix/-/_}}
    echo "== prepare Multi30k (recipes/multi30k_enfr/config.yaml:prepare) into $work/data"
    m30k=$root/recipes/multi30k_enfr/config.yaml:prepare
    "$py" -m nmt.cli.prepare --config "$m30k" --out-dir "$work/data"
    lm_valid=$(config_value "$m30k" dev_split)                  # the sets come from that config:
    lm_test=$(config_value "$m30k" test_splits | head -n 1)     # val and test_2016_flickr
    "$py" "$here/closed_vocab.py" --min-count 2 "$work/data/train.tok.fr" "$work/data/$lm_valid.tok.fr" \
      "$work/data/$lm_test.tok.fr" --out-dir "$work/text"
    train_file=$work/text/train.txt; valid_file=$work/text/valid.txt; test_file=$work/text/test.txt
    data_flags=(--train "$train_file" --valid "$valid_file" --test "$test_file")
    table_flags=(--no-paper) ;;
  files)
    [ -n "$work" ] && [ -n "$train_text_in" ] && [ -n "$valid_text_in" ] && [ -n "$test_text_in" ] || \
      { echo "ptb_lm/run.sh: --corpus files needs --work, --train-text, --valid-text and --test-text" >&2; exit 2; }
    for f in "$train_text_in" "$valid_text_in" "$test_text_in"; do
      [ -f "$f" ] || { echo "ptb_lm/run.sh: no such file: $f" >&2; exit 2; }
    done
    "$py" "$here/closed_vocab.py" --min-count 2 "$train_text_in" "$valid_text_in" "$test_text_in" \
      --out-dir "$work/text"
    train_file=$work/text/train.txt; valid_file=$work/text/valid.txt; test_file=$work/text/test.txt
    data_flags=(--train "$train_file" --valid "$valid_file" --test "$test_file")
    table_flags=(--no-paper) ;;
  *) echo "unknown --corpus $corpus (ptb, multi30k-fr or files)" >&2; exit 2 ;;
esac
mkdir -p "$work"
start=$(date +%s)
epoch_flag=()
[ -n "$epochs" ] && epoch_flag=(--max-epochs "$epochs")
[ -n "$max_updates" ] && epoch_flag+=(--max-updates "$max_updates")

if [ $kenlm = 1 ]; then
  echo "== KenLM 5-gram (kenlm$suffix)"
  mkdir -p "$work/kenlm"
  train_text=$train_file
  if [ $quick = 1 ]; then
    n=$(config_value "$cfg:_paper-quick" max_train_sentences)
    head -n "$n" "$train_file" > "$work/kenlm/train.txt"
    train_text=$work/kenlm/train.txt
  fi
  [ -f "$work/kenlm/ptb5.binary" ] || \
    "$bin/smt-kenlm" train --config "$cfg:kenlm$suffix" --text "$train_text" \
      --out-prefix "$work/kenlm/ptb5"
  for split in valid test; do
    split_file=$([ $split = valid ] && echo "$valid_file" || echo "$test_file")
    "$bin/smt-kenlm" eval --model "$work/kenlm/ptb5.binary" --text "$split_file" \
      --name "kenlm-5gram $split" --json-out "$work/kenlm/$split.json"
  done
fi

# the neural LMs, one after the other, then nmt-lm-eval of each on valid and test (+ sentences independent for a
# stream-trained model): one process (train_models.py), so that torch starts once
"$py" "$here/train_models.py" --config "$cfg" --suffix="$suffix" --work "$work" --models "$models" \
  --threads "$threads" -- ${epoch_flag[@]+"${epoch_flag[@]}"} ${data_flags[@]+"${data_flags[@]}"}

echo "== table"
kenlm_flag=()
[ $kenlm = 1 ] && kenlm_flag=(kenlm)
"$py" "$here/perplexity_table.py" "$work" ${table_flags[@]+"${table_flags[@]}"} --models ${kenlm_flag[@]+"${kenlm_flag[@]}"} $models | tee "$work/table.md"
end=$(date +%s)
echo "total $((end - start)) s; outputs in $work"
