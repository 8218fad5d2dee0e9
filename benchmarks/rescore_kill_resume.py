"""kill -9 mid-rescoring then ``--resume``, and ``--shard`` outputs concatenated, against one uninterrupted run.

    .venv/bin/python benchmarks/rescore_kill_resume.py --table work/multi30k_smt/model/phrase-table.gz \\
        --model work/multi30k_rnn/phrase_model --lines 100000 [--shards 2] [--threads 1]

Takes the first ``--lines`` lines of the table and runs ``smt-rescore`` on them three ways, with the same
settings (``--window``, ``--chunk-lines``, ``--wp-column``):

1. uninterrupted;
2. with ``--resume``, killed with SIGKILL once ``--kill-after-chunks`` chunks are committed (mid-chunk: the
   kill comes ``--kill-delay`` seconds after that), then the same command again;
3. ``--shard i/N`` for every i, the parts concatenated with ``cat``.

Prints the sha256 of each result, the pairs scored by the resumed run and the chunks it reused, and exits
1 if any differs from the uninterrupted run.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--lines", type=int, default=100000)
    ap.add_argument("--window", type=int, default=5000)
    ap.add_argument("--chunk-lines", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--kill-after-chunks", type=int, default=4)
    ap.add_argument("--kill-delay", type=float, default=2.0)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args(argv)

    work = Path(args.workdir or tempfile.mkdtemp(prefix="rescore_kill_"))
    work.mkdir(parents=True, exist_ok=True)
    table = work / "table.gz"
    with gzip.open(args.table, "rb") as src, gzip.open(table, "wb") as dst:
        for i, line in enumerate(src):
            if i >= args.lines:
                break
            dst.write(line)
    common = ["--table", str(table), "--model", args.model, "--window", str(args.window), "--chunk-lines",
              str(args.chunk_lines), "--wp-column", "--threads", str(args.threads), "--progress", "false"]
    rescore = [str(BIN / "smt-rescore")]

    t0 = time.perf_counter()
    single = work / "single.gz"
    subprocess.run([*rescore, *common, "--output", str(single)], check=True, capture_output=True)
    t_single = time.perf_counter() - t0

    resumed = work / "resumed.gz"
    parts = Path(f"{resumed}.parts")
    proc = subprocess.Popen([*rescore, *common, "--output", str(resumed), "--resume"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while proc.poll() is None and len(list(parts.glob("chunk-*.json"))) < args.kill_after_chunks:
        time.sleep(0.05)
    time.sleep(args.kill_delay)
    killed_mid_run = proc.poll() is None
    if killed_mid_run:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    committed = len(list(parts.glob("chunk-*.json")))
    leftovers = sorted(p.name for p in parts.glob("*") if not p.name.startswith(("chunk-", "progress")))
    subprocess.run([*rescore, *common, "--output", str(resumed), "--resume"], check=True, capture_output=True)
    summary = json.loads(Path(f"{resumed}.rescore.json").read_text(encoding="utf-8"))["stats"]

    shard_parts = []
    for i in range(args.shards):
        part = work / f"shard{i}.gz"
        subprocess.run([*rescore, *common, "--output", str(part), "--shard", f"{i}/{args.shards}"], check=True,
                       capture_output=True)
        shard_parts.append(part)
    merged = work / "shards.gz"
    with open(merged, "wb") as out:
        subprocess.run(["cat", *map(str, shard_parts)], stdout=out, check=True)

    ref = sha256(single)
    rows = [("uninterrupted", single), ("kill -9 + --resume", resumed), (f"{args.shards} shards, cat", merged)]
    print(f"table: first {args.lines:,} lines of {args.table}; model {args.model}; window {args.window}, "
          f"chunk {args.chunk_lines} lines, {args.threads} thread(s); uninterrupted run {t_single:.1f} s")
    print(f"killed with SIGKILL while running: {killed_mid_run}; chunks committed before the kill: {committed} of "
          f"{-(-args.lines // args.chunk_lines)}; temp files left by the kill: {leftovers or 'none'}")
    print(f"resumed run: pairs scored {summary['pairs_this_run']:,}, chunks reused {summary['chunks_reused']}, "
          f"pairs written {summary['pairs']:,}")
    ok = True
    for name, path in rows:
        digest = sha256(path)
        same = digest == ref
        ok &= same
        print(f"{name:22s} sha256 {digest}  {'identical' if same else 'DIFFERENT'}  ({path.stat().st_size:,} bytes)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
