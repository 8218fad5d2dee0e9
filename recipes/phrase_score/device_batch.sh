#!/usr/bin/env bash
# The phrase models of multi30k.yaml and news.yaml trained and their rows' tables rescored on one GPU machine in
# one bounded session (how the tables of docs/phrase_score.md were made), shipping back only the appended columns.
#   recipes/phrase_score/device_batch.sh CARRY_DIR OUT_DIR TRAIN_DEADLINE_S     (DEVICE=cpu: a dry run of the plumbing)
# ROWS_M30K / ROWS_NEWS: the rows to make (default: the config's); ROWS_NEWS=none: the Multi30k ablation only.
# CARRY_DIR holds NAME.tar (made on the CPU machine from /work/exp/NAME: the prepared vocabularies and dev set,
# moses.ini, the training pairs as `src ||| tgt ||| 1 ||| ||| counts` lines, xz, and the table filtered to the
# dev/test sources): they are unpacked at the same absolute paths (/work/exp/..., or $EXP_ROOT), so that every path in the
# written configs is the CPU machine's. Both ablations run at once (--device cuda, one process per model); at
# TRAIN_DEADLINE_S seconds a model still training is stopped (its best checkpoint so far is used; the model's
# folder gets `stopped_at_deadline`), then the rows are rescored. OUT_DIR gets NAME.tar per ablation: each row's
# appended columns (table_columns.py extract), its .moses.ini and .rescore.json, the models' logs, configs and
# histories, and the logs. No checkpoint leaves the machine (each is 27–66 MiB).
export PYTHON=python3 BIN=/tmp/rnnsmt-bin PYTHONUNBUFFERED=1
source "$(dirname "$0")/../lib/common.sh"
set +e   # this script carries on past a failed part, and says so
shopt -s nullglob
[ $# = 3 ] || { echo "usage: device_batch.sh CARRY_DIR OUT_DIR TRAIN_DEADLINE_S" >&2; exit 2; }
carry=$(cd "$1" && pwd); out=$2; deadline=$3
cd "$root"
export PYTHONPATH=$root
t_start=$SECONDS
exp=${EXP_ROOT:-/work/exp}   # EXP_ROOT: another root for a dry run (the configs then name paths that do not exist)
mkdir -p "$BIN" "$out"
python3 recipes/phrase_score/device_tools.py bin "$BIN"   # console scripts: python3 -c of each entry point
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
mkdir -p $exp
for tarball in "$carry"/*.tar; do
  tar -C $exp -xf "$tarball"
done
for name in m30k news; do  # the training pairs as the gzip table nmt-train reads
  [ -e "$exp/$name/smt/model/phrase-table.slim.xz" ] || continue
  python3 recipes/phrase_score/device_tools.py xz-to-gz "$exp/$name/smt/model/phrase-table.slim.xz" \
    "$exp/$name/smt/model/phrase-table.gz"
done
echo "unpacked in $((SECONDS - t_start)) s"
ablation() {  # ablation CONFIG NAME JOBS ROWS: models, then rows (--stop-after rescore); ROWS empty: the config's
  local cfg=$1 name=$2 jobs=$3 rows=$4 row
  [ "$rows" != none ] || return 0
  [ -n "$rows" ] || rows=$(python3 recipes/lib/config_value.py "$cfg:ablation" rows)
  for row in $rows; do  # the filtered table, made on the CPU
    mkdir -p "$exp/ps_$name/$row"
    cp "$exp/filt/$name.filtered.gz" "$exp/ps_$name/$row/phrase-table.filtered.gz"
  done
  bash recipes/phrase_score/run.sh "$cfg" --experiment-work "$exp/$name" --work "$exp/ps_$name" \
    --device "${DEVICE:-cuda}" --jobs "$jobs" --threads 1 --stop-after rescore --rows "$rows"
}
ablation recipes/phrase_score/multi30k.yaml m30k "${JOBS_M30K:-8}" "${ROWS_M30K:-}" > "$out/m30k.log" 2>&1 &
p1=$!
ablation recipes/phrase_score/news.yaml news "${JOBS_NEWS:-4}" "${ROWS_NEWS:-}" > "$out/news.log" 2>&1 &
p2=$!
# the deadline: stop the trainers still running (their checkpoints are atomic), mark them, rescore the rows
while [ $((SECONDS - t_start)) -lt "$deadline" ] && { kill -0 $p1 2> /dev/null || kill -0 $p2 2> /dev/null; }; do
  sleep 5
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader >> "$out/gpu_util.log"
done
if pgrep -f nmt.cli.train > /dev/null; then
  echo "deadline at $((SECONDS - t_start)) s: stopping $(pgrep -fc nmt.cli.train) trainer(s)"
  pkill -TERM -f "phrase_score/run.sh"; pkill -TERM -f "lib/rnn_rescore.sh"   # no further model is started
  pkill -TERM -f nmt.cli.train; sleep 10; pkill -KILL -f nmt.cli.train
  wait $p1 $p2
  for name in m30k news; do  # every model of the config is marked: the second pass must not train again
    cfg=recipes/phrase_score/$([ $name = m30k ] && echo multi30k || echo news).yaml
    for m in $(python3 recipes/phrase_score/device_tools.py models "$cfg"); do
      d=$exp/ps_$name/models/$m
      mkdir -p "$d"
      [ -e "$d/train.done" ] || { echo "stopped at the deadline, $((SECONDS - t_start)) s" > "$d/stopped_at_deadline"; touch "$d/train.done"; }
    done
  done
  ablation recipes/phrase_score/multi30k.yaml m30k "${JOBS_M30K:-8}" "${ROWS_M30K:-}" >> "$out/m30k.log" 2>&1 &
  p1=$!
  ablation recipes/phrase_score/news.yaml news "${JOBS_NEWS:-4}" "${ROWS_NEWS:-}" >> "$out/news.log" 2>&1 &
  p2=$!
fi
wait $p1; echo "m30k: exit $?"
wait $p2; echo "news: exit $?"
echo "trained and rescored in $((SECONDS - t_start)) s"
for name in m30k news; do
  w=$exp/ps_$name
  for t in "$w"/*/phrase-table.rnn.gz; do
    [ -e "$t" ] || continue
    k=$(python3 recipes/phrase_score/device_tools.py columns "$t.rescore.json")
    python3 recipes/phrase_score/table_columns.py extract "$t" "$k" "$(dirname "$t")/columns.xz"
  done
  (cd $exp && tar -cf "$out/$name.tar" --exclude='*.pt' --exclude='*.gz' --exclude='*.tsv' "ps_$name")
done
for f in "$out"/*.tar; do  # the return limit is 16 MiB a file: larger tars go back in parts (cat them together)
  [ "$(stat -c %s "$f")" -le 16000000 ] || { split -b 15000000 -d "$f" "$f.part"; rm "$f"; }
done
ls -la "$out"; du -sh "$out"
echo "done in $((SECONDS - t_start)) s"
