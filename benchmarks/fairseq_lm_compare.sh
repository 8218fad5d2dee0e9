#!/usr/bin/env bash
# nmt-lm-train vs fairseq-train (through nmt/fairseq_plugin) at one configuration, in one run:
# the Mogrifier LM (mogrifier-1x128: d = 128, r = 5 full rank) on PTB for one epoch,
# 16 rows x 35-token blocks, each block from a zero state (fairseq's language_modeling with
# --sample-break-mode none; ours: --regime stream --carry-state false), Adam lr 0.002
# (betas 0.9/0.999), gradient norm clipped at 0.25, loss = mean nats per token, one thread each.
# Prints the validation perplexity of both (N = words + one </s> per line, blocks of 35 from a
# zero state, as fairseq-eval-lm scores) and the training tokens/s of both, with the ratio.
#   benchmarks/fairseq_lm_compare.sh [WORK_DIR]     (needs the fairseq extra, which `make setup` installs)
# Data: $MT_DATA/ptb (default ../shared/data beside the repository).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/work/fairseq_lm_compare}
export MT_DATA=${MT_DATA:-$root/../shared/data}
ptb=$MT_DATA/ptb
bin=$root/.venv/bin
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
"$bin/python" -c "import fairseq" 2>/dev/null || {
  echo "fairseq is not installed (the optional extra): run \`make setup\` (scripts/setup.sh), see docs/scale_out.md" >&2; exit 2; }
mkdir -p "$work"
rm -rf "$work/nmt" "$work/fairseq"
echo "== load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== nmt-lm-train"
t0=$(date +%s)
"$bin/python" -m nmt.cli.lm_train --arch mogrifier-1x128 --corpus ptb --regime stream --carry-state false \
  --batch-size 16 --bptt 35 --optimizer adam --lr 0.002 --adam-beta1 0.9 --adam-beta2 0.999 \
  --clip-norm 0.25 --loss-norm token --lr-schedule constant --max-epochs 1 --patience 0 \
  --threads 1 --seed 1 --log-every 200 --out-dir "$work/nmt" > "$work/nmt.log" 2>&1
t1=$(date +%s)
"$bin/python" -m nmt.cli.lm_eval --model "$work/nmt" --split valid --regime stream --block 35 --threads 1 \
  --name "nmt-lm-train mogrifier-1x128 valid" --json "$work/nmt/valid.json" 2>&1 | tee -a "$work/nmt.log"
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== fairseq-train"
t2=$(date +%s)
[ -f "$work/bin/dict.txt" ] || "$bin/fairseq-preprocess" --only-source --trainpref "$ptb/ptb.train.txt" \
  --validpref "$ptb/ptb.valid.txt" --destdir "$work/bin" --workers 1 > "$work/preprocess.log" 2>&1
"$bin/fairseq-train" "$work/bin" --user-dir "$root/nmt/fairseq_plugin" --task language_modeling \
  --arch mogrifier_lm_1x128 --tokens-per-sample 35 --sample-break-mode none --batch-size 16 \
  --optimizer adam --adam-betas '(0.9, 0.999)' --lr 0.002 --clip-norm 0.25 --max-epoch 1 --cpu \
  --num-workers 0 --seed 1 --save-dir "$work/fairseq" --log-format simple --log-interval 200 \
  --no-progress-bar > "$work/fairseq.log" 2>&1
t3=$(date +%s)
echo "== load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

"$bin/python" - "$work" "$((t1 - t0))" "$((t3 - t2))" <<'EOF'
import json, re, sys
from pathlib import Path
work, nmt_wall, fs_wall = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ours = json.loads((work / "nmt" / "summary.json").read_text())
ours_eval = json.loads((work / "nmt" / "valid.json").read_text())
log = (work / "fairseq.log").read_text()
train = re.findall(r"\| INFO \| train \| epoch 001 \|.*", log)
valid = re.findall(r"\| INFO \| valid \| epoch 001 \|.*", log)
if not train or not valid:
    sys.exit(f"fairseq log {work / 'fairseq.log'} has no epoch summary")
field = lambda line, key: float(re.search(rf"\| {key} ([0-9.]+)", line).group(1))
fs_wps, fs_loss_bits = field(train[-1], "wps"), field(valid[-1], "loss")
ours_rate = ours["this_run"]["train_tokens_per_s"]
params = re.search(r"num\. (?:shared )?model params: ([0-9,]+)", log)
fs_params = params.group(1) if params else "?"
print()
print("| trainer | parameters | updates | valid ppl (N) | train tokens/s | wall s (train + eval) |")
print("|---|---|---|---|---|---|")
print(f"| nmt-lm-train | {ours['num_parameters']:,} | {ours['updates']:,} | {ours_eval['ppl']:.2f} "
      f"({ours_eval['num_tokens']:,}) | {ours_rate:,.0f} | {nmt_wall} |")
print(f"| fairseq-train + plugin | {fs_params} (dictionary padded to x8) | {int(field(train[-1], 'num_updates')):,} | "
      f"{2 ** fs_loss_bits:.2f} (same text, fairseq's own count) | {fs_wps:,.0f} | {fs_wall} |")
print(f"\nspeed ratio nmt-lm-train / fairseq-train: {ours_rate / fs_wps:.2f}x "
      f"(dev ppl of nmt-lm-train's own validation: {ours['best_dev_ppl']:.2f})")
EOF
