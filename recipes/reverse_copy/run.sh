#!/usr/bin/env bash
# Reverse copy: LSTM vs Mogrifier encoder-decoders, cross-entropy vs sequence length (reverse_copy.py).
#   recipes/reverse_copy/run.sh [--quick] [--work DIR] [--threads N] [-- extra reverse_copy.py flags]
source "$(dirname "$0")/../lib/common.sh"
section=full
work=""
threads=${THREADS:-2}
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) section=quick ;;
    --work) work=$2; shift ;;
    --threads) threads=$2; shift ;;
    --) shift; extra=("$@"); break ;;
    *) unknown_option "$1" ;;
  esac
  shift
done
work=${work:-$root/work/reverse_copy$([ $section = quick ] && echo _quick || true)}
mapfile -t flags < <(config_value --flags "$here/config.yaml:$section")
start=$(date +%s)
"$py" "$here/reverse_copy.py" --out-dir "$work" --threads "$threads" "${flags[@]}" ${extra[@]+"${extra[@]}"}
echo "total $(( $(date +%s) - start )) s; outputs in $work (results.md, results.json, cross_entropy_vs_length.png)"
