#!/usr/bin/env bash
# One experiment, the whole table and its report, from one config file (EMS style: each step reused when done).
#   recipes/experiment/run.sh CONFIG.yaml [--quick] [--work DIR] [--mert-runs N] [--threads N] [--encdec DIR]
# CONFIG: e.g. recipes/experiment/multi30k.yaml (the full table), multi30k_demo.yaml (`make run`),
# plain_files.yaml (your own PREFIX.LANG files). The work is done by recipes/lib/experiment.sh (see there).
source "$(dirname "$0")/../lib/common.sh"
exec bash "$lib/experiment.sh" "$@"
