#!/usr/bin/env bash
# Penn Treebank language models: KenLM 5-gram + the neural LMs (LSTM 1-3 x 128, RM/RMR, Mogrifier),
# valid and test perplexity of each (N = words + one </s> per line), one markdown table.
#   recipes/ptb_lm/run.sh [--quick] [--epochs N] [--work DIR] [--models "lstm-1x128 rm+tM-g ..."]
#                         [--threads N] [--no-kenlm]
# --quick: 1 epoch on the first 5,000 training sentences (KenLM on the same 5,000), full valid/test.
# KenLM reads PTB's literal <unk> as the ordinary word _unk_ (lmplz refuses <unk>); the neural LMs
# have <unk> as an ordinary vocabulary word. A model stream-trained (Mogrifier) is evaluated both as
# a stream (its training regime) and sentence by sentence (comparable with KenLM and the others).
# Data: $MT_DATA/ptb (default ../shared/data beside the repository). Reruns resume / reuse.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=0
epochs=""
work=""
models="lstm-1x128 lstm-2x128 lstm-3x128 rm+tM-g rm-tM-l rmr-tM-g mogrifier"
threads=${THREADS:-2}
kenlm=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --epochs) epochs=$2; shift ;;
    --work) work=$2; shift ;;
    --models) models=$2; shift ;;
    --threads) threads=$2; shift ;;
    --no-kenlm) kenlm=0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export MT_DATA=${MT_DATA:-$root/../shared/data}
py=${PYTHON:-$root/.venv/bin/python}
cfg=$here/config.yaml
suffix=$([ $quick = 1 ] && echo -quick || true)
work=${work:-$root/work/ptb_lm${suffix/-/_}}
ptb=$MT_DATA/ptb
for f in train valid test; do
  [ -f "$ptb/ptb.$f.txt" ] || { echo "missing $ptb/ptb.$f.txt (set MT_DATA)" >&2; exit 1; }
done
mkdir -p "$work"
start=$(date +%s)
epoch_flag=()
[ -n "$epochs" ] && epoch_flag=(--max-epochs "$epochs")

if [ $kenlm = 1 ]; then
  echo "== KenLM 5-gram (kenlm$suffix)"
  mkdir -p "$work/kenlm"
  train_text=$ptb/ptb.train.txt
  if [ $quick = 1 ]; then
    n=$("$py" -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['_paper-quick']['max_train_sentences'])" "$cfg")
    head -n "$n" "$ptb/ptb.train.txt" > "$work/kenlm/train.txt"
    train_text=$work/kenlm/train.txt
  fi
  [ -f "$work/kenlm/ptb5.binary" ] || \
    "$py" -m smt_features.kenlm_lm --config "$cfg:kenlm$suffix" train --text "$train_text" \
      --out-prefix "$work/kenlm/ptb5"
  for split in valid test; do
    "$py" -m smt_features.kenlm_lm eval --model "$work/kenlm/ptb5.binary" --text "$ptb/ptb.$split.txt" \
      --name "kenlm-5gram $split" --json-out "$work/kenlm/$split.json"
  done
fi

for m in $models; do
  echo "== $m$suffix"
  "$py" -m nmt.cli.lm_train --config "$cfg:$m$suffix" --out-dir "$work/$m" --resume --threads "$threads" \
    ${epoch_flag[@]+"${epoch_flag[@]}"}
  regime=$("$py" -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['data']['regime'])" \
           "$work/$m/config.yaml")
  for split in valid test; do
    "$py" -m nmt.cli.lm_eval --model "$work/$m" --split "$split" --name "$m $split" --threads "$threads" \
      --json "$work/$m/$split.json"
    if [ "$regime" = stream ]; then
      "$py" -m nmt.cli.lm_eval --model "$work/$m" --split "$split" --regime sentence --threads "$threads" \
        --name "$m $split (sentences independent)" --json "$work/$m/$split.sentence.json"
    fi
  done
done

echo "== table"
kenlm_flag=()
[ $kenlm = 1 ] && kenlm_flag=(kenlm)
"$py" "$here/perplexity_table.py" "$work" --models ${kenlm_flag[@]+"${kenlm_flag[@]}"} $models | tee "$work/table.md"
end=$(date +%s)
echo "total $((end - start)) s; outputs in $work"
