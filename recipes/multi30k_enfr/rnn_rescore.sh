#!/usr/bin/env bash
# Cho et al. (2014) §3.1 on Multi30k En→Fr: score every pair of the baseline's phrase table with the
# RNN Encoder–Decoder and add the score (and the WP feature) to the log-linear model.
#   phrase-based baseline (smt_baseline.sh, reused if done) → encoder–decoder (trained the paper's way on
#   the table's unique pairs, or --model DIR) → smt-rescore (p_rnn(e|f) and WP = exp(−unknown words)
#   appended, moses.ini written beside) → MERT on val for +RNN (WP weight fixed at 0) and +RNN+WP, seeds
#   1..N → decode test_2016_flickr / test_2017_flickr → sacreBLEU BLEU / chrF, mean ± sd over the runs,
#   beside the baseline's runs.
#   recipes/multi30k_enfr/rnn_rescore.sh [--quick] [--smt-work DIR] [--work DIR] [--model DIR]
#                                        [--mert-runs N] [--threads N] [--systems "rnn rnnwp"] [--tag TAG]
#                                        [--vocab K]
# --vocab K: the phrase model's vocabularies are the K most frequent words per side (default 3000; Multi30k's
#   ~11k words would leave no word unknown, while the paper's 15,000 of WMT'14 cover ~93% of the tokens and
#   WP counts the rest; 3,000 cover 96% of Multi30k's training tokens).
# --tag: appended to the system names (+RNN(TAG), +RNN+WP(TAG)), to tell models apart in one report.
# --model: an nmt-train folder with the prepare step's vocabularies (e.g. the sentence-trained model of
#   run.sh); default: train one on the phrase table (config.yaml:train_phrases, quick: train_phrases_quick).
# Outputs: WORK/phrase-table.rnn.gz (+ .moses.ini, .rescore.json), WORK/{rnn,rnnwp}.tune.R/, WORK/scores.md,
#   WORK/results/*.json (the smt-report layout). Reruns reuse finished steps.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=0
smt=""
work=""
model=""
runs=3
threads=2
systems="rnn rnnwp"
tag=""
vocab=3000
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --smt-work) smt=$2; shift ;;
    --work) work=$2; shift ;;
    --model) model=$2; shift ;;
    --mert-runs) runs=$2; shift ;;
    --threads) threads=$2; shift ;;
    --systems) systems=$2; shift ;;
    --tag) tag=$2; shift ;;
    --vocab) vocab=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export MT_DATA=${MT_DATA:-$root/../shared/data}
suffix=$([ $quick = 1 ] && echo _quick || true)
smt=${smt:-$root/work/multi30k_smt$suffix}
work=${work:-$root/work/multi30k_rnn$suffix}
bin=${BIN:-$root/.venv/bin}
cfg=$here/config.yaml
mkdir -p "$work/results"
work=$(cd "$work" && pwd)
start=$(date +%s)
qflag=$([ $quick = 1 ] && echo --quick || true)

echo "== phrase-based baseline ($smt)"
bash "$here/smt_baseline.sh" $qflag --work "$smt" --mert-runs "$runs" --threads "$threads"
t=$smt/text
if [ $quick = 1 ]; then
  tune_flags=(--nbest 20 --max-iterations 2 --restarts 5)
else
  tune_flags=(--nbest 100)
fi

if [ -z "$model" ]; then
  model=$work/phrase_model
  section=$([ $quick = 1 ] && echo train_phrases_quick || echo train_phrases)
  echo "== encoder–decoder on the phrase table's unique pairs ($section)"
  t0=$(date +%s)
  for l in en fr; do  # the 4 special symbols, then the K most frequent words
    awk -v k="$vocab" 'NR <= 4 && /^</ { print; next } n < k { print; n++ }' "$smt/data/vocab.$l.tsv" \
      > "$work/vocab.$l.tsv"
  done
  [ -f "$model/train.done" ] || { "$bin/nmt-train" --config "$cfg:$section" --data-dir "$smt/data" \
    --src-vocab "$work/vocab.en.tsv" --tgt-vocab "$work/vocab.fr.tsv" \
    --phrase-table "$smt/model/phrase-table.gz" --out-dir "$model" --threads "$threads" --resume \
    && touch "$model/train.done"; }
  echo "training the phrase model: $(( $(date +%s) - t0 )) s"
fi

echo "== smt-rescore: p_rnn(e|f) and WP for every pair of the table"
table=$work/phrase-table.rnn.gz
t0=$(date +%s)
[ -f "$table.moses.ini" ] || "$bin/smt-rescore" --table "$smt/model/phrase-table.gz" --model "$model" \
  --output "$table" --wp-column --resume --threads "$threads" --moses-ini "$smt/model/moses.ini"
echo "rescoring: $(( $(date +%s) - t0 )) s"
# +RNN: the same table with the WP weight at 0 and fixed (the 5-score system); +RNN+WP: all 6 scores tuned
"$bin/python" - "$table.moses.ini" "$work/rnn.moses.ini" <<'EOF'
import sys
from smt_features.moses_ini import read_moses_ini
cfg = read_moses_ini(sys.argv[1])
cfg.weights["TranslationModel0"][-1] = 0.0
cfg.write(sys.argv[2])
EOF
cp "$table.moses.ini" "$work/rnnwp.moses.ini"

for sys in $systems; do
  case $sys in
    rnn) name="+RNN${tag:+($tag)}"; fixed=(--fixed TranslationModel0_5) ;;
    rnnwp) name="+RNN+WP${tag:+($tag)}"; fixed=() ;;
    *) echo "unknown system $sys (rnn, rnnwp)" >&2; exit 2 ;;
  esac
  for r in $(seq 1 "$runs"); do
    tune=$work/$sys.tune.$r
    echo "== $name: MERT run $r (seed $r)"
    t2=$(date +%s)
    [ -f "$tune/moses.tuned.ini" ] || "$bin/smt-tune" --config "$work/$sys.moses.ini" --dev-src "$t/val.en" \
      --dev-ref "$t/val.fr" --work-dir "$tune" --seed "$r" --threads "$threads" --resume \
      ${fixed[@]+"${fixed[@]}"} "${tune_flags[@]}"
    echo "$name MERT run $r: $(( $(date +%s) - t2 )) s"
    for s in test_2016_flickr test_2017_flickr; do
      [ -f "$tune/$s.scores.json" ] && [ "$tune/$s.scores.json" -nt "$tune/moses.tuned.ini" ] && continue
      "$bin/smt-decode" --config "$tune/moses.tuned.ini" --input "$t/$s.en" --output "$tune/$s.tok.fr" \
        --threads "$threads" --progress false
      "$bin/nmt-evaluate" --hyp "$tune/$s.tok.fr" --detokenize fr --detok-out "$tune/$s.fr" \
        --ref "$t/$s.ref.fr" --name "$name run $r $s" --json "$tune/$s.scores.json"
    done
  done
done

echo "== summary over $runs MERT run(s)"
"$bin/python" - "$smt" "$work" "$runs" "$systems" "$tag" <<'EOF' | tee "$work/scores.md"
import json, statistics, sys
from pathlib import Path
smt, work, runs, systems = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
tag = f"({sys.argv[5]})" if sys.argv[5] else ""
names = {"rnn": f"+RNN{tag}", "rnnwp": f"+RNN+WP{tag}"}
rows = [("Baseline", smt, "tune")] + [(names[s], work, f"{s}.tune") for s in systems]
sd = lambda v: statistics.stdev(v) if len(v) > 1 else 0.0
print("| system | set | BLEU mean ± sd (min–max) | chrF2 mean ± sd | val BLEU (tok., last MERT decode) | runs |")
print("|---|---|---|---|---|---|")
sig = None
for name, base, prefix in rows:
    records = []
    for split in ("test_2016_flickr", "test_2017_flickr"):
        res = []
        for r in range(1, runs + 1):
            x = json.loads((base / f"{prefix}.{r}" / f"{split}.scores.json").read_text())
            res.append(x)
            records.append({"system": name, "set": split, "run": r, "bleu": x["bleu"], "chrf": x["chrf"],
                            "signature": x["bleu_signature"], "chrf_signature": x["chrf_signature"]})
        dev = []
        for r in range(1, runs + 1):
            its = json.loads((base / f"{prefix}.{r}" / "iterations.json").read_text())["iterations"]
            dev.append(its[-1]["decode"]["dev_bleu"])
        bleu, chrf = [x["bleu"] for x in res], [x["chrf"] for x in res]
        print(f"| {name} | {split} | {statistics.mean(bleu):.2f} ± {sd(bleu):.2f} ({min(bleu):.2f}–{max(bleu):.2f}) | "
              f"{statistics.mean(chrf):.2f} ± {sd(chrf):.2f} | {statistics.mean(dev):.2f} | {len(res)} |")
        sig = (res[0]["bleu_signature"], res[0]["chrf_signature"])
    slug = "".join(c if c.isalnum() else "_" for c in name.strip("+")).strip("_").lower()
    (work / "results" / f"{slug}.json").write_text(json.dumps(records, indent=1))
print(f"\nBLEU {sig[0]}; chrF {sig[1]}")
EOF
echo "total $(( $(date +%s) - start )) s; outputs in $work"
