#!/usr/bin/env bash
# Issue 15's ablation of the phrase-based core: the Baseline row of an experiment config with and without
# each of Moses's lexicalized reordering (msd-bidirectional-fe) and truecasing, N MERT runs each.
#   benchmarks/smt_core_ablation.sh [--config YAML] [--work DIR] [--mert-runs N] [--threads N] [--quick]
#                                   [--variants "distance lr tc lr+tc"]
# --config: the experiment config to vary (default recipes/experiment/multi30k.yaml); each variant is that
#   file with `experiment.systems: [Baseline]`, `experiment.truecase` and `smt.reordering` set, written to
#   WORK/configs/VARIANT.yaml and run by recipes/lib/experiment.sh into WORK/VARIANT (steps reused when done).
# Variants: distance (distance reordering, case kept: the old core), lr (+ lexicalized reordering),
#   tc (+ truecasing), lr+tc (both: Moses's best configuration in ../shared/docs/TARGETS.md).
# Prints each variant's scores.md and MERT wall times, and writes WORK/ablation.md.
source "$(dirname "$0")/../recipes/lib/common.sh"
cfg=$root/recipes/experiment/multi30k.yaml
work=""
runs=3
threads=2
quick=0
variants="distance lr tc lr+tc"
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --config) cfg=$2; shift ;;
    --variants) variants=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
quick_suffix
work=$(abs_dir "${work:-$root/work/smt_core_ablation$suffix}")
mkdir -p "$work/configs"
qflag=$(quick_flag $quick)
for v in $variants; do
  case $v in
    distance) lr=""; tc=false ;;
    lr) lr=msd-bidirectional-fe; tc=false ;;
    tc) lr=""; tc=true ;;
    lr+tc) lr=msd-bidirectional-fe; tc=true ;;
    *) echo "smt_core_ablation.sh: unknown variant '$v' (distance, lr, tc, lr+tc)" >&2; exit 2 ;;
  esac
  # the variant's config: the base config with only these keys changed (in every smt section)
  "$py" - "$cfg" "$work/configs/$v.yaml" "$lr" "$tc" <<'EOF'
import sys, yaml
src, dst, reordering, truecase = sys.argv[1:]
with open(src, encoding="utf-8") as fh:
    cfg = yaml.safe_load(fh)
cfg["experiment"]["systems"] = ["Baseline"]
cfg["experiment"]["truecase"] = truecase == "true"
for name in ("smt", "smt_quick"):
    if name in cfg:
        cfg[name]["reordering"] = reordering or None
with open(dst + ".part", "w", encoding="utf-8") as fh:
    yaml.safe_dump(cfg, fh, allow_unicode=True, sort_keys=False)
import os
os.replace(dst + ".part", dst)
EOF
  echo "== variant $v (reordering: ${lr:-distance}, truecase: $tc)"
    bash "$lib/experiment.sh" "$work/configs/$v.yaml" $qflag --work "$work/$v" --mert-runs "$runs" \
    --threads "$threads" 2>&1 | tee "$work/$v.log"
done
{
  echo "# SMT core ablation: $(basename "$cfg"), $runs MERT run(s), $threads thread(s)"
  for v in $variants; do
    echo
    echo "## $v"
    echo
    cat "$work/$v/scores.md"
    echo
    grep -h "MERT run [0-9]*: [0-9]* s" "$work/$v.log" 2> /dev/null || true
  done
} > "$work/ablation.md"
cat "$work/ablation.md"
