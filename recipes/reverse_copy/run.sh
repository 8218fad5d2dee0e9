#!/usr/bin/env bash
# Reverse copy: LSTM vs Mogrifier encoder-decoders, cross-entropy vs sequence length (reverse_copy.py).
#   recipes/reverse_copy/run.sh [--quick] [--work DIR] [--threads N] [-- extra reverse_copy.py flags]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
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
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
py=${PYTHON:-$root/.venv/bin/python}
work=${work:-$root/work/reverse_copy$([ $section = quick ] && echo _quick || true)}
mapfile -t flags < <("$py" - "$here/config.yaml" "$section" <<'EOF2'
import sys, yaml
for key, value in yaml.safe_load(open(sys.argv[1]))[sys.argv[2]].items():
    flag = "--" + key.replace("_", "-")
    if value is True:
        print(flag)
    elif isinstance(value, list):
        print(flag); [print(v) for v in value]
    elif value is not False:
        print(flag); print(value)
EOF2
)
start=$(date +%s)
"$py" "$here/reverse_copy.py" --out-dir "$work" --threads "$threads" "${flags[@]}" ${extra[@]+"${extra[@]}"}
echo "total $(( $(date +%s) - start )) s; outputs in $work (results.md, results.json, cross_entropy_vs_length.png)"
