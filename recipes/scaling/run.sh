#!/usr/bin/env bash
# Peak RSS and wall time of every pipeline stage at several corpus sizes (docs/scaling.md).
#   recipes/scaling/run.sh --work DIR [--quick] [--threads N] [--sizes 29k,216k,1M,3M] [--stages a,b,...]
# Makes the combined real corpus (recipes/scaling/combine.sh → WORK/combined), then runs
# benchmarks/scaling.py: WORK/SIZE/STAGE/ (cmd.txt, log.txt, time.txt), WORK/scaling.{json,md}.
# Defaults from config.yaml (section scaling, --quick: scaling_quick). Reruns skip measured stages.
source "$(dirname "$0")/../lib/common.sh"
quick=0
work=""
threads=2
sizes=""
stages=""
while [ $# -gt 0 ]; do
  if common_option "$@"; then shift "$taken"; continue; fi
  case "$1" in
    --sizes | --stages) [ $# -ge 2 ] || { echo "option $1 needs a value" >&2; exit 2; } ;;&
    --sizes) sizes=$2; shift ;;
    --stages) stages=$2; shift ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
[ -n "$work" ] || { echo "run.sh: give --work DIR" >&2; exit 2; }
config_load "$here/config.yaml"
cfg=$here/config.yaml:scaling$([ $quick = 1 ] && echo _quick || true)
sizes=${sizes:-$(config_value "$cfg" sizes)}
stages=${stages:-$(config_value "$cfg" stages)}
work=$(abs_dir "$work")
"$here/combine.sh" "$work/combined"
run_cmd "$py" "$root/benchmarks/scaling.py" --out "$work" --combined "$work/combined" --sizes "$sizes" \
  --stages "$stages" --threads "$threads" --stage-timeout "$(config_value "$cfg" stage_timeout)" \
  --kenlm-memory "$(config_value "$cfg" kenlm_memory)" --nmt-updates "$(config_value "$cfg" nmt_updates)"
